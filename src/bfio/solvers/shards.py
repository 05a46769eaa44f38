"""BF-IO's fast solver on shards of a large cluster (issue 16).

The fast solver's fill (:func:`bfio.solvers.fast.fill._fill`) costs about
``O(U n_T)`` per routing call: every placement looks at every worker with free
slots, and ``U`` grows with the cluster too, so a call grows like ``G^2``
(BurstGPT, ``H = 20``: 1.5 ms at ``G = 256``, 15 ms at ``G = 1024``, measured on
captured calls). Above ``shard_workers`` workers with free slots the call is
split, as a hierarchical router would:

1. the workers with free slots are dealt, in order of their current load, to
   ``k = ceil(n_T / shard_workers)`` shards (each shard gets a like mix of
   loaded and idle workers);
2. the waiting requests are dealt the same way in order of size, the ones that
   must be admitted first (every shard gets a like share of each);
3. each shard admits its share of ``U`` (in proportion to its free slots, and
   at least the requests it must admit) with :func:`~bfio.solvers.fast.place_fast` on the whole
   cluster's loads: the other workers, including the shards placed before it,
   enter its objective through the fixed envelope, so Eq. (IO)'s ``J`` is the
   one every shard lowers;
4. what a shard could not place (fewer requests or slots than its share) is
   placed by one last call over all remaining slots and requests.

The result satisfies Eq. (IO)'s constraints like the unsharded call (exactly
``U`` admitted, at most ``free_g`` per worker, every forced request admitted);
when the forced requests of a shard cannot fit its slots the call is not split.
The per-call cost becomes about ``k`` calls of ``shard_workers`` workers,
linear in ``G``. Speed and quality against the unsharded call: ``docs/bfio.md``,
section "Shards above 256 workers with free slots".
"""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.jit import kernel
from bfio.solvers.fast import place_fast
from bfio.solvers.objective import request_profiles
from bfio.solvers.terms.kernel import imbalance_only
from bfio.solvers.touched import solver_loads

DEFAULT_SHARD_WORKERS = 256  # the paper's largest cluster (Table 1) is never split


@kernel
def scatter_rows(loads, rows, values):
    """``loads[rows[i]] += values[i]`` for every ``i``, repeated rows adding up
    (``np.add.at`` does the same about 30 times slower)."""
    for i in range(rows.shape[0]):
        for h in range(values.shape[1]):
            loads[rows[i], h] += values[i, h]


def check_shard_workers(value, key: str = "shard_workers") -> int:
    """``0`` (never split) or the largest number of workers with free slots one call handles."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"{key}: expected an integer >= 0 (0: never split the routing call), got {value!r}")
    return int(value)


def deal(order: np.ndarray, k: int) -> np.ndarray:
    """Shard of each position of ``order``: dealt round-robin, ``order[i]`` to ``i mod k``."""
    out = np.empty(order.shape[0], dtype=np.int64)
    out[order] = np.arange(order.shape[0]) % k
    return out


def shares(U: int, free: np.ndarray, forced: np.ndarray, room: np.ndarray) -> np.ndarray | None:
    """Admissions per shard: ``U`` in proportion to the free slots (largest
    remainder, ties to the lower shard), raised to the forced count and capped by
    ``room`` (free slots, waiting requests). ``None`` if the forced requests of
    some shard do not fit in it."""
    if np.any(forced > room):
        return None
    q = U * free / free.sum()
    u = np.floor(q).astype(np.int64)
    for i in np.argsort(-(q - u), kind="stable")[: U - int(u.sum())]:
        u[i] += 1
    u = np.minimum(np.maximum(u, forced), room)
    over = int(u.sum()) - U
    for i in range(u.shape[0] - 1, -1, -1):  # forced counts above the proportional share
        if over <= 0:
            break
        d = min(over, int(u[i] - forced[i]))
        u[i] -= d
        over -= d
    return u


def solve_sharded(base, free, sizes, life, forced, U, max_rounds, weights, shard_workers=DEFAULT_SHARD_WORKERS):
    """:func:`place_sharded` under the imbalance alone: lifetimes ``life`` and offset
    weights ``weights`` (:func:`~bfio.solvers.terms.kernel.imbalance_only`); the same result."""
    kt = imbalance_only(life, weights, np.shape(base)[0])
    return place_sharded(base, free, sizes, forced, U, max_rounds, kt, shard_workers)


def place_sharded(base, free, sizes, forced, U, max_rounds, kt, shard_workers=DEFAULT_SHARD_WORKERS):
    """:func:`~bfio.solvers.fast.place_fast`, split into shards of at most ``shard_workers``
    workers with free slots when there are more (module docstring); same arguments and
    result. Each shard's call takes the call's kernel terms ``kt`` for its requests
    (:meth:`~bfio.solvers.terms.kernel.KernelTerms.requests`; the worker costs stay the
    whole cluster's)."""
    base = solver_loads(base)  # the loads the shards add placements to, as place_fast takes them
    free = np.asarray(free, dtype=np.int64)
    open_ = np.flatnonzero(free > 0)
    k = -(-open_.shape[0] // shard_workers) if shard_workers > 0 else 1
    if k <= 1 or U <= 0:
        return place_fast(base, free, sizes, forced, U, max_rounds, kt)
    G, H1 = base.shape
    n = sizes.shape[0]
    wshard = np.full(G, -1, dtype=np.int64)
    wshard[open_] = deal(np.argsort(base[open_, 0], kind="stable"), k)
    # forced requests first, then by size (largest first), dealt round-robin
    rshard = deal(np.lexsort((np.arange(n), -sizes, ~forced)), k)
    sfree = np.bincount(wshard[open_], weights=free[open_], minlength=k).astype(np.int64)
    sforced = np.bincount(rshard[forced], minlength=k)
    room = np.minimum(sfree, np.bincount(rshard, minlength=k))
    u = shares(U, sfree, sforced, room)
    if u is None:
        return place_fast(base, free, sizes, forced, U, max_rounds, kt)
    loads = np.array(base, copy=True)
    assign = np.full(n, -1, dtype=np.int64)

    def place(workers_free, idx, count):
        a = place_fast(loads, workers_free, sizes[idx], forced[idx], count, max_rounds, kt.requests(idx))
        got = np.flatnonzero(a >= 0)
        assign[idx[got]] = a[got]
        scatter_rows(loads, a[got], request_profiles(sizes[idx[got]], kt.life[idx[got]], H1 - 1).astype(loads.dtype))

    for s in range(k):
        if u[s] > 0:
            place(np.where(wshard == s, free, 0), np.flatnonzero(rshard == s), int(u[s]))
    rest = U - int((assign >= 0).sum())
    if rest > 0:  # over the slots the shards left free
        place(free - np.bincount(assign[assign >= 0], minlength=G), np.flatnonzero(assign < 0), rest)
    return assign


def solve_sharded_terms(base, free, sizes, forced, U, terms, max_rounds=4, shard_workers=DEFAULT_SHARD_WORKERS):
    """:func:`place_sharded` with the objective's terms of the routing call, a
    :class:`~bfio.solvers.objective.ObjectiveTerms` (Eq. (IO), Section 4), as the
    kernels take them (:meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms`);
    ``base`` spans its offsets ``0..terms.window`` (``H_eff``)."""
    return place_sharded(base, free, sizes, forced, U, max_rounds, terms.kernel_terms(base, sizes.shape[0]),
                         shard_workers)


__all__ = ["DEFAULT_SHARD_WORKERS", "check_shard_workers", "solve_sharded", "place_sharded", "solve_sharded_terms"]
