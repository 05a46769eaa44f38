"""BF-IO's routing call on the central pool (Section 4, Algorithm 1; issue 43).

:class:`CentralCall` is one solver entry for the whole call: the policy
(:class:`bfio.policies.bfio.BFIO`) holds the options and hands it the routing
state; the call reads its predictions from the policy's
:class:`~bfio.solvers.call_view.CallView` and runs its phases in order:

1. the active requests' predicted loads over the window ``0..H_eff``: tracked
   between calls for a point predictor (:class:`~bfio.lookahead.tracked_loads.TrackedLoads`),
   expected for a probabilistic one;
2. the waiting requests' lifetimes (:meth:`~bfio.solvers.objective.ObjectiveTerms.for_call`);
3. the admission rule: ``drain:N`` (:mod:`bfio.solvers.drain`) places the requests it
   reserved workers for, ``aging:N``/``fifo`` force requests in (:func:`~bfio.solvers.instance.forced_mask`);
4. the placement (:func:`~bfio.solvers.placement.place_terms`: greedy, heap or ``auto``);
5. the call's other terms of ``J`` (:func:`bfio.solvers.terms.call_terms`): those the
   kernels weigh (``in_kernel``, :mod:`bfio.solvers.terms.kernel`) enter phases 3 and 4
   with the call's terms; by the others (the prefix-cache term, the calibrated step's)
   the admitted requests are placed again one at a time (:meth:`CentralCall.place_sequential`).

With an exact backend (or a capture of instances) the call is one Eq. (IO)
instance over all ``H + 1`` offsets solved by :func:`bfio.solvers.solve`.
"""

from __future__ import annotations

import numpy as np

from bfio.lookahead.admission import parse_admission
from bfio.lookahead.tracked_loads import TrackedLoads
from bfio.solvers import solve
from bfio.solvers.call_view import CallView
from bfio.solvers.dispatch import bind
from bfio.solvers.drain import plan_drain
from bfio.solvers.instance import Instance, forced_mask, instance_of_call
from bfio.solvers.placement import place_terms
from bfio.solvers.result import SolverError
from bfio.solvers.terms import call_terms


