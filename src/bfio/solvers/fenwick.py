"""A Fenwick (binary indexed) tree over positions ``0..n-1`` holding counts:
which waiting requests, in size order, are still waiting. Used by both
placements of the fast solver (:mod:`bfio.solvers.fast`, :mod:`bfio.solvers.heap`).

The tree is an ``int64`` array ``bit`` of length ``n + 1``; invariant:
``bit[i]`` holds the sum of the counts at positions ``i - lowbit(i) .. i - 1``.
Each operation is ``O(log n)`` and allocates nothing, so the helpers are
compiled without numba's reference counting (``_nrt=False``; the rationale is
in :mod:`bfio.solvers.fast`).
"""

from __future__ import annotations


from bfio.ground.jit import helper as _helper


@_helper
def bit_add(bit, pos, v):
    """Add ``v`` to the count at position ``pos`` (1 = a request that waits there)."""
    i = pos + 1
    n = bit.shape[0] - 1
    while i <= n:
        bit[i] += v
        i += i & (-i)


@_helper
def bit_prefix(bit, pos):
    """Sum of the counts at positions ``0..pos``: how many requests wait up to ``pos``."""
    i = pos + 1
    s = 0
    while i > 0:
        s += bit[i]
        i -= i & (-i)
    return s


@_helper
def bit_kth(bit, k):
    """Position of the ``k``-th (1-based) unit of count: the ``k``-th waiting request."""
    n = bit.shape[0] - 1
    pos = 0
    step = 1
    while step * 2 <= n:
        step *= 2
    while step > 0:
        if pos + step <= n and bit[pos + step] < k:
            pos += step
            k -= bit[pos]
        step //= 2
    return pos  # 0-based position


@_helper
def bit_build(bit, counts):
    """Fill ``bit`` (zeros, length ``n + 1``) from the ``n`` counts in ``O(n)``: each
    node passes its sum to its parent, the same tree as ``n`` calls of :func:`bit_add`."""
    n = bit.shape[0] - 1
    for i in range(1, n + 1):
        bit[i] += counts[i - 1]
        j = i + (i & (-i))
        if j <= n:
            bit[j] += bit[i]


__all__ = ["bit_add", "bit_build", "bit_prefix", "bit_kth"]
