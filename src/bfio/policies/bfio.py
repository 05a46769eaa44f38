"""BF-IO: Balance Future with Integer Optimization (Section 4, Algorithm 1).

At every routing call the router solves the integer program (IO): choose
``x_jg in {0, 1}`` admitting exactly ``U = min(|R_wait|, sum_g cap_g)``
waiting requests, at most ``cap_g`` per worker, to minimize the discounted
accumulated predicted imbalance over the lookahead window

    J = sum_{h=0..H} delta^h [ G max_g Lhat_g(h) - sum_g Lhat_g(h) ],

where ``Lhat_g(h)`` are the predicted loads of the active requests (from the
lookahead predictor) plus ``s_j + h`` for every request admitted to ``g`` while
``h < l_j`` (``../shared/spec/semantics.md``, "BF-IO"; the formula lives in
:mod:`bfio.solvers.objective`). ``J``'s other terms (the prefix-cache term with the
prefill model) are :mod:`bfio.solvers.terms`; every backend reads all of them
through :class:`~bfio.solvers.objective.ObjectiveTerms` (``docs/architecture.md``).

Options (all keyword, validated; errors name the option):

- ``horizon`` (``H``, default 20, :data:`DEFAULT_HORIZON`): lookahead window length;
- ``predictor``: ``oracle`` (default) | ``noisy`` | ``none`` | ``empirical`` |
  ``geometric`` (:mod:`bfio.predictors`; the last two are oracle-free: they learn
  the decode-length distribution from completed requests and give expected,
  fractional loads, so they need ``solver='fast'`` and ``new_requests='persist'``;
  every predictor serves both the central pool and instant dispatch, issue 44);
- ``noise_low``/``noise_high`` (``d_lo``/``d_hi``, default 0.2 each): width of
  the noisy predictor's ``U[1 - d_lo, 1 + d_hi]`` factor;
- ``solver``: ``fast`` (default) | ``highs`` | ``gurobi`` (:mod:`bfio.solvers`); an exact
  backend reports its solves (count, mean time) every 30 s on stderr, quiet when ``CI``
  is set (:class:`bfio.ground.progress.CallProgress`);
- ``admission``: ``drain:100`` (default with ``solver = fast``, :data:`DEFAULT_ADMISSION`;
  ``aging:200`` with an exact backend, :data:`DEFAULT_EXACT_ADMISSION`) | ``aging:N``
  (requests waiting ``N`` or more steps are admitted first, the rest free) | ``drain:N``
  (a request waiting ``N`` steps reserves the worker where it raises ``J`` least, which
  takes only the smallest requests until it fits there without raising the envelope, at
  the latest at ``2 N`` steps; ``solver = fast``; :mod:`bfio.policies.drain`) | ``free``
  (Eq. (IO) as stated; the paper's tables, see :data:`bfio.runs.paper.PAPER_BFIO_OPTIONS`) |
  ``fifo`` (oldest ``U`` admitted, placement optimized). The default is issue 40's
  decision (``docs/studies.md``, section 3): an admission that bounds the wait is judged
  by its whole-run throughput against ``free`` (at most 0.5% lower) and its longest wait
  (at most 10x ``free``'s p99 wait) on every setting of the starvation and online
  studies; ``free`` lets a few requests wait thousands of steps;
- ``on_solver_error``: ``fail`` (default) | ``fallback`` (gurobi -> highs -> fast);
- ``time_limit_s`` (default 10): time limit per exact solve;
- ``objective``: ``default`` | ``paper-literal``
  (:data:`bfio.lookahead.discount.OBJECTIVES`): the defaults of the next two
  options. ``default`` is the objective study's choice (``docs/bfio.md``);
  ``paper-literal`` is Eq. (IO) as printed (``delta = 1``, new requests persist);
- ``discount`` (``delta`` in ``(0, 1]``): weight ``delta^h`` of offset ``h``
  (default: the objective's);
- ``new_requests``: ``predicted`` (a new request adds ``s_j + h`` while
  ``h < o_hat_j``, its predicted decode length; the default objective's choice
  with a point predictor) | ``persist`` (it adds ``s_j + h`` at every offset; always
  the case for predictors that know nothing of new requests: ``none`` and the
  oracle-free ones);
- ``placement`` (``solver = fast`` only): ``auto`` (default, :data:`DEFAULT_PLACEMENT`:
  the greedy while its modelled cost is within 5% of the decode step, else the heap) |
  ``greedy`` (:mod:`bfio.solvers.fast`; the paper's experiments) | ``heap``
  (:mod:`bfio.solvers.heap`: largest-that-fits on a heap of headrooms,
  ``O(U (log G + H_eff))`` per call, for large clusters; ``shard_workers`` does not
  apply to it). Registry: :data:`bfio.solvers.PLACEMENTS`;
- ``shard_workers`` (default 256, :data:`bfio.solvers.shards.DEFAULT_SHARD_WORKERS`;
  ``solver = fast`` only): a routing call with more workers with free slots is
  split into shards of at most this many (:mod:`bfio.solvers.shards`); 0 never splits;
- ``step_terms``: ``auto`` (default) | ``off``: with the calibrated step model
  (``docs/step_model.md``; the views' ``step_costs``) ``auto`` adds the step's
  per-request term to ``J`` (:mod:`bfio.solvers.terms.batch`: a decoding request
  weighs ``(a_n + beta) / a_kv`` KV tokens per step); ``off`` balances KV tokens
  alone. With the paper's step there is no such term either way.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.jit import run_clock
from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, Policy, RoutingState
from bfio.policies.bfio_instant import InstantBinding
from bfio.policies.bfio_options import LOCAL_SEARCH_ROUNDS, OPTIONS
from bfio.lookahead.admission import DEFAULT_ADMISSION, DEFAULT_EXACT_ADMISSION
from bfio.policies.drain import plan_drain
from bfio.predictors import default_remaining, make_predictor
from bfio.ground.progress import CallProgress
from bfio.solvers import GREEDY_PLACEMENT, SolverError, solve
from bfio.solvers.dispatch import bind
from bfio.solvers.instance import Instance, forced_mask, instance_of_call
from bfio.lookahead.admission import parse_admission
from bfio.solvers.objective import ObjectiveTerms
from bfio.lookahead.discount import OBJECTIVES
from bfio.solvers.placement import place_terms
from bfio.lookahead.tracked_loads import TrackedLoads
from bfio.solvers.terms import CallWindow, call_terms

@register
class BFIO(InstantBinding, Policy):
    name = "bfio"
    options = OPTIONS
    dispatch_modes = DISPATCH_MODES  # central (the paper's pool) and instant (bfio.solvers.dispatch)
    #: options of the central pool's integer program only: with instant dispatch the
    #: queues are FIFO and the binding rule is bfio.solvers.dispatch's (refused there)
    central_only_options = ("admission", "solver", "on_solver_error", "time_limit_s", "shard_workers", "placement")

    def __init__(self, seed: int = 0, **options):
        super().__init__(seed=seed, **options)
        v = self.option_values
        self.horizon = v["horizon"]
        predictor = v["predictor"]
        self.solver = v["solver"]
        if v["remaining"] is None:
            v["remaining"] = default_remaining(self.solver)
        self.predictor = make_predictor(predictor, v["noise_low"], v["noise_high"], seed, noise_sigma=v["noise_sigma"],
                                        bucket_accuracy=v["bucket_accuracy"], remaining=v["remaining"])
        if self.predictor.probabilistic and self.solver != "fast":
            raise ConfigError(f"solver: predictor={predictor!r} gives expected (fractional) loads, which only "
                              f"solver='fast' accepts (got solver={self.solver!r}); the exact backends prove "
                              "optimality of integer J: use solver='fast' or predictor oracle | noisy | none")
        if v["admission"] is None:
            v["admission"] = DEFAULT_ADMISSION if self.solver == "fast" else DEFAULT_EXACT_ADMISSION
        self.admission = v["admission"]
        self.admission_mode, self.aging_steps = parse_admission(self.admission)
        if self.admission_mode == "drain" and self.solver != "fast":
            raise ConfigError(f"admission: {self.admission!r} reserves workers from the predicted loads of the fast "
                              f"solver's calls; it needs solver='fast' (got solver={self.solver!r})")
        self.on_solver_error = v["on_solver_error"]
        self.time_limit_s = v["time_limit_s"]
        self.shard_workers = v["shard_workers"]
        self.placement = v["placement"]
        self.report_interval = v["report_interval"]
        self.step_terms = v["step_terms"]
        # an exact backend has no placement of its own: a placement given for it (but the greedy,
        # the paper's, which a config may set for every BF-IO row) would be ignored
        if self.solver != "fast" and options.get("placement", GREEDY_PLACEMENT) != GREEDY_PLACEMENT:
            raise ConfigError(f"placement: {self.placement!r} is a placement of solver='fast' "
                              f"(got solver={self.solver!r})")
        self.objective = v["objective"]
        chosen = OBJECTIVES[self.objective]
        discount = chosen["discount"] if v["discount"] is None else v["discount"]  # in (0, 1]: the option's check
        new_requests = v["new_requests"]
        lifetimes = not self.predictor.probabilistic or getattr(self.predictor, "gives_lifetimes", False)
        if new_requests is None:  # the objective's model; predictors without o_hat_j keep new requests
            new_requests = chosen["new_requests"] if lifetimes else "persist"
        if new_requests == "predicted" and not lifetimes:
            raise ConfigError(f"new_requests: 'predicted' needs a point estimate o_hat_j of each new request "
                              f"(predictor oracle | noisy | none), got predictor={predictor!r}")
        self.new_requests = new_requests
        # the objective's terms, computed once (bfio.solvers.objective.ObjectiveTerms): the fast
        # solver's window 0..effective_horizon (offsets whose weight is negligible are left out)
        # and its weights; the exact backends see all H + 1; the lifetimes are bound per call
        self._objective = ObjectiveTerms.build(self.horizon, discount, self.new_requests, fast=True)
        self.discount = self._objective.discount  # as a float, as build checked it
        v.update(discount=self.discount, new_requests=self.new_requests)  # resolved: the run's identity
        self.capture = None  # optional callable(Instance) -> None, see capture_instances()
        self.reset(0, 0)

    # -- configuration ----------------------------------------------------------------
    def describe(self) -> dict:
        """The run's identity (:func:`bfio.ground.options.identity`: every option
        but those that do not apply, ``placement`` only when not the default)."""
        return super().describe()

    def capture_instances(self, sink) -> None:
        """Call ``sink(instance)`` with the Eq. (IO) instance of every routing call
        (for saving real simulation steps and re-solving them with every backend)."""
        if self.predictor.probabilistic and sink is not None:
            raise ConfigError(f"predictor: {self.predictor.name!r} gives fractional loads, which instances "
                              "(integer JSON, exact backends) do not hold; capture with oracle | noisy | none")
        if self.admission_mode == "drain" and sink is not None:
            raise ConfigError(f"admission: {self.admission!r} places requests before the solver, which an instance "
                              "does not describe; capture with free | fifo | aging:N")
        self.capture = sink

    def reset(self, workers: int, slots: int) -> None:
        self.predictor.reset()
        self._estimate = None
        self._estimate_key = None
        self._lifetimes = None  # (est, window, n, lifetimes): _new_lifetimes' last answer
        self._times: list[float] = []
        self._move_times: list[float] = []  # plan_moves (issue 45)
        self._migration_times: list[float] = []  # plan_migrations (issue 45)
        self._migration_terms: dict = {}  # plan_migrations' objective per horizon
        self._gaps: list[float] = []
        self._proven = 0
        self._fallbacks = 0
        self._forced = 0
        self._heap_refreshes = 0
        self._tracker: TrackedLoads | None = None
        self._reserved: dict[int, int] = {}  # admission drain:N: request id -> its reserved worker
        self._report: dict | None = None  # instant dispatch with report_interval: the last report
        # exact backends (highs, gurobi): a line every CALL_PROGRESS_EVERY_S seconds with the
        # solves done and their mean time (issue 31 item 5: minutes without output otherwise)
        self._exact_progress = (CallProgress(f"BF-IO exact solver {self.solver} (H={self.horizon}, time limit "
                                             f"{self.time_limit_s:g} s/solve)", unit="solve")
                                if self.solver != "fast" else None)

    # -- routing ----------------------------------------------------------------------
    def _decode_estimate(self, workload) -> np.ndarray:
        key = (id(workload), len(workload))
        if self._estimate_key != key:
            self._estimate = self.predictor.decode_estimate(workload.decode)
            self._estimate_key = key
        return self._estimate

    def route(self, state: RoutingState) -> np.ndarray:
        if self.report_interval:
            raise ConfigError("report_interval: lagged load reports are modelled for dispatch 'instant'; a central "
                              "pool reads the exact state")
        n = state.pool.shape[0]
        U = state.admissible
        if U == 0:
            return np.full(n, -1, dtype=np.int64)
        t0 = run_clock()
        est = None if self.predictor.probabilistic else self._decode_estimate(state.workload)
        if est is None:
            assign = self._route_fast(state, None, U)
        elif self.solver == "fast" and self.capture is None:
            assign = self._route_fast(state, est, U)
        else:
            terms = self._objective
            if self.solver != "fast":  # the call's other terms of J: expressed by the backend, or refused by name
                terms = terms.with_terms(*call_terms(state, state.pool, self._window(state)))
                terms.check_solver(self.solver)
            inst = instance_of_call(state, est, terms, self.admission)  # over all H + 1 offsets
            if self.capture is not None:
                self.capture(inst)
            assign = self._route_exact(inst)
        self._times.append(run_clock() - t0)
        if self._exact_progress is not None and est is not None:
            self._exact_progress.record(self._times[-1], step=state.step, extra=self._exact_summary)
        admitted = int((assign >= 0).sum())
        if admitted != U:  # pragma: no cover - guarded by the solvers
            raise SolverError(self.solver, f"admitted {admitted} requests at step {state.step}, Eq. (IO) needs U = {U}")
        return assign

    def _route_fast(self, state: RoutingState, est: np.ndarray | None, U: int) -> np.ndarray:
        window = self._objective.window  # H_eff
        tracker = None
        if est is None:  # probabilistic predictor: expected loads (float)
            base, est = self._expected(state, window)
        else:
            tracker = self._tracked(state, est, window)
            base = tracker.loads(state, est)
        sizes = state.pool_prefill
        n = sizes.shape[0]
        ages = state.step - state.enter_step[state.pool]
        free = np.asarray(state.free, dtype=np.int64)
        terms = self._objective.for_call(est, state.pool)  # the waiting requests' lifetimes
        step_s = state.mean_step_s  # placement auto: the router's time budget (the greedy before a step)
        if self.admission_mode == "drain":
            assign = self._route_drain(base, free, sizes, ages, state.pool, U, terms, step_s)
        else:
            forced = forced_mask(self.admission, U, ages)
            if self.admission_mode == "aging" and U < n:
                self._forced += int(forced.sum())
            assign = self._place(base, free, sizes, forced, U, terms, step_s)
        if est is not None or self._step_costs(state) is not None:
            # the call's other terms of J (the prefix-cache term, the calibrated step's): placed by their costs
            assign = self._place_sequential(state, assign, base, est, window)
        if tracker is not None:
            placed = assign >= 0
            tracker.admitted(state.step, state.pool[placed], assign[placed], state.workload.prefill, est)
        return assign

    def _expected(self, state, window: int) -> tuple[np.ndarray, np.ndarray | None]:
        """A probabilistic predictor's view of a call (central or instant): the ``(G,
        window + 1)`` expected loads of the running requests, ``E[Lhat_g(h)] = sum_i
        (s_i + tau_i + h) P(r_i > h)`` (the predictor's ``expected_loads``), and the
        new requests' expected lengths (``gives_lifetimes``) or ``None`` (they persist)."""
        base = self.predictor.expected_loads(state, window)
        est = None
        if getattr(self.predictor, "gives_lifetimes", False):  # new requests: their expected lengths
            est = self.predictor.expected_lengths(state.workload)
        return base, est

    def _new_lifetimes(self, est: np.ndarray | None, window: int, n: int) -> np.ndarray:
        """The steps each of the ``n`` requests of the workload is modelled to stay once
        placed (the objective's new-request model): its predicted length ``est``
        (``new_requests: predicted``) or the whole window (``persist``; ``est`` unread,
        ``None`` for a predictor without lengths).

        Kept between calls while ``est`` is the same array (the point predictors'
        :meth:`_decode_estimate` is one array a workload): it spans the whole
        workload, and recomputing it each call cost 1.4 ms of a 3.5 ms call at
        G = 1024, N = 1.5M (issue 40). Read-only, so no caller can change it."""
        kept = self._lifetimes
        if kept is not None and kept[0] is est and kept[1:3] == (window, n):
            return kept[3]
        out = self._lifetimes_of(est, window, n)
        out.flags.writeable = False
        self._lifetimes = (est, window, n, out)  # holds est: its id cannot be reused while kept
        return out

    def _lifetimes_of(self, est: np.ndarray | None, window: int, n: int) -> np.ndarray:
        """The new-request model's lifetimes (:meth:`_new_lifetimes`, computed afresh, not kept)."""
        return np.maximum(1, est) if self.new_requests == "predicted" else np.full(n, window + 1)

    def _place_sequential(self, state: RoutingState, assign: np.ndarray, base: np.ndarray, est: np.ndarray,
                          window: int) -> np.ndarray:
        """Central dispatch with extra terms of ``J`` the kernels do not compute
        (:func:`bfio.solvers.terms.call_terms`; the prefix-cache term, issue 32): the
        requests the solver admitted (its choice of *which* to admit stands) are
        placed again one at a time, oldest first, each on the worker with a free slot
        where ``J`` with every term (:meth:`~bfio.solvers.objective.ObjectiveTerms.candidate_costs`)
        is smallest, as instant dispatch binds an arrival (:func:`~bfio.solvers.dispatch.bind`).
        Without such terms ``assign`` stands."""
        picked = np.flatnonzero(assign >= 0)
        if picked.size == 0:
            return assign
        requests = state.pool[picked]
        # built (over the whole workload: 63 ms in a G = 1024 run's first call, issue 40) only
        # when read: by the calibrated step's terms (_window) or by an extra term's binding
        lifetimes = None if self._step_costs(state) is None else self._new_lifetimes(est, window,
                                                                                     len(state.workload))
        extra = call_terms(state, requests, self._window(state, lambda: self._running_counts(state, window),
                                                         lifetimes))
        if not extra:
            return assign
        if lifetimes is None:
            lifetimes = self._new_lifetimes(est, window, len(state.workload))
        free = np.asarray(state.free, dtype=np.int64).copy()
        release = [[0] * int(f) if f > 0 else [window + 1] for f in free.tolist()]
        to = bind(np.asarray(base, dtype=float).copy(), release, requests, state.workload.prefill, lifetimes,
                  self._objective.with_terms(*extra), free=free)
        out = assign.copy()
        out[picked] = to
        return out

    def _place(self, base, free, sizes, forced, U, terms, step_s) -> np.ndarray:
        assign, refreshed = place_terms(base, free, sizes, forced, U, terms, self.placement, LOCAL_SEARCH_ROUNDS,
                                        self.shard_workers, step_s)
        self._heap_refreshes += refreshed
        return assign

    def _route_drain(self, base, free, sizes, ages, pool, U, terms, step_s) -> np.ndarray:
        """Admission ``drain:N`` (:mod:`bfio.policies.drain`): its placements first, then
        the solver on the other requests and the free slots left."""
        n = sizes.shape[0]
        life, weights = terms.kernel_arrays(base, n)
        pre, base_k, free_k = plan_drain(base, free, sizes, life, ages, pool, self.aging_steps,
                                         np.asarray(weights, dtype=float), self._reserved, U == n)
        self._forced += int(((pre >= 0) & (ages >= self.aging_steps)).sum())
        rest = np.flatnonzero(pre < 0)
        U_rest = U - (n - rest.size)
        if U_rest > 0:
            sub = terms.with_lifetimes(None if terms.lifetimes is None else terms.lifetimes[rest])
            forced = np.full(rest.size, U_rest == rest.size)  # Eq. (IO): all of them when all fit
            pre[rest] = self._place(base_k, free_k, sizes[rest], forced, U_rest, sub, step_s)
        return pre

    def _tracked(self, state: RoutingState, est: np.ndarray, window: int) -> TrackedLoads:
        """The run's :class:`~bfio.lookahead.tracked_loads.TrackedLoads` (point estimates, central
        pool): ``Lhat`` from the events since the last call instead of every slot."""
        n = est.shape[0]
        if self._tracker is None or not self._tracker.fits(state.workers, n, window):
            self._tracker = TrackedLoads(state.workers, n, window)
        return self._tracker

    def _step_costs(self, state):
        """The run's calibrated step coefficients when ``J`` weighs them (``step_terms:
        auto`` and a calibrated run), else ``None``."""
        return getattr(state, "step_costs", None) if self.step_terms == "auto" else None

    def _window(self, state, counts=None, lifetimes=None) -> CallWindow:
        """The call's :class:`~bfio.solvers.terms.CallWindow`: the objective's weights, the
        step coefficients :meth:`_step_costs` and, when they are weighed, the predicted
        request counts (``counts()``, computed only then) and the new requests' lifetimes."""
        step = self._step_costs(state)
        if step is None or counts is None:
            return CallWindow(self._objective.weights, step)
        return CallWindow(self._objective.weights, step, counts(), lifetimes)

    def _survival(self, state, window: int) -> np.ndarray:
        """``(running, window + 1)``: ``P(r_i > h)`` of each running request (the busy
        slots in row order), read off its own expected load ``(s_i + tau_i + h)
        P(r_i > h)``: the probabilistic predictor's ``expected_loads`` with each
        running request on a row of its own (the central path's formula)."""
        sr = state.slot_request
        ids = sr[sr >= 0]
        alone = replace(state, slot_request=np.ascontiguousarray(ids[:, None]))
        own = self.predictor.expected_loads(alone, window)  # (running, window + 1)
        h = np.arange(window + 1, dtype=np.float64)
        volume = (state.workload.prefill[ids] + state.generated[ids]).astype(np.float64)
        return own / (volume[:, None] + h[None, :])

    def _running_counts(self, state, window: int) -> np.ndarray:
        """``(G, window + 1)`` float: the predicted number of running requests on each
        worker at each offset, as the loads predict them: a point predictor's
        ``[h < r_i]``, ``r_i = max(1, o_hat_i - tau_i)``; a probabilistic one's
        ``P(r_i > h)`` (:meth:`_survival`)."""
        sr = state.slot_request
        G = sr.shape[0]
        h = np.arange(window + 1)
        busy = sr >= 0
        if not busy.any():
            return np.zeros((G, window + 1))
        if self.predictor.probabilistic:
            out = np.zeros((G, window + 1))
            np.add.at(out, np.nonzero(busy)[0], self._survival(state, window))
            return out
        est = self._decode_estimate(state.workload)
        ids = np.where(busy, sr, 0)
        r = np.where(busy, np.maximum(1, est[ids] - state.generated[ids]), 0)
        return (r[:, :, None] > h[None, None, :]).sum(axis=1).astype(np.float64)

    def _route_exact(self, inst: Instance) -> np.ndarray:
        if self.admission_mode == "aging" and inst.admissible < inst.waiting:
            self._forced += int(inst.forced().sum())
        sol = solve(inst, self.solver, time_limit_s=self.time_limit_s, on_error=self.on_solver_error)
        if sol.fallback_from is not None:
            self._fallbacks += 1
        self._proven += int(sol.proven_optimal)
        self._gaps.append(sol.gap)
        return sol.assign

    def _exact_summary(self) -> str:
        """The tail of an exact-solver progress line: solves proven optimal, fallbacks."""
        text = f"proven optimal {self._proven}/{len(self._gaps)}"
        return text + (f", {self._fallbacks} fell back" if self._fallbacks else "")

    def stats(self) -> dict:
        t = np.asarray(self._times)
        out = {"solver_calls": int(t.size), "solver_fallbacks": self._fallbacks,
               "fast_solver_horizon": self._objective.window}
        if t.size:
            out.update({"solver_s_p50": float(np.percentile(t, 50)), "solver_s_p99": float(np.percentile(t, 99)),
                        "solver_s_max": float(t.max()), "solver_s_total": float(t.sum())})
        if self._gaps:
            g = np.asarray(self._gaps)
            out.update({"solver_proven_optimal_frac": self._proven / len(g),
                        "solver_gap_p50": float(np.median(g)), "solver_gap_max": float(g.max())})
        if self.admission_mode == "aging":
            out["aging_forced_admissions"] = self._forced
        elif self.admission_mode == "drain":
            out["drain_admissions"] = self._forced
        if self.placement != "greedy":
            out["heap_key_refreshes"] = self._heap_refreshes
        if self._move_times:
            out.update({"move_plan_calls": len(self._move_times), "move_plan_s_total": float(sum(self._move_times))})
        if self._migration_times:
            out.update({"migration_plan_calls": len(self._migration_times),
                        "migration_plan_s_total": float(sum(self._migration_times))})
        out.update(self.predictor.stats())
        return out
