#!/bin/sh
# check.sh -- cellar-sim (the real engine, through the policy seam) against
# reference.py (independent Python versions of the published algorithms)
# on synthetic traces: prints both miss ratios and fails when any pair is
# more than half a percentage point apart.  Not part of `make test` (the
# Python side takes a few minutes).
#
#   make sim && sh bench/sim/check.sh            (SIM=path/to/cellar-sim to override)
#
# The adaptive `wtinylfu` is left out by default: Caffeine's hill climber
# is a random walk on a stationary trace, and a change as small as when
# its first sample starts moves small caches' miss ratios by a point or
# more (two faithful implementations differ there, not the algorithm).
# POLICIES=wtinylfu SIZES=5000 checks it where it settles.
set -eu
SIM=${SIM:-build/cellar-sim}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
POLICIES=${POLICIES:-lru-exact,fifo,clock,clock2,sieve,lfu,s3fifo,2q,arc,wtinylfu-fixed,lirs,sampled,sampled-lfu}
SIZES=${SIZES:-100,1000,5000}
HERE=$(dirname "$0")
status=0
for spec in zipf:alpha=0.9,objects=20000,requests=300000 \
            zipf:alpha=0.6,objects=20000,requests=300000 \
            scan:alpha=0.9,objects=20000,requests=300000,every=50000,length=10000 \
            shift:alpha=0.9,objects=20000,requests=300000,every=60000; do
    "$SIM" -g "$spec" -s 7 --dump "$DIR/t.txt"
    "$SIM" -t "$DIR/t.txt" -F txt -c "$SIZES" -p "$POLICIES" --no-opt -q --csv "$DIR/sim.csv" >/dev/null
    python3 "$HERE/reference.py" "$DIR/t.txt" "$SIZES" "$POLICIES" >"$DIR/ref.csv"
    echo "== $spec"
    python3 - "$DIR/sim.csv" "$DIR/ref.csv" <<'PY' || status=1
import csv, sys
sim = {(r['policy'], int(r['capacity'])): float(r['miss_ratio']) for r in csv.DictReader(open(sys.argv[1]))}
bad = 0
print('%-10s %8s %10s %10s %8s' % ('policy', 'cache', 'cellar', 'reference', 'diff pp'))
for line in open(sys.argv[2]):
    p, c, mr = line.strip().split(',')
    s = sim[(p, int(c))]
    d = 100 * (s - float(mr))
    bad += abs(d) > 0.5
    print('%-10s %8s %10.4f %10.4f %+8.3f%s' % (p, c, s, float(mr), d, '  <-- over 0.5' if abs(d) > 0.5 else ''))
sys.exit(1 if bad else 0)
PY
done
exit $status
