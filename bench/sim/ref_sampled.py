#!/usr/bin/env python3
"""Reference simulators for Redis-style sampled eviction (cellar's
`sampled` and `sampled-lfu`), written from the rules in
../../../shared/reference/eviction.md ("Redis approximated LRU / LFU") with
plain Python containers and nothing shared with evict_sampled.c.

Object-count cache, every request a GET with demand fill.  Each eviction
samples 5 distinct resident keys (random.sample; all of them when there
are 5 or fewer); the pool keeps up to 16 candidates by ascending score: a
sample already pooled is skipped, else it goes in when the pool has room
or when its score beats the pool's smallest (which then drops out), to the
left of equal scores; the pool's right end is evicted.  As in cellar (see
evict_sampled.c for why this differs from Redis), the pooled keys are
rescored, keeping the order of ties, at the start of every round.

Scores:
  sampled      idle time in accesses: a clock ticks at every insert and
               hit, a key remembers its tick, score = clock - tick.
  sampled-lfu  255 - decayed counter.  A new key's counter is 5; a hit
               decays it, then adds one with probability
               1 / ((counter - 5, at least 0) * 10 + 1) below 255; decay
               subtracts one per whole clock minute (second // 60) since
               the key's last access (insert or hit).

Time, for the LFU decay, is cellar-sim's for a one-id-per-line trace:
request i (from 0) happens at engine second t0 + i + 1 (t0 = 62, the
engine's clock offset; the trace's line number is its second).  cellar
scores at eviction with the last time its queue saw, the previous
request's; so does this.

The policies are randomised, so cellar-sim and this agree on miss ratio
within noise, not request by request; `runs` averages over seeds.

    ref_sampled.py TRACE.txt SIZES [RUNS]     (one object id per line)
"""
import random
import sys

SAMPLES = 5
POOL = 16
LFU_INIT = 5
LOG_FACTOR = 10
DECAY_MIN = 1


def _run(tr, C, lfu, seed, t0=62):
    rng = random.Random(seed)
    keys = []           # resident keys, for sampling
    where = {}          # key -> index in keys
    val = {}            # sampled: tick of last access; sampled-lfu: counter
    last = {}           # sampled-lfu: second of last access
    pool = []           # [key, score], ascending score
    clock = 0
    seen = t0           # latest time the queue saw
    miss = 0

    def decayed(k, now):
        periods = (now // 60 - last[k] // 60) // DECAY_MIN
        return max(0, val[k] - periods)

    def score(k):
        return 255 - decayed(k, seen) if lfu else clock - val[k]

    for i, k in enumerate(tr):
        now = t0 + i + 1
        if k in where:
            if lfu:
                c = decayed(k, now)
                if c < 255 and rng.random() < 1.0 / (max(0, c - LFU_INIT) * LOG_FACTOR + 1):
                    c += 1
                val[k] = c
                last[k] = now
            else:
                clock += 1
                val[k] = clock
            seen = now
            continue
        miss += 1
        if len(keys) >= C:
            pool = sorted(([p, score(p)] for p, _ in pool), key=lambda e: e[1])
            pooled = {p for p, _ in pool}
            for s in rng.sample(keys, min(SAMPLES, len(keys))):
                if s in pooled:
                    continue
                sc = score(s)
                j = 0
                while j < len(pool) and pool[j][1] < sc:
                    j += 1
                if len(pool) < POOL:
                    pool.insert(j, [s, sc])
                elif j > 0:
                    pool.insert(j, [s, sc])
                    del pool[0]
                else:
                    continue
                pooled.add(s)
            v, _ = pool.pop()
            j = where.pop(v)
            tail = keys.pop()
            if tail != v:
                keys[j] = tail
                where[tail] = j
            del val[v]
            last.pop(v, None)
        where[k] = len(keys)
        keys.append(k)
        if lfu:
            val[k] = LFU_INIT
            last[k] = now
        else:
            clock += 1
            val[k] = clock
        seen = now
    return miss


def sampled(tr, C, runs=1):
    """Misses of sampled LRU (mean over `runs` seeds)."""
    return sum(_run(tr, C, False, s) for s in range(runs)) / runs


def sampled_lfu(tr, C, runs=1):
    """Misses of sampled LFU (mean over `runs` seeds)."""
    return sum(_run(tr, C, True, s) for s in range(runs)) / runs


POL = {'sampled': sampled, 'sampled-lfu': sampled_lfu}

if __name__ == '__main__':
    tr = [int(line) for line in open(sys.argv[1])]
    sizes = [int(x) for x in sys.argv[2].split(',')]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for C in sizes:
        for p, f in POL.items():
            print('%s,%d,%.6f' % (p, C, f(tr, C, runs) / len(tr)), flush=True)
