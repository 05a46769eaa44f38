"""The fast solver's envelope: the top three predicted loads of each offset
(:mod:`bfio.solvers.fast`, phase 3).

``tv[k, h]`` / ``ti[k, h]`` (``k = 0, 1, 2``) are the three largest values of
column ``h`` over the fixed envelope ``Mo(h)`` (index ``-1``) and the touched
workers' ``P_t(h)`` (index ``t``), largest first. With them the envelope
without one or two workers, ``max`` over the others, is read in ``O(1)``
(:func:`_excl1`, :func:`_excl2`), which is what the local search's moves and
swaps cost. Invariant: after every change of a worker's profile,
:func:`_update_worker` restores the top three of every column.
"""

from __future__ import annotations

from bfio.ground.jit import helper as _helper

# Helpers (``bfio.ground.jit.helper``) take arrays but never allocate, so they are compiled
# without the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.ground.jit.kernel``).

_NONE = -2  # index of an empty envelope entry
_FIXED = -1  # index standing for the workers without free slots (Mo)


@_helper
def _column_scan(P, Mo, tv, ti, h):
    """Top three of column ``h`` over ``{Mo} U touched workers``."""
    nT = P.shape[0]
    for k in range(3):
        tv[k, h] = -1
        ti[k, h] = _NONE
    for t in range(-1, nT):
        v = Mo[h] if t < 0 else P[t, h]
        if v > tv[0, h]:
            tv[2, h] = tv[1, h]
            ti[2, h] = ti[1, h]
            tv[1, h] = tv[0, h]
            ti[1, h] = ti[0, h]
            tv[0, h] = v
            ti[0, h] = t
        elif v > tv[1, h]:
            tv[2, h] = tv[1, h]
            ti[2, h] = ti[1, h]
            tv[1, h] = v
            ti[1, h] = t
        elif v > tv[2, h]:
            tv[2, h] = v
            ti[2, h] = t


@_helper
def _update_worker(P, Mo, tv, ti, t):
    """Refresh the top-three structure after worker ``t``'s profile changed."""
    H1 = P.shape[1]
    for h in range(H1):
        if ti[0, h] == t or ti[1, h] == t or ti[2, h] == t:
            _column_scan(P, Mo, tv, ti, h)
        else:
            v = P[t, h]
            if v > tv[0, h]:
                tv[2, h] = tv[1, h]
                ti[2, h] = ti[1, h]
                tv[1, h] = tv[0, h]
                ti[1, h] = ti[0, h]
                tv[0, h] = v
                ti[0, h] = t
            elif v > tv[1, h]:
                tv[2, h] = tv[1, h]
                ti[2, h] = ti[1, h]
                tv[1, h] = v
                ti[1, h] = t
            elif v > tv[2, h]:
                tv[2, h] = v
                ti[2, h] = t


@_helper
def _excl1(tv, ti, t, h):
    return tv[0, h] if ti[0, h] != t else tv[1, h]


@_helper
def _excl2(tv, ti, a, b, h):
    for k in range(3):
        if ti[k, h] != a and ti[k, h] != b:
            return tv[k, h]
    return -1
