"""The terms of BF-IO's objective ``J`` (Section 4, Eq. (IO)) as one interface (issue 43).

``J`` of a routing call is a sum of terms. The first is always the discounted
imbalance of Eq. (IO), ``sum_h delta^h [G max_g Lhat_g(h) - sum_g Lhat_g(h)]``
(:class:`bfio.solvers.objective.ImbalanceTerm`, its data the call's
:class:`~bfio.solvers.objective.ObjectiveTerms`); the others are :class:`Term`
objects held in :attr:`ObjectiveTerms.extra <bfio.solvers.objective.ObjectiveTerms.extra>`,
built for each call by the factories of :data:`CALL_TERMS` (the
prefix-cache term, :mod:`bfio.solvers.terms.prefill`, and the calibrated step's
per-request term, :mod:`bfio.solvers.terms.batch`). Every consumer reads
the terms through :class:`~bfio.solvers.objective.ObjectiveTerms`:

- the value of ``J`` (:meth:`ObjectiveTerms.evaluate
  <bfio.solvers.objective.ObjectiveTerms.evaluate>`: the instance's ``J``, hence
  every backend's reported objective), the sum of each term's :meth:`Term.value`;
- a candidate's cost (:meth:`ObjectiveTerms.candidate_costs
  <bfio.solvers.objective.ObjectiveTerms.candidate_costs>`): the change of ``J``
  when one request joins each worker, what instant dispatch
  (:func:`bfio.solvers.dispatch.bind`) minimizes, the sum of each term's
  :meth:`Term.candidate_costs`;
- the kernel arrays (:meth:`ObjectiveTerms.kernel_arrays
  <bfio.solvers.objective.ObjectiveTerms.kernel_arrays>`): what the fast, heap
  and shard placements' numba kernels take. A term the kernels do not compute
  (``in_kernel = False``) is refused there by name; BF-IO's central path then
  lets the kernels choose *which* requests to admit and places them one at a
  time by the candidate costs of every term (:meth:`bfio.solvers.central.CentralCall.place_sequential`);
- the MILP (:func:`bfio.solvers.model.build_milp`): a term linear in the
  assignment gives its costs of ``x_jg`` (:meth:`Term.linear_costs`); the exact
  backends refuse, with a :class:`~bfio.ground.errors.ConfigError` naming the term, a
  run with a term that has none (:meth:`ObjectiveTerms.check_solver
  <bfio.solvers.objective.ObjectiveTerms.check_solver>`).

How to add a term
~~~~~~~~~~~~~~~~~

1. its own module here: a :class:`Term` subclass (``name``, :meth:`~Term.candidate_costs`,
   :meth:`~Term.bound`, :meth:`~Term.value`, and :meth:`~Term.linear_costs` if the
   MILP can hold it) and a factory ``for_call(state, requests, window) -> Term | None``
   (``window``: the caller's :class:`CallWindow`, or ``None``);
2. that factory appended to :data:`CALL_TERMS` (this file).

With these two files the term counts in ``J``, in instant dispatch, in the
central path's placement and in the exact backends (or they refuse it by name;
counted with a throwaway linear term, issue 43: 2 files). For the fast kernels
to weigh it while they choose which requests to admit, its kernel: set
``in_kernel = True``, add its arrays to
:meth:`ObjectiveTerms.kernel_arrays <bfio.solvers.objective.ObjectiveTerms.kernel_arrays>`
and its cost to the kernel's cost function :func:`bfio.solvers.fast.costs._life_cost`.
Today that is more than one place: ``kernel_arrays`` returns the pair ``(life,
weights)``, which every caller unpacks and passes on by position
(:func:`~bfio.solvers.fast.solve_fast_terms` down to ``fast/fill.py``'s four
``_life_cost`` calls, :func:`~bfio.solvers.heap.solve_heap_terms`,
:func:`~bfio.solvers.shards.solve_sharded_terms`, the drain path of
``solvers/central.py`` and ``solvers/drain.py``, whose ``_best_worker`` writes
the cost again);
the local search's exchange deltas (``fast/local_search.py``) and the
minimizers ``_pivots`` and the heap's ``_key`` are the imbalance's alone (a cost
that depends on the request or the worker breaks their exactness).
"""

from __future__ import annotations

import numpy as np

from bfio.solvers.terms.base import CallWindow, Term
from bfio.solvers.terms import batch, prefill  # noqa: E402 (after base: they import it)


def call_terms(state, requests: np.ndarray, window: CallWindow | None = None) -> tuple[Term, ...]:
    """The extra terms of ``J`` at a routing call (every factory of :data:`CALL_TERMS`
    that applies to ``state``), for the call's ``requests`` (ids, in binding order);
    ``window``: what the caller predicts over the window beside the loads
    (:class:`CallWindow`; ``None``: nothing, and a term that needs it does not apply)."""
    out = []
    for factory in CALL_TERMS:
        term = factory(state, requests, window)
        if term is not None:
            out.append(term)
    return tuple(out)


#: The factories of the extra terms, ``(state, requests, window) -> Term | None`` (None:
#: the term does not apply to this run); a new term appends its own.
CALL_TERMS = (prefill.for_call, batch.for_call)

__all__ = ["Term", "CallWindow", "call_terms", "CALL_TERMS"]
