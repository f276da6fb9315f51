#!/bin/sh
# libfuzzer.sh -- make fuzz's runs of the drivers built as libFuzzer targets.
#
#   libfuzzer.sh run BIN SECONDS DIR    fuzz BIN for about SECONDS
#   libfuzzer.sh table DIR NAME...      the results of the runs, one row a driver
#
# A run seeds DIR/corpus/NAME from the driver's own corpus (-write_corpus;
# what libFuzzer adds there is kept for the next run) and its words as a
# dictionary (-write_dict), then runs libFuzzer in fork mode, so that a crash,
# a timeout or running out of memory is counted and the run goes on; every
# input that fails in this run is written to DIR/crashes/NAME/ (crash-*,
# leak-*, timeout-*, oom-*), the log to DIR/logs/NAME.log, and one line to
# DIR/results/NAME: executions, edges covered (libFuzzer's cov), features,
# corpus entries, oom/timeout/crash counts and the failing inputs written.
#
# A failing input replays with BIN FILE: libFuzzer runs it once and shows the
# report.  Once understood, it becomes an entry of the driver's corpus (or a row
# of its unit test), so that make test replays it from then on.
set -u

case "${1:-}" in
run)
    bin=$2 seconds=$3 dir=$4
    name=$(basename "$bin")
    corpus=$dir/corpus/$name crashes=$dir/crashes/$name
    rm -rf "$crashes"               # this run's failing inputs only
    mkdir -p "$corpus" "$crashes" "$dir/logs" "$dir/dict" "$dir/results"
    log=$dir/logs/$name.log dict=$dir/dict/$name.dict
    if ! "$bin" -write_corpus="$corpus" -write_dict="$dict" >"$log" 2>&1; then
        echo "$name: cannot write its corpus (see $log)" >&2
        echo "$name - - - - - -" >"$dir/results/$name"
        exit 1
    fi
    dictarg=
    [ -s "$dict" ] && dictarg=-dict=$dict
    echo "== $name: ${seconds}s"
    # The wall clock is bounded besides: libFuzzer checks its limit between jobs.
    # shellcheck disable=SC2086   # no dictionary: no argument
    timeout -k 10 $((seconds + seconds / 2 + 30)) "$bin" -fork=1 -ignore_crashes=1 \
        -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dictarg "$corpus" >>"$log" 2>&1
    rc=$?
    # "#N: cov: C ft: F corp: K exec/s E oom/timeout/crash: O/T/X time: Ss job: J ..."
    last=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1)
    runs=$(echo "$last" | sed -n 's/^#\([0-9]*\):.*/\1/p')
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
    otc=$(echo "$last" | sed -n 's/.* oom\/timeout\/crash: \([0-9/]*\).*/\1/p')
    files=$(find "$crashes" -type f | wc -l)
    echo "${name} ${runs:--} ${cov:--} ${ft:--} ${corp:--} ${otc:--} ${files}" >"$dir/results/$name"
    echo "== $name: done (exit $rc; ${runs:-?} executions, cov ${cov:-?}, failing inputs $files)"
    ;;
table)
    dir=$2
    shift 2
    printf '\n%-16s %12s %7s %7s %7s %16s %8s\n' driver executions edges features corpus \
        oom/timeout/crash written
    bad=0
    for name in "$@"; do
        if [ -f "$dir/results/$name" ]; then
            # shellcheck disable=SC2046
            set -- $(cat "$dir/results/$name")
            printf '%-16s %12s %7s %7s %7s %16s %8s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7"
            [ "$7" != 0 ] && bad=1
        else
            printf '%-16s %12s\n' "$name" "(no result)"
            bad=1
        fi
    done
    echo
    echo "failing inputs: $dir/crashes/<driver>/; logs: $dir/logs/; corpus: $dir/corpus/"
    exit $bad
    ;;
*)
    sed -n '2,18p' "$0" >&2
    exit 2
    ;;
esac
