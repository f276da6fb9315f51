#!/usr/bin/env python3
"""Independent reference simulators for cellar-sim's policies.

Written from the algorithms' rules (../../../shared/reference/eviction.md)
and libCacheSim's / Caffeine's order of operations, with plain Python
containers and nothing shared with cellar's C code.  Object-count caches,
every request a GET with demand fill.  Used by check.sh to confirm that
cellar-sim's numbers (the real engine, through the policy seam) are the
published algorithms' numbers.

    reference.py TRACE.txt SIZES POLICIES     (one object id per line)
"""
import os
import sys
from collections import OrderedDict


def lru(tr, C):
    """LRU: a hit moves to the MRU end; a miss evicts the LRU end."""
    d = OrderedDict(); miss = 0
    for k in tr:
        if k in d: d.move_to_end(k)
        else:
            miss += 1
            if len(d) >= C: d.popitem(last=False)
            d[k] = 1
    return miss

def fifo(tr, C):
    """FIFO: hits change nothing."""
    d = OrderedDict(); miss = 0
    for k in tr:
        if k not in d:
            miss += 1
            if len(d) >= C: d.popitem(last=False)
            d[k] = 1
    return miss

def clock(tr, C, bits=1):
    """CLOCK / FIFO-reinsertion with an n-bit counter (libCacheSim Clock.c)."""
    mx = (1 << bits) - 1
    d = OrderedDict(); miss = 0   # first = tail (oldest)
    for k in tr:
        if k in d: d[k] = min(d[k] + 1, mx)
        else:
            miss += 1
            if len(d) >= C:
                while True:
                    t, f = next(iter(d.items()))
                    if f >= 1:
                        del d[t]; d[t] = f - 1
                    else:
                        del d[t]; break
            d[k] = 0
    return miss

def sieve(tr, C):
    """SIEVE: visited bit, a hand that moves toward the head and wraps."""
    # list as python list is slow; use dict-based doubly linked list
    prev = {}; nxt = {}; vis = {}; head = None; tail = None; hand = None; miss = 0
    for k in tr:
        if k in vis: vis[k] = 1; continue
        miss += 1
        if len(vis) >= C:
            o = hand if hand is not None else tail
            while vis[o]:
                vis[o] = 0
                o = prev[o] if prev[o] is not None else tail
            hand = prev[o]
            # remove o
            p, n = prev[o], nxt[o]
            if p is not None: nxt[p] = n
            else: head = n
            if n is not None: prev[n] = p
            else: tail = p
            del prev[o], nxt[o], vis[o]
        prev[k] = None; nxt[k] = head
        if head is not None: prev[head] = k
        head = k
        if tail is None: tail = k
        vis[k] = 0
    return miss

def s3fifo(tr, C, small_ratio=0.1, ghost_ratio=0.9, thr=2):
    """S3-FIFO as libCacheSim S3FIFO.c (small 10%, ghost 90%, threshold 2)."""
    ssz = int(C * small_ratio); msz = C - ssz; gsz = int(C * ghost_ratio)
    S = OrderedDict(); M = OrderedDict(); G = OrderedDict(); miss = 0; has_ev = False
    for k in tr:
        if k in S: S[k] += 1; continue
        hit_ghost = False
        if k in G: del G[k]; hit_ghost = True
        if k in M: M[k] += 1; continue
        miss += 1
        # evict while full
        while len(S) + len(M) + 1 > C:
            has_ev = True
            if len(M) > msz or len(S) == 0:
                while True:
                    t, f = next(iter(M.items()))
                    del M[t]
                    if f >= 1: M[t] = min(f, 3) - 1
                    else: break
            else:
                evicted = False
                while not evicted and S:
                    t, f = next(iter(S.items()))
                    del S[t]
                    if f >= thr: M[t] = 0
                    else:
                        if gsz > 0 and t not in G:
                            G[t] = 1
                            if len(G) > gsz: G.popitem(last=False)
                        evicted = True
        if hit_ghost: M[k] = 0
        else:
            if 1 >= ssz: continue
            if not has_ev and len(S) >= ssz: M[k] = 0
            else: S[k] = 0
    return miss

