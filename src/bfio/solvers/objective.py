"""The BF-IO objective, written once (``../shared/spec/semantics.md``, "BF-IO").

At a routing call the integer program (IO) of Section 4 chooses which waiting
requests to admit and where, to minimize the discounted accumulated predicted
imbalance over the lookahead window ``h = 0..H``:

    J = sum_{h=0..H} delta^h [ G max_g Lhat_g(h) - sum_g Lhat_g(h) ]

where ``Lhat_g(h)`` is the predicted load of worker ``g`` at offset ``h``: the
already-active requests' predicted loads plus, for every request ``j`` admitted
to ``g``, ``s_j + h`` while ``h < l_j`` (its lifetime in offsets; ``l_j = H + 1``
means it persists over the whole window).

Two named objectives (:data:`bfio.lookahead.discount.OBJECTIVES`; their names, discounts
and weights live in :mod:`bfio.lookahead.discount`):

- ``default``: the project's choice from the objective study
  (``docs/bfio.md``, "Objective study"): discount :data:`~bfio.lookahead.discount.DEFAULT_DISCOUNT` and,
  with a point predictor, new requests that finish at their predicted decode
  length (``new_requests = predicted``);
- ``paper-literal``: Eq. (IO) exactly as printed, ``delta = 1`` and new
  requests that persist over the window.

Everything that evaluates ``J`` (the instance, brute force, the reports) calls
:func:`imbalance_objective`; the fast solver and the MILP backends take their
weights from :func:`~bfio.lookahead.discount.offset_weights` and their per-request contributions from
:func:`request_profiles`.

The terms of one routing call, computed once (issue 28)
--------------------------------------------------------

:class:`ObjectiveTerms` holds, for one routing call of Eq. (IO), everything
the backends need about ``J`` besides the loads and the constraints: the
window ``H``, the offsets a backend solves (``window``: the fast path's
:func:`~bfio.lookahead.discount.effective_horizon`, or all ``H + 1`` for the exact backends), the
discount ``delta`` and the weights ``delta^h`` over that window, and the
new requests' lifetimes ``l_j`` (``None``: they persist). It is built once per
policy (:meth:`ObjectiveTerms.build`: ``H``, ``delta``, the ``new_requests``
model) and bound to a call's waiting requests by :meth:`ObjectiveTerms.for_call`
(their decode estimates ``o_hat_j``). Its consumers:

- the fast path, :func:`bfio.solvers.fast.solve_fast_terms`,
  :func:`bfio.solvers.heap.solve_heap_terms`,
  :func:`bfio.solvers.shards.solve_sharded_terms` and ``drain:N``
  (:func:`bfio.solvers.drain.plan_drain`): the numba kernels receive the terms as
  ONE argument from :meth:`ObjectiveTerms.kernel_terms` (a
  :class:`~bfio.solvers.terms.kernel.KernelTerms`: lifetimes, weights, the other
  kernel terms' worker costs; the one place where the object becomes a kernel argument);
- the exact backends, through the instance: :func:`bfio.solvers.instance.instance_of_call`
  builds the :class:`~bfio.solvers.instance.Instance` of a call from the terms,
  and :attr:`Instance.terms <bfio.solvers.instance.Instance.terms>` gives them
  back over all ``H + 1`` offsets, from which the instance's weights, profiles
  and ``J`` and the MILP's coefficients (:func:`bfio.solvers.model.build_milp`)
  are taken.

The terms as one interface (issue 43)
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

``J`` is a sum of terms: the imbalance above (:class:`ImbalanceTerm`, whose
data are this object's weights and lifetimes) and the extra terms of the call
(:attr:`ObjectiveTerms.extra`, :class:`bfio.solvers.terms.Term`, e.g. the
prefix-cache term). Every consumer reads all of them through
:class:`ObjectiveTerms`: the value of ``J`` (:meth:`~ObjectiveTerms.evaluate`),
a candidate's cost (:meth:`~ObjectiveTerms.candidate_costs`, instant dispatch
and the central path's sequential placement), the kernel arrays
(:meth:`~ObjectiveTerms.kernel_terms`, which refuse by name a term the kernels do not
compute or whose cost their shortcuts cannot weigh exactly) and the MILP (:meth:`~ObjectiveTerms.milp_costs`, with
:meth:`~ObjectiveTerms.check_solver` refusing, by name, a term an exact backend
cannot express).

How to add a term
~~~~~~~~~~~~~~~~~

A new term is its own module in :mod:`bfio.solvers.terms` plus its factory in
:data:`bfio.solvers.terms.CALL_TERMS` (that package's docstring, "How to add a
term"); nothing here changes, also for a term the fast kernels weigh (its worker
costs, :meth:`bfio.solvers.terms.Term.kernel_worker_costs`, summed by
:meth:`ObjectiveTerms.kernel_terms` into the kernels' one argument).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bfio.lookahead.discount import UNDISCOUNTED, check_discount, check_new_requests, effective_horizon, offset_weights
from bfio.ground.errors import ConfigError
from bfio.solvers.terms.base import Term
from bfio.solvers.terms.kernel import KernelTerms, imbalance_only, with_worker_costs


def request_profiles(sizes: np.ndarray, lifetimes: np.ndarray | None, horizon: int) -> np.ndarray:
    """``(n, H + 1)`` int64: what each new request adds at offset ``h`` if admitted,
    ``s_j + h`` while ``h < l_j`` (``lifetimes=None``: every request persists)."""
    h = np.arange(int(horizon) + 1, dtype=np.int64)
    W = np.asarray(sizes, dtype=np.int64)[:, None] + h[None, :]
    if lifetimes is not None:
        W = np.where(h[None, :] < np.asarray(lifetimes, dtype=np.int64)[:, None], W, 0)
    return W


def imbalance_objective(loads: np.ndarray, weights: np.ndarray):
    """``J = sum_h w_h [G max_g L_g(h) - sum_g L_g(h)]`` for loads ``(..., G, H + 1)``.

    With unit weights and integer loads the result is an exact Python ``int``
    (or an int64 array for stacked loads); otherwise float64.
    """
    L = np.asarray(loads)
    G = L.shape[-2]
    per_offset = G * L.max(axis=-2) - L.sum(axis=-2)  # (..., H + 1)
    w = np.asarray(weights, dtype=np.float64)
    if L.dtype.kind in "iu" and np.all(w == 1.0):
        out = per_offset.astype(np.int64).sum(axis=-1)
        return int(out) if np.ndim(out) == 0 else out
    out = per_offset.astype(np.float64) @ w
    return float(out) if np.ndim(out) == 0 else out


def imbalance_candidate_costs(loads: np.ndarray, add: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per worker ``g``, ``J`` (:func:`imbalance_objective`, float) of the loads
    ``(G, W + 1)`` when ``g`` alone gains ``add[g]``: the envelope is the larger of
    the others' top and ``g``'s new load (``O(G W)``, not ``O(G^2 W)``)."""
    G, W1 = loads.shape
    h = np.arange(W1)
    first = loads.argmax(axis=0)  # per offset the top worker (the first of equal ones)
    top = loads[first, h]
    if G > 1:
        rest = loads.copy()
        rest[first, h] = -np.inf
        second = rest.max(axis=0)
    else:
        second = np.full(W1, -np.inf)
    others = np.where(first[None, :] == np.arange(G)[:, None], second[None, :], top[None, :])
    envelope = np.maximum(others, loads + add)
    return (G * envelope - (loads.sum(axis=0)[None, :] + add)) @ weights


