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
- the kernel terms (:meth:`ObjectiveTerms.kernel_terms
  <bfio.solvers.objective.ObjectiveTerms.kernel_terms>`): ONE argument,
  :class:`~bfio.solvers.terms.kernel.KernelTerms`, that the fast, heap, shard and
  drain placements' numba kernels take, and ONE candidate cost,
  :func:`~bfio.solvers.terms.kernel.candidate_cost`, that they all call. A term the
  kernels do not weigh (``in_kernel = False``) is refused there by name; BF-IO's
  central path then lets the kernels choose *which* requests to admit and places
  them one at a time by the candidate costs of every term
  (:meth:`bfio.solvers.central.CentralCall.place_sequential`);
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
counted with a throwaway linear term, issue 43: 2 files).

For the fast kernels to weigh it while they choose which requests to admit and
where: ``in_kernel = True``, ``request_independent = True`` and
:meth:`Term.kernel_worker_costs` (its cost of a placement on each worker, a
constant of the call), still in its own module: the kernels receive the sum of the
kernel terms' worker costs in :class:`~bfio.solvers.terms.kernel.KernelTerms` and
:func:`~bfio.solvers.terms.kernel.candidate_cost` adds it to every candidate's
cost (counted with a throwaway per-worker penalty run through the central path,
issue 43: its module and ``CALL_TERMS``, 2 files). The shortcuts that minimize the
imbalance alone stay, and a term declares what they need:

- ``request_independent`` (the cost does not depend on the request): the greedy's
  ``_pivots``, the heap's largest-that-fits and the local search's replacements
  choose a request by its size alone; a kernel term without it is refused by name
  (:meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms`);
- ``worker_independent`` (nor on the worker): without it the heap's ``_key``
  (the workers by the imbalance's pivot) is not exact, so ``placement: heap``
  refuses the term by name and ``auto`` runs the greedy; the greedy stays exact by
  its generic paths (its forced phase costs every worker with ``candidate_cost``,
  its fill costs every candidate with it, its moves add the worker costs; a per-worker
  constant moves no pivot and cancels in swaps and replacements).

A kernel term of another shape (a cost of the request, or of the placements before
it) needs a field of :class:`~bfio.solvers.terms.kernel.KernelTerms`, its part in
:func:`~bfio.solvers.terms.kernel.candidate_cost` (that one file) and a generic
path for the shortcuts above, not built: today it is refused by name.
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