def twoq(tr, C, ain=0.25, aout=0.5):
    """Full 2Q as libCacheSim TwoQ.c (A1in 25%, A1out 50%, Am LRU capped)."""
    ain_sz = int(C * ain); aout_sz = int(C * aout); am_sz = C - ain_sz
    A1 = OrderedDict(); Am = OrderedDict(); Out = OrderedDict(); miss = 0
    for k in tr:
        if k in A1: continue
        hg = False
        if k in Out: del Out[k]; hg = True
        if k in Am: Am.move_to_end(k); continue
        miss += 1
        while len(A1) + len(Am) + 1 > C:
            if len(A1) > ain_sz:
                t, _ = A1.popitem(last=False)
                if t not in Out:
                    Out[t] = 1
                    if len(Out) > aout_sz: Out.popitem(last=False)
            else:
                Am.popitem(last=False)
        if hg:
            if len(Am) + 1 > am_sz: Am.popitem(last=False)
            Am[k] = 1
        else:
            A1[k] = 1
    return miss

def arc(tr, C):
    """ARC as libCacheSim ARC.c: ghost hits adapt p before REPLACE."""
    T1 = OrderedDict(); T2 = OrderedDict(); B1 = OrderedDict(); B2 = OrderedDict()
    p = 0; miss = 0
    def replace(inB2):
        if len(T1) > 0 and (len(T1) > p or (len(T1) == p and inB2)):
            t, _ = T1.popitem(last=False); B1[t] = 1
        else:
            t, _ = T2.popitem(last=False); B2[t] = 1
    for k in tr:
        if k in T1: del T1[k]; T2[k] = 1; continue
        if k in T2: T2.move_to_end(k); continue
        miss += 1
        if k in B1:
            d = max(len(B2) // len(B1), 1); p = min(p + d, C)
            replace(False); del B1[k]; T2[k] = 1; continue
        if k in B2:
            d = max(len(B1) // len(B2), 1); p = max(p - d, 0)
            replace(True); del B2[k]; T2[k] = 1; continue
        if len(T1) + len(T2) + 1 > C:
            if len(T1) + len(B1) + 1 > C:
                if len(T1) < C:
                    B1.popitem(last=False); replace(False)
                else:
                    T1.popitem(last=False)
            else:
                if len(T1) + len(T2) + len(B1) + len(B2) >= 2 * C:
                    B2.popitem(last=False)
                replace(False)
        T1[k] = 1
    return miss

def lfu(tr, C):
    """LFU as libCacheSim LFU.c: new count 1, evict the oldest of the lowest count."""
    freq = {}; buckets = {}; miss = 0; mn = 1
    for k in tr:
        f = freq.get(k)
        if f is not None:
            del buckets[f][k]
            if not buckets[f]:
                del buckets[f]
                if mn == f: mn = f + 1
            freq[k] = f + 1
            buckets.setdefault(f + 1, OrderedDict())[k] = 1
            continue
        miss += 1
        if len(freq) >= C:
            while mn not in buckets: mn += 1
            v, _ = buckets[mn].popitem(last=False)
            if not buckets[mn]: del buckets[mn]
            del freq[v]
        freq[k] = 1; mn = 1
        buckets.setdefault(1, OrderedDict())[k] = 1
    return miss

M64 = (1 << 64) - 1


class Sketch:
    def __init__(s): s.t = None; s.size = 0
    def ensure(s, n):
        if s.t is not None and s.words >= n: return
        w = 8
        while w < n: w *= 2
        s.words = w; s.t = [0] * (w * 16); s.mask = (w >> 3) - 1; s.sample = 10 * n; s.size = 0
    def cells(s, h):
        block = ((h & 0xffffffff) & s.mask) << 3
        for i in range(4):
            b = (h >> (32 + 8 * i)) & 0xff
            yield (block + 2 * i + (b & 1)) * 16 + ((b >> 1) & 15)
    def inc(s, h):
        if s.t is None: return
        added = False
        for c in s.cells(h):
            if s.t[c] < 15: s.t[c] += 1; added = True
        if added:
            s.size += 1
            if s.size >= s.sample:
                odd = sum(1 for v in s.t if v & 1)
                s.t = [v >> 1 for v in s.t]
                s.size = (s.size - odd // 4) // 2
    def est(s, h):
        if s.t is None: return 0
        return min(s.t[c] for c in s.cells(h))

def wtinylfu(tr, C, adaptive=True):
    """Caffeine's W-TinyLFU: insert into the window, then evict (1% window,
    SLRU main with 80% protected, 4-bit count-min with halving, sized when
    the cache is half full); with adaptive, Caffeine's hill climber resizes
    the window after every sample."""
    W, P, R = OrderedDict(), OrderedDict(), OrderedDict()   # first = LRU
    sk = Sketch()
    wmax = C - int(C * 0.99)
    pmax = int((C - wmax) * 0.8)
    step = -0.0625 * C
    prev_rate = 0.0
    hits = misses = 0
    rnd = 0x9e3779b97f4a7c15
    miss = 0

    def demote():
        while len(R) > pmax:
            t, _ = R.popitem(last=False)
            P[t] = 1

    def climb():
        nonlocal hits, misses, prev_rate, step, wmax, pmax
        if sk.t is None:
            prev_rate = 0.0; hits = misses = 0
            return
        n = hits + misses
        if n < sk.sample:
            return
        rate = hits / n
        change = rate - prev_rate
        amount = step if change >= 0 else -step
        nxt = (0.0625 * C * (1 if amount >= 0 else -1)) if abs(change) >= 0.05 else 0.98 * amount
        prev_rate = rate
        adj = int(amount)
        step = nxt
        hits = misses = 0
        demote()
        if adj > 0 and pmax > 0:
            quota = min(adj, pmax)
            pmax -= quota; wmax += quota
            demote()
            while quota > 0:
                src = P if P else R
                if not src:
                    break
                t, _ = src.popitem(last=False)
                W[t] = 1
                quota -= 1
            pmax += quota; wmax -= quota
        elif adj < 0 and wmax > 1:
            quota = min(-adj, max(0, wmax - 1))
            pmax += quota; wmax -= quota
            while quota > 0 and W:
                t, _ = W.popitem(last=False)
                P[t] = 1
                quota -= 1
            pmax -= quota; wmax += quota

    for k in tr:
        h = mix(k)
        if k in W or k in P or k in R:
            sk.inc(h)
            if k in W:
                W.move_to_end(k)
            elif k in P:
                del P[k]; R[k] = 1
                demote()
            else:
                R.move_to_end(k)
            hits += 1
            if adaptive:
                climb()
            continue
        miss += 1
        n = len(W) + len(P) + len(R) + 1
        if n >= C // 2:
            sk.ensure(n)
        sk.inc(h); W[k] = 1
        misses += 1
        cand = None
        while len(W) > wmax:                    # evictFromWindow
            t, _ = W.popitem(last=False); P[t] = 1
            if cand is None: cand = t
        while len(W) + len(P) + len(R) > C:     # evictFromMain
            victim = next(iter(P)) if P else None
            c = cand if cand is not None else (next(iter(W)) if W else None)
            if victim is None and c is None: victim = next(iter(R))
            if victim is None or c == victim or c is None:
                ev = c if c is not None else victim
            else:
                vf, cf = sk.est(mix(victim)), sk.est(mix(c))
                if cf > vf: ev = victim
                elif cf >= 6:
                    rnd ^= (rnd << 13) & M64; rnd ^= rnd >> 7; rnd ^= (rnd << 17) & M64
                    ev = victim if (rnd & 127) == 0 else c
                else: ev = c
            if ev == cand: cand = None
            for d in (W, P, R):
                if ev in d: del d[ev]; break
        if adaptive:
            climb()
    return miss


def mix(k):
    """A 64-bit hash of the object id for the sketch (splitmix64's finaliser;
    cellar hashes its keys with its own function, so sketch collisions, and
    with them a few admission decisions, differ slightly)."""
    z = (k + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_lirs import lirs  # noqa: E402
from ref_sampled import sampled, sampled_lfu  # noqa: E402

POL = {'lru-exact': lru, 'fifo': fifo, 'clock': clock, 'clock2': lambda t, C: clock(t, C, 2),
       'sieve': sieve, 'lfu': lfu, 's3fifo': s3fifo, '2q': twoq, 'arc': arc, 'wtinylfu': wtinylfu,
       'wtinylfu-fixed': lambda t, C: wtinylfu(t, C, False), 'lirs': lirs,
       'sampled': sampled, 'sampled-lfu': sampled_lfu}

if __name__ == '__main__':
    path = sys.argv[1]
    sizes = [int(x) for x in sys.argv[2].split(',')]
    pols = sys.argv[3].split(',')
    tr = [int(line) for line in open(path)]
    for C in sizes:
        for p in pols:
            print('%s,%d,%.6f' % (p, C, POL[p](tr, C) / len(tr)), flush=True)
