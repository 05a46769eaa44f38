"""The fast solver's searches of the waiting requests (:mod:`bfio.solvers.fast`).

The waiting requests sit in size order, grouped by lifetime bucket
(:func:`bfio.solvers.fast.costs._bucket`; group ``k`` occupies positions
``gstart[k]..gstart[k + 1] - 1``). A candidate search asks for the largest
waiting request of a group with size at most ``x`` or the smallest with size
above ``x`` (the two requests around a worker's pivot, the only candidates by
convexity of the cost). Two structures answer it, with the same answers: a
Fenwick tree of the waiting positions (:func:`_grp_le`, :func:`_grp_gt`; the
local search, where requests also return to waiting) and path-compressed
union-find pointers to the nearest waiting position (:func:`_cand_le`,
:func:`_cand_gt`; phase 2, where the waiting set only shrinks).
"""

from __future__ import annotations

from bfio.ground.jit import helper as _helper
from bfio.solvers.fenwick import bit_kth as _bit_kth
from bfio.solvers.fenwick import bit_prefix as _bit_prefix

# Helpers (``bfio.ground.jit.helper``) take arrays but never allocate, so they are compiled
# without the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.ground.jit.kernel``).


@_helper
def _upper(a, lo, hi, x):
    """First position in ``lo..hi`` with ``a[pos] > x`` (``a`` ascending there)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@_helper
def _lower(a, lo, hi, x):
    """First position in ``lo..hi`` with ``a[pos] >= x`` (``a`` ascending there):
    ``lo + np.searchsorted(a[lo:hi], x, side="left")``, without compiling numba's
    searchsorted for each type of ``x`` (issue 42)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_helper
def _grp_le(ssorted, bit, lo, hi, x):
    """Largest waiting request with size <= x among positions lo..hi-1, or -1.
    Among equal sizes the oldest request sits last, so it is found first."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x) - 1
    if pos < lo:
        return -1
    before = _bit_prefix(bit, lo - 1) if lo > 0 else 0
    c = _bit_prefix(bit, pos)
    if c == before:
        return -1
    return _bit_kth(bit, c)


@_helper
def _grp_gt(ssorted, bit, lo, hi, x):
    """Smallest waiting request with size > x among positions lo..hi-1, or -1."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x)
    c = _bit_prefix(bit, pos - 1) if pos > 0 else 0
    total = _bit_prefix(bit, hi - 1)
    if c >= total:
        return -1
    return _bit_kth(bit, c + 1)


@_helper
def _find_left(lp, p):
    """Largest waiting position ``<= p`` (``-1`` if none). ``lp`` is a union-find
    over positions: a waiting position is its own root, a taken one points to
    the position left of it; paths are compressed on the way."""
    r = p
    while r >= 0 and lp[r] != r:
        r = lp[r]
    while p >= 0 and lp[p] != p:
        nxt = lp[p]
        lp[p] = r
        p = nxt
    return r


@_helper
def _find_right(rp, p):
    """Smallest waiting position ``>= p`` (``n``, a sentinel root, if none)."""
    r = p
    while rp[r] != r:
        r = rp[r]
    while rp[p] != p:
        nxt = rp[p]
        rp[p] = r
        p = nxt
    return r


@_helper
def _take_position(lp, rp, q):
    """Position ``q`` is no longer waiting: unite it with its neighbours."""
    lp[q] = q - 1
    rp[q] = q + 1


@_helper
def _cand_le(ssorted, lp, lo, hi, x):
    """Largest waiting request with size <= x among positions lo..hi-1, or -1
    (the union-find twin of :func:`_grp_le`, same answer)."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x) - 1
    if pos < lo:
        return -1
    r = _find_left(lp, pos)
    return r if r >= lo else -1


@_helper
def _cand_gt(ssorted, rp, lo, hi, x):
    """Smallest waiting request with size > x among positions lo..hi-1, or -1
    (the union-find twin of :func:`_grp_gt`, same answer)."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x)
    if pos >= hi:
        return -1
    r = _find_right(rp, pos)
    return r if r < hi else -1


@_helper
def _next_waiting(lp, rp, gstart, k, side, p):
    """The candidate that replaces the taken request at position ``p`` of group
    ``k`` on ``side`` (0: largest waiting ``<=`` the pivot, 1: smallest ``>``),
    or -1. Invariant: every position between ``p`` and the pivot is taken
    (``p`` was the nearest waiting one), so this is the answer of
    :func:`_cand_le` / :func:`_cand_gt` for the same pivot, and it is the same
    for every worker whose candidate was ``p``."""
    if side == 0:
        q = _find_left(lp, p)
        return q if q >= gstart[k] else -1
    q = _find_right(rp, p)
    return q if q < gstart[k + 1] else -1
