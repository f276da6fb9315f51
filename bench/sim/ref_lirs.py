#!/usr/bin/env python3
"""LIRS for reference.py: an independent Python version of the policy.

Written from the rules in ../../../shared/reference/eviction.md (Jiang &
Zhang, SIGMETRICS'02, with libCacheSim's LIRS.c parameters: resident HIR
share 1% of C, at least one item; stack S capped at 2C entries), with plain
Python containers and nothing shared with cellar's C (evict_lirs.c).
Object-count cache, every request a GET with demand fill.

Cold start, as cellar's seam imposes it (the policy learns C only when the
class first has to evict): until the first eviction every new key is LIR
at the top of S; at the first eviction the (number of LIR - (C - Lhirs))
keys nearest the top of S turn into resident HIR, staying in S, and join
Q oldest first.  With no key read twice before the cache fills this is
libCacheSim's state (its first C - Lhirs distinct keys are LIR, the rest
resident HIR in S and Q).

One departure from libCacheSim, on purpose: a hit on a resident HIR key
that is not in S only moves it (top of S, end of Q), as the paper says;
libCacheSim also demotes the bottom LIR there, which evicts Q's front on a
hit and lets the next new key in as LIR.

    python3 ref_lirs.py TRACE.txt SIZES      (one object id per line)
"""
import sys
from collections import OrderedDict


def lirs(tr, C, hirs_ratio=0.01, stack_factor=2):
    """LIRS miss count over trace tr for a cache of C objects."""
    H = max(1, int(C * hirs_ratio))     # resident HIR share (Lhirs)
    L = C - H if C > H else 0           # LIR share
    S = OrderedDict()     # stack S by recency: first = bottom, last = top
    Q = OrderedDict()     # resident HIR keys: first = front (evicted next)
    NR = OrderedDict()    # non-resident HIR keys in S, earliest evicted first
    lir = set()           # resident LIR keys (all of them are in S)
    full = False          # the cache has evicted at least once
    miss = 0

    def prune():
        # the bottom of S is always an LIR key: pop HIR entries off it
        while S:
            b = next(iter(S))
            if b in lir:
                return
            del S[b]
            NR.pop(b, None)

    def demote_bottom():
        # the bottom LIR leaves S and becomes resident HIR at the end of Q
        prune()
        b = next(iter(S))
        del S[b]
        lir.discard(b)
        Q[b] = None
        prune()

    def make_lir(k):
        # k (resident or returning, not in Q) becomes LIR at the top of S;
        # the LIR set keeps to its share once C is known
        S[k] = None
        S.move_to_end(k)
        lir.add(k)
        while full and len(lir) > L:
            demote_bottom()

    for k in tr:
        if k in lir:                        # LIR hit
            S.move_to_end(k)
        elif k in Q:                        # resident HIR hit
            if k in S:
                del Q[k]
                make_lir(k)
            else:
                Q.move_to_end(k)
                S[k] = None
        else:                               # miss
            miss += 1
            if len(lir) + len(Q) >= C:
                if not full:                # the first eviction: split
                    full = True
                    over = len(lir) - L
                    top = []
                    for x in reversed(S):
                        if len(top) == over:
                            break
                        if x in lir:
                            top.append(x)
                    for x in reversed(top):
                        lir.discard(x)
                        Q[x] = None
                    prune()
                v, _ = Q.popitem(last=False)
                if v in S:
                    NR[v] = None            # stays in S, non-resident
            if k in NR:                     # a non-resident HIR key returns
                del NR[k]
                make_lir(k)
            elif not full or len(lir) < L:  # room in the LIR set
                S[k] = None
                lir.add(k)
            else:                           # a resident HIR
                S[k] = None
                Q[k] = None
        prune()
        while len(S) > stack_factor * C and NR:     # libCacheSim's limitStack
            v, _ = NR.popitem(last=False)
            del S[v]
    return miss


if __name__ == '__main__':
    tr = [int(line) for line in open(sys.argv[1])]
    for C in (int(x) for x in sys.argv[2].split(',')):
        print('lirs,%d,%.6f' % (C, lirs(tr, C) / len(tr)), flush=True)
