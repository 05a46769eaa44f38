"""BF-IO's options and defaults (:class:`bfio.ground.options.Option`): the one
place their names, defaults, help and documentation are written; the CLI flags,
the config schema's ``bfio`` section, its rows of ``config/README.md``
(:mod:`bfio.pipeline.config_readme`) and :meth:`bfio.policies.bfio.BFIO.describe` derive
from :data:`OPTIONS`. The options' meaning: the module docstring of
:mod:`bfio.policies.bfio`."""

from __future__ import annotations

from dataclasses import replace

from bfio.policies.base import REPORT_INTERVAL
from bfio.policies.completion_stream import COMPLETIONS_OPTION
from bfio.ground.options import Option, Registry
from bfio.predictors import ERROR_MODELS, PROBABILISTIC, REMAINING
from bfio.solvers import DEFAULT_TIME_LIMIT_S, GREEDY_PLACEMENT
from bfio.lookahead.admission import ADMISSION_HELP, ADMISSION_PATTERN, DEFAULT_ADMISSION, DEFAULT_EXACT_ADMISSION
from bfio.lookahead.discount import NEW_REQUEST_MODELS, OBJECTIVES
from bfio.solvers.shards import DEFAULT_SHARD_WORKERS

MAX_HORIZON = 100_000
#: Default placement of the fast solver (issue 40): the greedy while its modelled cost is
#: within 5% of the decode step, else the heap (``bfio.solvers.placement``).
DEFAULT_PLACEMENT = "auto"
#: Default lookahead H (issue 40): at least the default objective's reach
#: (``bfio.lookahead.discount.effective_horizon`` of its discount: 13), so the default
#: looks ahead as far as the objective weighs; every H >= 13 routes the same way with
#: the fast solver (docs/bfio.md), and H = 20 keeps the exact backends' programs small.
DEFAULT_HORIZON = 20
LOCAL_SEARCH_ROUNDS = 4
#: ``step_terms``: whether J weighs the calibrated step's terms beyond KV tokens
#: (:mod:`bfio.solvers.terms.batch`); with the paper's step neither adds anything
STEP_TERMS = ("auto", "off")
#: ``release``: how instant dispatch reads a probabilistic predictor's slot releases
#: (:mod:`bfio.policies.bfio_instant`, :func:`~bfio.policies.bfio_instant.order_release`)
RELEASES = ("expected", "order")
#: ``report_age``: how instant dispatch reads a report ``d`` steps old (``report_interval``
#: ``K >= 1``; :meth:`bfio.policies.bfio_instant.InstantBinding._predicted`)
REPORT_AGES = ("read", "advance")


def _remaining():
    return REMAINING


def _new_request_models():
    return tuple(NEW_REQUEST_MODELS)