class CentralCall:
    """The central pool's routing call (module docstring). Built once per policy from
    its resolved options; :meth:`reset` at the start of each run clears what it keeps
    between calls (the tracked loads, ``drain``'s reservations) and its counts."""

    def __init__(self, view: CallView, *, solver: str, admission: str, placement: str, shard_workers: int,
                 local_search_rounds: int, time_limit_s: float, on_solver_error: str):
        self.view = view
        self.solver = solver
        self.admission = admission
        self.admission_mode, self.aging_steps = parse_admission(admission)
        self.placement = placement
        self.shard_workers = shard_workers
        self.local_search_rounds = local_search_rounds
        self.time_limit_s = time_limit_s
        self.on_solver_error = on_solver_error
        self.reset()

    def reset(self) -> None:
        self.forced = 0  # requests admitted by the admission rule (aging:N forced, drain:N placed)
        self.heap_refreshes = 0
        self.gaps: list[float] = []
        self.proven = 0
        self.fallbacks = 0
        self._tracker: TrackedLoads | None = None
        self._reserved: dict[int, int] = {}  # admission drain:N: request id -> its reserved worker

    def route(self, state, capture=None) -> np.ndarray:
        """``assign`` (request of the pool -> worker, or -1) admitting exactly
        ``U = state.admissible > 0`` requests; ``capture``: a callable given the
        call's Eq. (IO) instance (then the instance is what is solved)."""
        view = self.view
        U = state.admissible
        est = None if view.predictor.probabilistic else view.decode_estimate(state.workload)
        if est is None:
            assign = self._route_fast(state, None, U)
        elif self.solver == "fast" and capture is None:
            assign = self._route_fast(state, est, U)
        else:
            terms = view.objective
            if self.solver != "fast":  # the call's other terms of J: expressed by the backend, or refused by name
                terms = terms.with_terms(*call_terms(state, state.pool, view.window(state)))
                terms.check_solver(self.solver)
            inst = instance_of_call(state, est, terms, self.admission)  # over all H + 1 offsets
            if capture is not None:
                capture(inst)
            assign = self._route_exact(inst)
        admitted = int((assign >= 0).sum())
        if admitted != U:  # pragma: no cover - guarded by the solvers
            raise SolverError(self.solver, f"admitted {admitted} requests at step {state.step}, Eq. (IO) needs U = {U}")
        return assign

    def _route_fast(self, state, est: np.ndarray | None, U: int) -> np.ndarray:
        view = self.view
        window = view.objective.window  # H_eff
        tracker = None
        if est is None:  # probabilistic predictor: expected loads (float)
            base, est = view.expected(state, window)
        else:
            tracker = self._tracked(state, est, window)
            base = tracker.loads(state, est)
        sizes = state.pool_prefill
        n = sizes.shape[0]
        ages = state.step - state.enter_step[state.pool]
        free = np.asarray(state.free, dtype=np.int64)
        terms = view.objective.for_call(est, state.pool)  # the waiting requests' lifetimes
        kernel = [term for term in call_terms(state, state.pool, view.window(state)) if term.in_kernel]
        if kernel:  # the call's terms the kernels weigh (bfio.solvers.terms.kernel)
            terms = terms.with_terms(*kernel)
        step_s = state.mean_step_s  # placement auto: the router's time budget (the greedy before a step)
        if self.admission_mode == "drain":
            assign = self._route_drain(base, free, sizes, ages, state.pool, U, terms, step_s)
        else:
            forced = forced_mask((self.admission_mode, self.aging_steps), U, ages)
            if self.admission_mode == "aging" and U < n:
                self.forced += int(forced.sum())
            assign = self._place(base, free, sizes, forced, U, terms, step_s)
        if est is not None or view.step_costs(state) is not None:
            # the call's other terms of J (the prefix-cache term, the calibrated step's): placed by their costs
            assign = self.place_sequential(state, assign, base, est, window)
        if tracker is not None:
            placed = assign >= 0
            tracker.admitted(state.step, state.pool[placed], assign[placed], state.workload.prefill, est)
        return assign

    def place_sequential(self, state, assign: np.ndarray, base: np.ndarray, est: np.ndarray,
                         window: int) -> np.ndarray:
        """Central dispatch with extra terms of ``J`` the kernels do not compute
        (:func:`bfio.solvers.terms.call_terms`; the prefix-cache term, issue 32): the
        requests the solver admitted (its choice of *which* to admit stands) are
        placed again one at a time, oldest first, each on the worker with a free slot
        where ``J`` with every term (:meth:`~bfio.solvers.objective.ObjectiveTerms.candidate_costs`;
        the kernel terms too) is smallest, as instant dispatch binds an arrival
        (:func:`~bfio.solvers.dispatch.bind`). Without such terms (none, or only terms the
        kernels weighed, ``in_kernel``) ``assign`` stands."""
        picked = np.flatnonzero(assign >= 0)
        if picked.size == 0:
            return assign
        view = self.view
        requests = state.pool[picked]
        # built (over the whole workload: 63 ms in a G = 1024 run's first call, issue 40) only
        # when read: by the calibrated step's terms (window) or by an extra term's binding
        lifetimes = None if view.step_costs(state) is None else view.new_lifetimes(est, window, len(state.workload))
        extra = call_terms(state, requests, view.window(state, lambda: view.running_counts(state, window),
                                                        lifetimes))
        if all(term.in_kernel for term in extra):
            return assign
        if lifetimes is None:
            lifetimes = view.new_lifetimes(est, window, len(state.workload))
        free = np.asarray(state.free, dtype=np.int64).copy()
        release = [[0] * int(f) if f > 0 else [window + 1] for f in free.tolist()]
        to = bind(np.asarray(base, dtype=float).copy(), release, requests, state.workload.prefill, lifetimes,
                  view.objective.with_terms(*extra), free=free)
        out = assign.copy()
        out[picked] = to
        return out

    def _place(self, base, free, sizes, forced, U, terms, step_s) -> np.ndarray:
        assign, refreshed = place_terms(base, free, sizes, forced, U, terms, self.placement,
                                        self.local_search_rounds, self.shard_workers, step_s)
        self.heap_refreshes += refreshed
        return assign

    def _route_drain(self, base, free, sizes, ages, pool, U, terms, step_s) -> np.ndarray:
        """Admission ``drain:N`` (:mod:`bfio.solvers.drain`): its placements first, then
        the solver on the other requests and the free slots left."""
        n = sizes.shape[0]
        pre, base_k, free_k = plan_drain(base, free, sizes, terms.kernel_terms(base, n), ages, pool,
                                         self.aging_steps, self._reserved, U == n)
        self.forced += int(((pre >= 0) & (ages >= self.aging_steps)).sum())
        rest = np.flatnonzero(pre < 0)
        U_rest = U - (n - rest.size)
        if U_rest > 0:
            sub = terms.with_lifetimes(None if terms.lifetimes is None else terms.lifetimes[rest])
            forced = np.full(rest.size, U_rest == rest.size)  # Eq. (IO): all of them when all fit
            pre[rest] = self._place(base_k, free_k, sizes[rest], forced, U_rest, sub, step_s)
        return pre

    def _tracked(self, state, est: np.ndarray, window: int) -> TrackedLoads:
        """The run's :class:`~bfio.lookahead.tracked_loads.TrackedLoads` (point estimates, central
        pool): ``Lhat`` from the events since the last call instead of every slot."""
        n = est.shape[0]
        if self._tracker is None or not self._tracker.fits(state.workers, n, window):
            self._tracker = TrackedLoads(state.workers, n, window)
        return self._tracker

    def _route_exact(self, inst: Instance) -> np.ndarray:
        if self.admission_mode == "aging" and inst.admissible < inst.waiting:
            self.forced += int(inst.forced().sum())
        sol = solve(inst, self.solver, time_limit_s=self.time_limit_s, on_error=self.on_solver_error)
        if sol.fallback_from is not None:
            self.fallbacks += 1
        self.proven += int(sol.proven_optimal)
        self.gaps.append(sol.gap)
        return sol.assign

    def exact_summary(self) -> str:
        """The tail of an exact-solver progress line: solves proven optimal, fallbacks."""
        text = f"proven optimal {self.proven}/{len(self.gaps)}"
        return text + (f", {self.fallbacks} fell back" if self.fallbacks else "")


__all__ = ["CentralCall"]
