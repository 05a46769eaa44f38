"""The base class of the extra terms of BF-IO's objective ``J`` (Section 4, Eq. (IO);
:mod:`bfio.solvers.terms`, "How to add a term")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class CallWindow:
    """What a routing call's caller predicts over the window ``0..W`` besides the
    loads, for the terms that read it (:func:`bfio.solvers.terms.call_terms`):

    - ``weights``: the offset weights ``w_h`` of the imbalance term (the call's
      :attr:`ObjectiveTerms.weights <bfio.solvers.objective.ObjectiveTerms.weights>`);
    - ``step_costs``: the run's calibrated step coefficients
      (:class:`bfio.step_model.StepCoefficients`) when the policy weighs them, else ``None``;
    - ``counts``: ``(G, W + 1)`` the predicted number of requests on each worker at
      each offset before the call's bindings (the same prediction as the loads:
      running requests while ``h < r_i``, queued ones over their predicted stay),
      ``None`` when the caller has none (an exact backend's instance);
    - ``lifetimes``: per request of the workload the steps it is modelled to stay
      once placed (the objective's new-request model), ``None`` with ``counts``."""

    weights: np.ndarray
    step_costs: object | None = None
    counts: np.ndarray | None = None
    lifetimes: np.ndarray | None = None


class Term:
    """One term of ``J`` at one routing call (module docstring).

    A term may be sequential: the requests of a call are bound one at a time
    (:meth:`candidate_costs` of the ``k``-th, then :meth:`bound`), each seeing the
    earlier bindings."""

    #: the term's name, as errors and docs give it
    name: str = ""
    #: True when the fast path's numba kernels weigh this term (its costs per worker,
    #: :meth:`kernel_worker_costs`, enter :func:`bfio.solvers.terms.kernel.candidate_cost`)
    in_kernel: bool = False
    #: True when the term's cost of placing a request does not depend on the request
    #: (``c_jg = b_g``): what the kernels' shortcuts that choose a request by its size
    #: alone need to stay exact (the greedy's ``_pivots``, the heap's largest-that-fits,
    #: the local search's replacements); the kernels refuse a term without it, by name
    request_independent: bool = False
    #: True when the term's cost does not depend on the worker either (a constant per
    #: request: it changes no placement); without it the heap's ``_key`` (the workers by
    #: the imbalance's pivot alone) is not exact and the heap refuses the term by name,
    #: while the greedy stays exact (its phases' docstrings, :mod:`bfio.solvers.fast`)
    worker_independent: bool = False
    #: True when the term is linear in the assignment (:meth:`linear_costs`): the
    #: exact backends' MILP holds it; they refuse a run with a term that is not
    linear: bool = False

    def candidate_costs(self, k: int, loads: np.ndarray, add: np.ndarray, entry: np.ndarray) -> np.ndarray:
        """Per worker ``g``, the change of this term of ``J`` when the ``k``-th request
        of the call joins ``g``: ``loads`` ``(G, W + 1)`` the predicted loads before,
        ``add`` ``(G, W + 1)`` what the request adds on each worker, ``entry[g]`` the
        offset at which ``g`` would admit it."""
        raise NotImplementedError

    def bound(self, k: int, g: int) -> None:
        """The ``k``-th request of the call was bound to worker ``g`` (after :meth:`candidate_costs`)."""

    def value(self, loads: np.ndarray, assign: np.ndarray):
        """This term's part of ``J`` for ``assign`` (request -> worker or -1) with
        predicted loads ``loads``."""
        raise NotImplementedError

    def kernel_worker_costs(self, workers: int) -> np.ndarray:
        """``(G,)`` this term's cost of placing any waiting request on worker ``g``, for a
        term with ``in_kernel = True`` (constant over the call: linear in the assignment
        and independent of the request), what the kernels add to a candidate's cost."""
        raise NotImplementedError

    def linear_costs(self, workers: int) -> np.ndarray:
        """``(n, G)`` costs ``c_jg`` with this term ``= sum_{j,g} c_jg x_jg`` (the MILP's
        coefficients), for a term with ``linear = True`` (an exact backend cannot
        express another and refuses the run)."""
        raise NotImplementedError


__all__ = ["CallWindow", "Term"]
