"""The fast solver's placements by name (BF-IO option ``placement``, issue 27).

- ``greedy`` (:mod:`bfio.solvers.fast`, split into shards by
  :mod:`bfio.solvers.shards`): every placement looks at every worker with a
  free slot, ``O(U n_T)`` per call;
- ``heap`` (:mod:`bfio.solvers.heap`): the worker with the largest pivot from a
  lazy max-heap, ``O(U (log n_T + H_eff))`` per call;
- ``auto``: ``greedy`` while at most :data:`AUTO_GREEDY_WORKERS` workers have a
  free slot, ``heap`` above. The greedy is the better placement on few workers
  (one bad pick there is a large share of the cluster) and costs little; the
  heap matches it from a few hundred workers on, where the greedy's cost grows
  like ``G^2`` (``docs/bfio.md``, "Production scale").

The registry of names is :data:`bfio.solvers.PLACEMENTS`.
"""

from __future__ import annotations

import numpy as np

#: ``auto`` runs the greedy while at most this many workers have a free slot
#: (there a routing call is at most about a tenth of a modelled decode step:
#: ``benchmarks/bench_scaling.py``), the heap above.
AUTO_GREEDY_WORKERS = 128


def resolve_placement(placement: str, free: np.ndarray) -> str:
    """The placement that runs on a call with free slots ``free`` (``auto`` resolved)."""
    if placement != "auto":
        return placement
    return "greedy" if int(np.count_nonzero(free)) <= AUTO_GREEDY_WORKERS else "heap"


def place_terms(base, free, sizes, forced, U, terms, placement, max_rounds, shard_workers) -> tuple[np.ndarray, int]:
    """Place ``U`` of the waiting requests (every ``forced`` one among them) with
    ``placement``; returns ``(assign, refreshed)``: request -> worker (or -1) and
    the heap's key refreshes (0 for the greedy). ``terms`` is the call's
    :class:`~bfio.solvers.objective.ObjectiveTerms`, ``base`` the active loads over
    its offsets ``0..terms.window``."""
    from bfio.solvers.heap import solve_heap_terms
    from bfio.solvers.shards import solve_sharded_terms

    if resolve_placement(placement, free) == "heap":
        assign, refreshed = solve_heap_terms(base, free, sizes, forced, U, terms)
        return assign, int(refreshed)
    return solve_sharded_terms(base, free, sizes, forced, U, terms, max_rounds, shard_workers), 0


__all__ = ["AUTO_GREEDY_WORKERS", "resolve_placement", "place_terms"]
