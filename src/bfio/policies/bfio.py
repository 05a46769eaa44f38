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

This class holds the options and what a run keeps; a central routing call's
phases are :class:`bfio.solvers.central.CentralCall`'s (the state crosses into
``solvers/`` once a call), and the predictions both dispatch forms read are
:class:`bfio.solvers.call_view.CallView`'s.

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
  the latest at ``2 N`` steps; ``solver = fast``; :mod:`bfio.solvers.drain`) | ``free``
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

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.jit import run_clock
from bfio.ground.progress import CallProgress
from bfio.lookahead.admission import DEFAULT_ADMISSION, DEFAULT_EXACT_ADMISSION, parse_admission
from bfio.lookahead.discount import OBJECTIVES
from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, Policy, RoutingState
from bfio.policies.bfio_instant import InstantBinding
from bfio.policies.bfio_options import LOCAL_SEARCH_ROUNDS, OPTIONS
from bfio.policies.completion_stream import CompletionStream
from bfio.predictors import default_remaining, make_predictor
from bfio.solvers import GREEDY_PLACEMENT
from bfio.solvers.call_view import CallView
from bfio.solvers.central import CentralCall
from bfio.solvers.objective import ObjectiveTerms

@register
class BFIO(InstantBinding, Policy):
    name = "bfio"
    options = OPTIONS
    dispatch_modes = DISPATCH_MODES  # central (the paper's pool) and instant (bfio.solvers.dispatch)
    #: options of the central pool's integer program only: with instant dispatch the
    #: queues are FIFO and the binding rule is bfio.solvers.dispatch's (refused there)
    central_only_options = ("admission", "solver", "on_solver_error", "time_limit_s", "shard_workers", "placement")
    #: options of instant dispatch only (per-worker reports, queue releases): a central pool
    #: reads the exact state and has no queues, so a value other than the default is refused
    instant_only_options = ("report_interval", "release", "report_age", "completions")
    #: the call's predictions, shared by both dispatch forms (built in __init__)
    _call_view: CallView
    #: the central pool's routing call: every phase after the options (built in __init__)
    _central: CentralCall

    def __init__(self, seed: int = 0, **options):
        super().__init__(seed=seed, **options)
        v = self.option_values
        self.horizon = v["horizon"]
        predictor = v["predictor"]
        self.solver = v["solver"]
        if v["remaining"] is None:
            v["remaining"] = default_remaining(self.solver)
        made = make_predictor(predictor, v["noise_low"], v["noise_high"], seed, noise_sigma=v["noise_sigma"],
                              bucket_accuracy=v["bucket_accuracy"], remaining=v["remaining"])
        if made.probabilistic and self.solver != "fast":
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
        # release: where its declaration says it applies (the probabilistic predictors: the run's
        # identity names it only there), else expected (a point estimate keeps its own releases)
        release = next(o for o in self.options if o.name == "release")
        self.release = v["release"] if release.applies(v) else release.default
        self.report_age = v["report_age"]
        self.completions = v["completions"]
        self._stream = CompletionStream()
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
        lifetimes = not made.probabilistic or getattr(made, "gives_lifetimes", False)
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
        self._call_view = CallView(made, self._objective, self.new_requests, self.step_terms)
        self._central = CentralCall(self._call_view, solver=self.solver, admission=self.admission,
                                    placement=self.placement, shard_workers=self.shard_workers,
                                    local_search_rounds=LOCAL_SEARCH_ROUNDS, time_limit_s=self.time_limit_s,
                                    on_solver_error=self.on_solver_error)
        self.capture = None  # optional callable(Instance) -> None, see capture_instances()
        self._instant_only_set = [o.name for o in self.options if o.name in self.instant_only_options
                                  and self.option_values[o.name] != o.default]
        self.reset(0, 0)

    # -- configuration ----------------------------------------------------------------
    @property
    def predictor(self):
        """The lookahead predictor (:mod:`bfio.predictors`): the one :class:`CallView` reads,
        so a predictor set here is the one both dispatch forms predict with."""
        return self._call_view.predictor

    @predictor.setter
    def predictor(self, value) -> None:
        self._call_view.predictor = value

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
        self._call_view.reset()
        self._central.reset()
        self._times: list[float] = []
        self._move_times: list[float] = []  # plan_moves (issue 45)
        self._migration_times: list[float] = []  # plan_migrations (issue 45)
        self._migration_terms: dict = {}  # plan_migrations' objective per horizon
        self._report: dict | None = None  # instant dispatch with report_interval: the last report
        self._stream.reset()  # option completions: streamed
        # exact backends (highs, gurobi): a line every CALL_PROGRESS_EVERY_S seconds with the
        # solves done and their mean time (issue 31 item 5: minutes without output otherwise)
        self._exact_progress = (CallProgress(f"BF-IO exact solver {self.solver} (H={self.horizon}, time limit "
                                             f"{self.time_limit_s:g} s/solve)", unit="solve")
                                if self.solver != "fast" else None)

    # -- routing ----------------------------------------------------------------------
    def route(self, state: RoutingState) -> np.ndarray:
        """The central pool's call: :class:`bfio.solvers.central.CentralCall` (its phases),
        timed; an exact backend's progress line on stderr."""
        self._refuse_instant_only()
        if state.admissible == 0:
            return np.full(state.pool.shape[0], -1, dtype=np.int64)
        t0 = run_clock()
        assign = self._central.route(state, self.capture)
        self._times.append(run_clock() - t0)
        if self._exact_progress is not None:  # an exact backend: point predictors only (__init__)
            self._exact_progress.record(self._times[-1], step=state.step, extra=self._central.exact_summary)
        return assign

    def _refuse_instant_only(self) -> None:
        """A central routing call with an option of instant dispatch only
        (:attr:`instant_only_options`) set: a :class:`ConfigError` naming it."""
        if self._instant_only_set:
            name = self._instant_only_set[0]
            raise ConfigError(f"{name}: {self.option_values[name]!r} is an option of dispatch 'instant' (per-worker "
                              "reports and queues); a central pool reads the exact state")

    def stats(self) -> dict:
        t = np.asarray(self._times)
        out = {"solver_calls": int(t.size), "solver_fallbacks": self._central.fallbacks,
               "fast_solver_horizon": self._objective.window}
        if t.size:
            out.update({"solver_s_p50": float(np.percentile(t, 50)), "solver_s_p99": float(np.percentile(t, 99)),
                        "solver_s_max": float(t.max()), "solver_s_total": float(t.sum())})
        central = self._central
        if central.gaps:
            g = np.asarray(central.gaps)
            out.update({"solver_proven_optimal_frac": central.proven / len(g),
                        "solver_gap_p50": float(np.median(g)), "solver_gap_max": float(g.max())})
        if self.admission_mode == "aging":
            out["aging_forced_admissions"] = central.forced
        elif self.admission_mode == "drain":
            out["drain_admissions"] = central.forced
        if self.placement != "greedy":
            out["heap_key_refreshes"] = central.heap_refreshes
        if self._move_times:
            out.update({"move_plan_calls": len(self._move_times), "move_plan_s_total": float(sum(self._move_times))})
        if self._migration_times:
            out.update({"migration_plan_calls": len(self._migration_times),
                        "migration_plan_s_total": float(sum(self._migration_times))})
        out.update(self.predictor.stats())
        return out