@dataclass(frozen=True, eq=False)
class ImbalanceTerm(Term):
    """The discounted imbalance of Eq. (IO), ``sum_h w_h [G max_g Lhat_g(h) -
    sum_g Lhat_g(h)]`` (Section 4): the first term of ``J``. Its kernel is the fast
    path's (the imbalance's part of :func:`bfio.solvers.terms.kernel.candidate_cost`,
    minimized by ``_pivots`` and the heap's ``_key``); its MILP
    is the aggregated model of :mod:`bfio.solvers.model` itself."""

    weights: np.ndarray
    name = "imbalance"
    in_kernel = True

    def candidate_costs(self, k, loads, add, entry) -> np.ndarray:
        """``J`` with the request on each worker (:func:`imbalance_candidate_costs`)."""
        return imbalance_candidate_costs(loads, add, self.weights)

    def value(self, loads, assign=None):
        return imbalance_objective(loads, self.weights)


#: Lifetime of a new request that persists over the whole window (``new_requests = persist``):
#: beyond every window, so ``h < l_j`` holds at every offset (the kernels clip it to ``H + 1``).
PERSIST = np.int64(2**40)


def persisting(n: int) -> np.ndarray:
    """Lifetimes of ``n`` new requests that persist over any window (``new_requests = persist``)."""
    return np.full(n, PERSIST, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class ObjectiveTerms:
    """The terms of Eq. (IO)'s objective ``J`` at one routing call (Section 4),
    computed once and consumed by every backend (module docstring, "The terms
    of one routing call").

    - ``horizon``: ``H``, the lookahead window ``0..H`` of Eq. (IO) (the
      instance of the call, and the exact backends, hold all ``H + 1`` offsets);
    - ``window``: the last offset solved by this object's consumer:
      ``effective_horizon(H, delta)`` for the fast path (``build(..., fast=True)``,
      offsets of negligible weight left out) or ``H`` (:meth:`full`);
    - ``discount``: ``delta`` in ``(0, 1]``;
    - ``new_requests``: ``predicted`` | ``persist`` (:data:`NEW_REQUEST_MODELS`);
    - ``weights``: ``w_h = delta^h`` for ``h = 0..window`` (:func:`~bfio.lookahead.discount.offset_weights`);
    - ``lifetimes``: ``l_j`` of the call's waiting requests (oldest first; a new
      request adds ``s_j + h`` while ``h < l_j``), ``None`` when they persist
      over the window (and, with ``predicted``, before :meth:`for_call` binds
      the terms to a call);
    - ``extra``: the call's terms of ``J`` besides the imbalance
      (:class:`bfio.solvers.terms.Term`, e.g. the prefix-cache term; :meth:`with_terms`);
    - ``reach``: the fast path's last offset, ``effective_horizon(H, delta)``, found once
      when the terms are built (:meth:`fast` reads it).
    """

    horizon: int
    window: int
    discount: float
    new_requests: str
    weights: np.ndarray
    reach: int
    lifetimes: np.ndarray | None = None
    extra: tuple = ()

    @classmethod
    def build(cls, horizon: int, discount: float = UNDISCOUNTED, new_requests: str = "persist", decode_estimate=None,
              waiting=None, *, fast: bool = False) -> ObjectiveTerms:
        """The terms of Eq. (IO) for window ``H = horizon``, discount ``delta`` and
        the ``new_requests`` model (validated: :class:`ConfigError` naming the
        option), over offsets ``0..effective_horizon(H, delta)`` with ``fast``
        (the fast path) else ``0..H``. With ``decode_estimate`` they are bound to
        a call at once (:meth:`for_call`)."""
        discount = check_discount(discount)
        H = int(horizon)
        reach = effective_horizon(H, discount)
        window = reach if fast else H
        terms = cls(H, window, discount, check_new_requests(new_requests), offset_weights(window, discount), reach)
        return terms if decode_estimate is None else terms.for_call(decode_estimate, waiting)

    def for_call(self, decode_estimate, waiting=None) -> ObjectiveTerms:
        """These terms at one routing call: the lifetimes of its waiting requests.

        ``decode_estimate``: the predictor's ``o_hat`` of the waiting requests
        (oldest first), or of every request of the workload with ``waiting``
        the waiting requests' indices. ``predicted``: ``l_j = max(1, o_hat_j)``
        (Section 4's ``W_hat_j(h) = s_j + h`` while the request is predicted to
        run); ``persist``: ``None`` (the estimate is not read)."""
        if self.new_requests == "persist":
            return self if self.lifetimes is None else self.with_lifetimes(None)
        if decode_estimate is None:
            raise ValueError("new_requests='predicted' needs the decode estimates o_hat_j of the waiting requests")
        est = np.asarray(decode_estimate, dtype=np.int64)
        return self.with_lifetimes(np.maximum(1, est if waiting is None else est[waiting]))

    def with_lifetimes(self, lifetimes) -> ObjectiveTerms:
        """The same terms with the given lifetimes ``l_j`` (``None``: every new
        request persists; the model follows: ``persist`` | ``predicted``)."""
        return replace(self, new_requests="persist" if lifetimes is None else "predicted", lifetimes=lifetimes)

    def full(self) -> ObjectiveTerms:
        """These terms over every offset ``0..H`` (what the exact backends solve)."""
        if self.window == self.horizon:
            return self
        return replace(self, window=self.horizon, weights=offset_weights(self.horizon, self.discount))

    def fast(self) -> ObjectiveTerms:
        """These terms over the fast path's offsets ``0..effective_horizon(H, delta)``
        (the weights are the leading ones of this object's)."""
        window = self.reach
        if window == self.window:
            return self
        if window > self.window:
            raise ValueError(f"terms over offsets 0..{self.window} cannot give the fast window 0..{window}")
        return replace(self, window=window, weights=np.ascontiguousarray(self.weights[:window + 1]))

    def with_terms(self, *extra: Term) -> ObjectiveTerms:
        """The same terms with ``extra`` as the call's terms besides the imbalance."""
        return replace(self, extra=tuple(extra))

    @property
    def terms(self) -> tuple[Term, ...]:
        """Every term of ``J``: the imbalance (:class:`ImbalanceTerm`) then :attr:`extra`."""
        return (ImbalanceTerm(self.weights), *self.extra)

    @property
    def offsets(self) -> int:
        """Number of offsets solved, ``window + 1`` (the width of the loads the consumer takes)."""
        return self.window + 1

    @property
    def integral(self) -> bool:
        """True when ``J`` is an integer for integer loads (``delta = 1``, no extra term:
        an extra term's costs may be fractional)."""
        return self.discount == 1.0 and not self.extra

    def profiles(self, sizes: np.ndarray) -> np.ndarray:
        """``(n, window + 1)`` int64: what each waiting request of prefill ``sizes``
        adds at offset ``h`` if admitted (:func:`request_profiles`)."""
        return request_profiles(sizes, self.lifetimes, self.window)

    def request_values(self, sizes: np.ndarray) -> np.ndarray:
        """``sum_h w_h P_j(h)`` (float64): how much admitting request ``j`` lowers
        ``J`` through ``- sum_g Lhat_g(h)``, whatever worker it joins (the part of
        ``J`` that is linear in the admitted requests)."""
        return self.profiles(sizes).astype(np.float64) @ self.weights

    def evaluate(self, loads: np.ndarray, assign: np.ndarray | None = None):
        """``J`` of predicted loads ``(..., G, window + 1)``: the sum of every term's
        :meth:`~bfio.solvers.terms.Term.value` (:func:`imbalance_objective` alone
        without :attr:`extra`; the extra terms also read ``assign``)."""
        J = imbalance_objective(loads, self.weights)
        if self.extra and assign is None:
            raise ValueError(f"the objective's terms {[t.name for t in self.extra]} need the assignment")
        for term in self.extra:
            J = J + term.value(loads, assign)
        return J

    def candidate_costs(self, k: int, loads: np.ndarray, add: np.ndarray, entry: np.ndarray) -> np.ndarray:
        """Per worker, ``J`` when the ``k``-th request of the call joins it (the sum of
        every term's :meth:`~bfio.solvers.terms.Term.candidate_costs`; ``loads``,
        ``add`` ``(G, window + 1)``, ``entry`` the offsets at which each worker would
        admit it); follow the binding with :meth:`bound`."""
        J = imbalance_candidate_costs(loads, add, self.weights)
        for term in self.extra:
            J = J + term.candidate_costs(k, loads, add, entry)
        return J

    def bound(self, k: int, g: int) -> None:
        """The ``k``-th request of the call was bound to worker ``g`` (each term's
        :meth:`~bfio.solvers.terms.Term.bound`)."""
        for term in self.extra:
            term.bound(k, g)

    def check_solver(self, solver: str, key: str = "solver") -> None:
        """Refuse, with a :class:`ConfigError` naming ``key`` and the term, a term the
        exact backend ``solver``'s MILP cannot express (no
        :meth:`~bfio.solvers.terms.Term.linear_costs`)."""
        for term in self.extra:
            if not term.linear:
                raise ConfigError(f"{key}: objective term {term.name!r} cannot be expressed by solver {solver!r} "
                                  f"(it is not linear in the assignment); use solver='fast'")

    def milp_costs(self, workers: int, n: int, solver: str = "exact") -> np.ndarray | None:
        """``(n, G)`` the extra terms' costs of ``x_jg`` in the MILP (the sum of their
        :meth:`~bfio.solvers.terms.Term.linear_costs`), ``None`` without extra terms;
        a term that is not linear is refused naming ``solver`` (:meth:`check_solver`)."""
        if not self.extra:
            return None
        self.check_solver(solver)
        out = np.zeros((n, workers), dtype=np.float64)
        for term in self.extra:
            out = out + term.linear_costs(workers)
        return out

    @property
    def worker_dependent(self) -> bool:
        """True when a kernel term's cost depends on the worker (the heap's keys are not
        exact for it: :meth:`kernel_terms` refuses it for the heap, ``auto`` runs the greedy)."""
        return any(term.in_kernel and not term.worker_independent for term in self.extra)

    def kernel_terms(self, base: np.ndarray, n: int, placement: str = "greedy") -> KernelTerms:
        """The terms as the numba kernels take them, ONE argument
        (:class:`~bfio.solvers.terms.kernel.KernelTerms`; :func:`bfio.solvers.fast.place_fast`,
        :func:`bfio.solvers.heap.place_heap`, :func:`bfio.solvers.drain.plan_drain`): the
        lifetimes of the ``n`` waiting requests (:data:`PERSIST` when they persist), the
        offset weights and the kernel terms' costs per worker, summed
        (:meth:`~bfio.solvers.terms.Term.kernel_worker_costs`); ``base`` (the active
        requests' loads) must span exactly the offsets ``0..window``.

        Refused by name (``ValueError``): a term the kernels do not weigh (``in_kernel =
        False``; the central path places by its candidate costs instead), a kernel term
        whose cost depends on the request (``request_independent = False``: ``_pivots``,
        the heap's largest-that-fits and the local search's replacements choose a request
        by its size alone), and, for ``placement = "heap"``, a kernel term whose cost
        depends on the worker (the heap's ``_key``, :attr:`worker_dependent`)."""
        for term in self.extra:
            if not term.in_kernel:
                raise ValueError(f"objective term {term.name!r} has no kernel (bfio.solvers.terms, "
                                 "'How to add a term'): the fast kernels cannot weigh it")
            if not term.request_independent:
                raise ValueError(f"objective term {term.name!r} depends on the request: the fast kernels' "
                                 "shortcuts (_pivots, the heap's largest-that-fits, the local search's "
                                 "replacements) choose a request by its size alone")
            if placement == "heap" and not term.worker_independent:
                raise ValueError(f"objective term {term.name!r} depends on the worker: the heap's keys "
                                 "order the workers by the imbalance alone; use placement 'greedy'")
        if base.shape[-1] != self.window + 1:
            raise ValueError(f"loads over {base.shape[-1]} offsets, the objective's terms are over "
                             f"0..{self.window} ({self.window + 1})")
        if self.lifetimes is None:
            if self.new_requests != "persist":
                raise ValueError("new_requests='predicted': bind the terms to the call first (for_call)")
            life = persisting(n)
        elif self.lifetimes.shape[0] != n:
            raise ValueError(f"{self.lifetimes.shape[0]} lifetimes for {n} waiting requests")
        else:
            life = self.lifetimes
        G = base.shape[0]
        if not self.extra:
            return imbalance_only(life, self.weights, G)
        worker_cost = np.zeros(G, dtype=np.float64)
        for term in self.extra:
            worker_cost = worker_cost + np.asarray(term.kernel_worker_costs(G), dtype=np.float64)
        return with_worker_costs(life, self.weights, worker_cost, self.worker_dependent)


__all__ = ["PERSIST", "request_profiles", "imbalance_objective", "imbalance_candidate_costs", "persisting", "ImbalanceTerm",
           "ObjectiveTerms"]
