"""The fast solver's placements by name (BF-IO option ``placement``, issue 27).

- ``greedy`` (:mod:`bfio.solvers.fast`, split into shards by
  :mod:`bfio.solvers.shards`): every placement looks at every worker with a
  free slot, ``O(U n_T)`` per call;
- ``heap`` (:mod:`bfio.solvers.heap`): the worker with the largest pivot from a
  lazy max-heap, ``O(U (log n_T + H_eff))`` per call;
- ``auto``: the greedy when its modelled cost, :data:`GREEDY_S_PER_UNIT` times
  ``U n_T``, is at most :data:`AUTO_STEP_SHARE` of the decode step (in a run:
  the mean modelled step so far, so the greedy before the first step; for an
  instance: :attr:`bfio.solvers.instance.Instance.step_s`, the paper's step of its largest load),
  the heap otherwise. A router has a time budget per step: the greedy is the better
  placement where it fits in it (few workers, or long steps: LongBench's steps
  last a second, so Table 1's calls stay greedy at ``G = 256``), the heap where
  it does not (BurstGPT at ``G = 256`` and beyond, where the greedy costs a
  fifth of a step and more; ``docs/bfio.md``, "Production scale"). The choice
  is made per call from modelled numbers only: deterministic.

The registry of names is :data:`bfio.solvers.PLACEMENTS`.
"""

from __future__ import annotations

import numpy as np

from bfio.solvers.heap import solve_heap_terms
from bfio.solvers.shards import solve_sharded_terms

#: The greedy's modelled seconds per unit of ``U n_T`` (placements times workers with a
#: free slot), from ``benchmarks/bench_scaling.py``: 1.8 ms a call at ``G = 256`` for a
#: mean ``U n_T`` of 86,000 (BurstGPT, this machine).
GREEDY_S_PER_UNIT = 2e-8
#: ``auto`` runs the greedy while its modelled cost is at most this share of the decode step.
AUTO_STEP_SHARE = 0.05


def resolve_placement(placement: str, free: np.ndarray, admissible: int, step_s: float) -> str:
    """The placement that runs on a call (``auto`` resolved): ``admissible`` is ``U``,
    ``free`` the free slots per worker, ``step_s`` the modelled decode step."""
    if placement != "auto":
        return placement
    work = float(admissible) * float(np.count_nonzero(free))
    return "greedy" if work * GREEDY_S_PER_UNIT <= AUTO_STEP_SHARE * step_s else "heap"


def place_terms(base, free, sizes, forced, U, terms, placement, max_rounds, shard_workers,
                step_s) -> tuple[np.ndarray, int]:
    """Place ``U`` of the waiting requests (every ``forced`` one among them) with
    ``placement`` (``auto`` resolved with the modelled step ``step_s``); returns
    ``(assign, refreshed)``: request -> worker (or -1) and the heap's key refreshes
    (0 for the greedy). ``terms`` is the call's
    :class:`~bfio.solvers.objective.ObjectiveTerms`, ``base`` the active loads over
    its offsets ``0..terms.window``. ``auto`` runs the greedy when a kernel term depends
    on the worker (:attr:`ObjectiveTerms.worker_dependent
    <bfio.solvers.objective.ObjectiveTerms.worker_dependent>`: the heap's keys are not
    exact for it, and ``heap`` refuses it by name)."""
    chosen = resolve_placement(placement, free, U, step_s)
    if chosen == "heap" and placement == "auto" and terms.worker_dependent:
        chosen = "greedy"
    if chosen == "heap":
        assign, refreshed = solve_heap_terms(base, free, sizes, forced, U, terms)
        return assign, int(refreshed)
    return solve_sharded_terms(base, free, sizes, forced, U, terms, max_rounds, shard_workers), 0


__all__ = ["GREEDY_S_PER_UNIT", "AUTO_STEP_SHARE", "resolve_placement", "place_terms"]
