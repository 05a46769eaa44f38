"""The heap placement's exchange pass as it was before its skip pointer (issue 40;
``bfio.solvers.heap._upsize`` at commit c9f907b), kept in the tests alone as the
reference the library's must agree with (``tests/test_heap_upsize_skip.py``), and
:func:`reference_solve_heap`: the library's ``_solve_heap`` with this pass in
place of its own (the same code object, its global ``_upsize`` rebound), so the
two differ by the pass alone. ``benchmarks/bench_route_phases.py --paired`` times
the two against each other."""

from __future__ import annotations

import types

import numpy as np
from numba import njit

from bfio.solvers import heap
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.fenwick import bit_kth as _bit_kth
from bfio.solvers.fenwick import bit_prefix as _bit_prefix


@njit(cache=False)
def upsize_scan(P, at, sizes, life, forced, order, ss, E, bit, rank):
    """``_upsize`` without the skip pointer: every placed request searched."""
    nT, H1 = P.shape
    n = sizes.shape[0]
    slk = np.empty(nT, dtype=np.float64)
    for t in range(nT):
        v0 = E[0] - P[t, 0]
        for h in range(1, H1):
            v = E[h] - P[t, h]
            if v < v0:
                v0 = v
        slk[t] = v0
    done = 0
    for q in range(n):
        j = order[q]
        t = at[j]
        if t < 0 or forced[j]:
            continue
        sj = float(sizes[j])
        lj = life[j]
        slack = slk[t]
        a, b = 0, n
        while a < b:  # first position with size > s_j + slack
            mid = (a + b) // 2
            if ss[mid] <= sj + slack:
                a = mid + 1
            else:
                b = mid
        c = _bit_prefix(bit, a - 1) if a > 0 else 0  # waiting requests at positions < a
        tries = 0
        while c > 0 and tries < 4:
            p = _bit_kth(bit, c)  # the c-th waiting position: the largest still below the bound
            if ss[p] <= sj:
                break
            tries += 1
            k = order[p]
            sk = float(sizes[k])
            lk = life[k]
            fits = True
            for h in range(H1):
                v = P[t, h] - (sj + h if h < lj else 0.0) + (sk + h if h < lk else 0.0)
                if v > E[h]:
                    fits = False
                    break
            if fits:
                v0 = np.inf
                for h in range(H1):
                    P[t, h] += (sk + h if h < lk else 0.0) - (sj + h if h < lj else 0.0)
                    if E[h] - P[t, h] < v0:
                        v0 = E[h] - P[t, h]
                slk[t] = v0
                at[k] = t
                at[j] = -1
                _bit_add(bit, p, -1)
                _bit_add(bit, rank[j], 1)
                done += 1
                break
            c -= 1
    return done


def _rebound(func, **names):
    """``func`` (a kernel) recompiled with some of its globals rebound."""
    py = func.py_func
    g = dict(py.__globals__)
    g.update(names)
    return njit(cache=False)(types.FunctionType(py.__code__, g, py.__name__, py.__defaults__))


#: ``heap._solve_heap`` with the exchange pass :func:`upsize_scan` (same arguments and result).
reference_solve_heap = _rebound(heap._solve_heap, _upsize=upsize_scan)