#: BF-IO's options (:class:`bfio.ground.options.Option`): the one place their
#: names, defaults, help and README text (``doc``) are written (the CLI flags, the
#: config schema's ``bfio`` section, ``config/README.md``'s ``bfio.*`` rows and
#: :meth:`BFIO.describe` derive from it).
OPTIONS = (
    Option("horizon", int, DEFAULT_HORIZON, "lookahead window H", minimum=0, maximum=MAX_HORIZON,
           doc="Lookahead window H of a BF-IO row that names none itself (a study variant without `horizon`); "
           "`bfio_h<H>` rows always run their own H."),
    Option("solver", str, "fast", "solver backend of Eq. (IO) (bfio.solvers)", choices=Registry("bfio.solvers", "SOLVERS"),
           doc="Backend of BF-IO's integer program: `fast` (numba heuristic), `highs` or `gurobi` (exact)."),
    Option("admission", str, None,
           "which waiting requests are admitted: aging:N admits requests waiting N or more steps first, the rest "
           "free; drain:N reserves a worker for a request waiting N steps and places it when it fits, by 2N at the latest "
           "(solver fast); free is Eq. (IO) as in the paper's tables; fifo admits the oldest U (docs/studies.md, "
           "section 3)",
           pattern=ADMISSION_PATTERN, pattern_help=ADMISSION_HELP,
           derived=f"{DEFAULT_ADMISSION} with solver fast, {DEFAULT_EXACT_ADMISSION} with an exact solver",
           metavar="RULE",
           doc="Which waiting requests may be admitted: `free` (any, Eq. (IO) as stated; the paper's tables), "
           "`fifo` (the oldest U, placement optimized), `aging:N` (requests that waited N steps or more are "
           "admitted first) or `drain:N` (`solver: fast`; a request that waited N steps reserves the worker "
           "where it raises J least, which takes only the smallest requests until it fits there, by 2N steps "
           "at the latest; `docs/bfio.md`)."),
    Option("on_solver_error", str, "fail", "when an exact solver errors: fail, or fall back gurobi -> highs -> fast",
           choices=("fail", "fallback"), applies_with=("solver", ("highs", "gurobi")),
           doc="What a failing exact solver does: `fail` (raise, saying how to switch) or `fallback` (gurobi, "
           "then highs, then fast)."),
    Option("objective", str, "default",
           "the objective: default is discount %g with new requests finishing at their predicted length (the "
           "objective study's choice); paper-literal is Eq. (IO) as printed (no discount, new requests persist)"
           % OBJECTIVES["default"]["discount"],
           choices=Registry("bfio.lookahead.discount", "OBJECTIVES"),
           doc="BF-IO's objective: `default` (offset discount 0.6, new requests counted while their predicted "
           "decode lasts) or `paper-literal` (Eq. (IO) as printed: discount 1, new requests persist); it sets "
           "the defaults of `discount` and `new_requests`. `bfio_h<H>_literal` rows always use "
           "`paper-literal`."),
    Option("discount", float, None, "offset discount delta: J weighs offset h by delta^h",
           exclusive_minimum=0.0, maximum=1.0, derived="the objective's",
           doc="Offset discount delta in (0, 1]: offset h of the window weighs delta^h. Omit for the objective's "
           "(0.6 for `default`, 1 for `paper-literal`)."),
    Option("new_requests", str, None,
           "predicted: a new request adds s_j + h while h < its predicted decode length; persist: at every offset",
           choices=_new_request_models, derived="the objective's; persist for predictors without o_hat",
           doc="New-request model: `predicted` (a new request adds its load while h is below its predicted decode "
           "length) or `persist` (at every offset). Omit for the objective's (`persist` for `none` and the "
           "oracle-free predictors)."),
    Option("predictor", str, "oracle",
           "decode-length predictor (bfio.predictors); empirical and geometric learn from completed requests, "
           "no oracle (fast solver only)", choices=Registry("bfio.predictors", "PREDICTORS"),
           doc="Decode-length predictor: `oracle` (true remaining steps, the paper's), `noisy` (the oracle times "
           "a uniform factor, see `noise_low`), `none` (active requests never finish within the window), "
           "`empirical` or `geometric` (oracle-free, learned from completed requests; `solver: fast` only)."),
    Option("noise_low", float, 0.2, "noisy predictor: d_lo in o_est = o * U[1 - d_lo, 1 + d_hi]", minimum=0.0,
           applies_with=("predictor", ("noisy",)), identity="applies",
           doc="`d_lo` of the `noisy` predictor, which predicts o_est = max(1, round(o U[1 - d_lo, 1 + d_hi])), "
           "one draw per request; `d_lo` in [0, 1]."),
    Option("noise_high", float, 0.2, "noisy predictor: d_hi", minimum=0.0,
           applies_with=("predictor", ("noisy",)), identity="applies",
           doc="`d_hi` of the `noisy` predictor; at most 100 (`bfio.ground.limits.MAX_NOISE_HIGH`)."),
    Option("noise_sigma", float, 0.5, "lognormal predictor: sigma in o_est = o * exp(N(0, sigma^2))",
           minimum=0.0, maximum=5.0, applies_with=("predictor", ("lognormal",)), identity="applies",
           doc="`sigma` of the `lognormal` predictor, o_est = max(1, round(o exp(N(0, sigma^2)))), one draw per "
           "request (issue 29)."),
    Option("bucket_accuracy", float, 0.8,
           "bucket predictor: probability the length bucket (1-64, 65-256, 257-1024, > 1024 tokens) is right; "
           "else a neighbouring one", minimum=0.0, maximum=1.0, applies_with=("predictor", ("bucket",)),
           identity="applies",
           doc="Accuracy of the `bucket` predictor: the right length bucket (1-64, 65-256, 257-1024, > 1024 "
           "tokens) with this probability, else a neighbouring one; the estimate is the bucket's length "
           "(issue 29)."),
    Option("remaining", str, None,
           "how the lookahead reads an erring estimate: posterior (its error distribution learned online from "
           "completed and running requests, issue 29) | paper (r = max(1, o_hat - tau), the paper's convention)",
           choices=_remaining, derived="posterior with solver fast, else paper",
           applies_with=("predictor", ERROR_MODELS), identity="applies",
           doc="How the lookahead reads an erring estimate (`noisy`, `lognormal`, `bucket`): `posterior`, its "
           "error distribution learned online (Kaplan-Meier on o / o_hat, completed requests as events, "
           "running ones censored; a request that outlived its estimate stays); `paper`, r = max(1, o_hat - "
           "tau) (issue 29)."),
    Option("time_limit_s", float, DEFAULT_TIME_LIMIT_S, "time limit per exact solve in seconds",
           exclusive_minimum=0.0, applies_with=("solver", ("highs", "gurobi")), identity="applies",
           doc="Time limit of each exact solve (`highs`, `gurobi`), in seconds."),
    Option("shard_workers", int, DEFAULT_SHARD_WORKERS,
           "solver fast: split a routing call with more workers with free slots into shards of at most this many "
           "(0: never)", minimum=0, applies_with=("solver", ("fast",)), identity="applies",
           doc="With `solver: fast`, a routing call with more workers with free slots than this is split into "
           "shards of at most this many, solved in turn (`bfio.solvers.shards`); `0`: never split."),
    Option("placement", str, DEFAULT_PLACEMENT,
           "solver fast: greedy (fill plus local search) | heap (largest-that-fits on a heap of pivots, "
           "O(U (log G + H_eff)) per call) | auto (the greedy while its modelled cost is within 5% of the decode "
           "step, else the heap; docs/bfio.md 'Production scale')", choices=Registry("bfio.solvers", "PLACEMENTS"),
           applies_with=("solver", ("fast",)), identity="non-default", identity_omits=GREEDY_PLACEMENT,
           doc="With `solver: fast`, the placement algorithm: `greedy` (greedy fill plus local search), `heap` "
           "(largest-that-fits on a heap of pivots, for production scale) or `auto` (the greedy while its "
           'modelled cost is within 5% of the decode step, else the heap; `docs/bfio.md` "Production scale").'),
    Option("step_terms", str, "auto",
           "with the calibrated step model: auto adds its per-request term to J (a decoding request weighs "
           "(a_n + beta) / a_kv KV tokens, bfio.solvers.terms.batch); off balances KV tokens alone (no effect with "
           "the paper's step)", choices=STEP_TERMS, identity="non-default",
           doc="With the calibrated step model (`docs/step_model.md`): `auto` adds the step's per-request term to "
           "BF-IO's objective (a decoding request weighs `(a_n + beta) / a_kv` KV tokens per step, "
           "`bfio.solvers.terms.batch`); `off` balances KV tokens alone. No effect with the paper's step."),
    Option("release", str, "order",
           "instant dispatch with a probabilistic predictor: when a busy slot frees for the queue: expected (each "
           "slot at its own request's expected remaining steps) | order (a worker's k-th slot frees when the "
           "expected number of its requests gone reaches k - 1/2: the order statistics, exact for a point "
           "predictor)", choices=RELEASES, applies_with=("predictor", PROBABILISTIC),
           identity="non-default",
           doc="With instant dispatch and a probabilistic predictor (`empirical`, `geometric`, `prompt_survival`): "
           "when a worker's busy slots free for its queue. `expected`: each at its own request's expected "
           "remaining steps within the window (a full worker's first slot frees late: the least of the "
           "expectations, not the expected least); `order`: the worker's k-th slot at the first offset where the "
           "expected number of its requests gone reaches k - 1/2 (what a point predictor's releases are)."),
    # instant dispatch on lagged reports (issue 44, "equal information"): the production routers' option
    Option("report_age", str, "read",
           "instant dispatch on lagged reports (report_interval K >= 1): read (the last report as the state now) "
           "| advance (the report's predictions advanced by its age d: the window's loads, slot releases and "
           "queue admissions are the report's at offsets d..d+H, as predicted from the report's step)",
           choices=REPORT_AGES, identity="non-default",
           doc="With instant dispatch on lagged reports (`report_interval` K >= 1): how BF-IO reads a report "
           "`d` steps old. `read`: as the state now (what the production routers do); `advance`: its "
           "predictions advanced by `d`, the window's loads, slot releases and queue admissions being those "
           "predicted from the report's step at offsets `d..d+H` (the router knows the step; nothing else is "
           "added). No effect with the exact state (K = 0)."),
    replace(REPORT_INTERVAL,
            doc="With instant dispatch (BF-IO bound at arrival): BF-IO reads the running requests and queues as "
            "reported every K steps plus its own bindings since, as the production routers' `report_interval` "
            "(issue 44, equal information); 0 = the exact state. A central pool refuses K > 0."),
    replace(COMPLETIONS_OPTION,
            doc="With instant dispatch on lagged reports (`report_interval` K >= 1): what BF-IO knows of the "
            "requests finished since the last report, as the production routers' `completions`. `reported`: "
            "nothing, the report's running requests and queues as they were; `streamed`: the finished ones are "
            "dropped from them when their last token comes out (`bfio.policies.completion_stream`). No effect "
            "with the exact state (K = 0)."),
)


__all__ = ["DEFAULT_HORIZON", "DEFAULT_PLACEMENT", "RELEASES", "REPORT_AGES",
           "LOCAL_SEARCH_ROUNDS", "MAX_HORIZON", "OPTIONS", "STEP_TERMS"]
