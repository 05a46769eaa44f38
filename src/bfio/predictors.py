"""Lookahead predictors: the estimates ``W_hat_i^H(k)`` of Section 4.

In LLM decode the per-step workload of an active request is ``s_i + tau_i + h``
at offset ``h`` until it finishes, so a prediction of its future workload is a
prediction of its *remaining steps* ``r_i`` (``../shared/spec/semantics.md``,
"BF-IO"). Every predictor here returns, once per workload, a per-request
estimate ``o_hat_i`` of the decode length, and the predicted remaining steps at
a routing call are ``r_i = max(1, o_hat_i - tau_i)``:

- ``oracle``: ``o_hat_i = o_i`` (true remaining steps ``o_i - tau_i``);
- ``noisy``: the paper's estimate ``o_est_i = max(1, round(o_i * U[1 - d_lo, 1 + d_hi]))``,
  drawn once per request from a generator seeded by the policy seed;
- ``none``: active requests are assumed never to finish within the window.

Two further predictors need no knowledge of any request's decode length
(oracle-free). They learn the decode-length distribution online from the
requests completed so far in the run (``RoutingState.completed``) and predict,
for an active request that has generated ``tau`` tokens, the probability
``q(h) = P(o > tau + h | o > tau)`` that it is still active ``h`` steps ahead;
its predicted load at offset ``h`` is the expectation ``(s + tau + h) q(h)``
(:func:`bfio.profiles.expected_loads`, float base loads):

- ``empirical``: the empirical survival ``S(t) = P(o > t)`` of the completed
  decode lengths, ``q(h) = S(tau + h) / S(tau)``;
- ``geometric``: ``o ~ Geometric(p)`` on ``{1, 2, ...}``, the decode model of the
  paper's Section 5 (Theorem "Inhomogeneous decode lengths", ``o_i ~ Geo(p)``
  i.i.d., mean ``1/p``; used throughout Appendix C), with ``p`` fitted by maximum
  likelihood ``p = completions / sum of their decode lengths``; memoryless, so
  ``q(h) = (1 - p)**h`` whatever ``tau``.

Cold start (no completion yet) and, for ``empirical``, requests that have
outlived every completed one (``S(tau) = 0``, no evidence): the request is
predicted to stay active over the window (``q = 1``, the ``none`` rule). Both
update incrementally: they keep the number of completions consumed and only
read the new ones at each routing call.

Both estimate from *completed* requests only, so early in a run, when mostly
short requests have finished, they are biased towards short decodes
(right-censoring by the still-active requests is ignored).
"""

from __future__ import annotations

import numpy as np

from bfio.errors import ConfigError
from bfio.limits import MAX_NOISE_HIGH
from bfio.profiles import expected_loads

PREDICTORS = ("oracle", "noisy", "none", "empirical", "geometric", "lognormal", "bucket", "prompt_survival")
PROBABILISTIC = ("empirical", "geometric", "prompt_survival")
#: Point predictors with an error model (issue 29): their estimates err, and
#: BF-IO's option ``remaining`` says how the lookahead reads them.
ERROR_MODELS = ("noisy", "lognormal", "bucket")
#: How the lookahead reads an erring point estimate (option ``remaining``):
#: ``posterior`` (:class:`PosteriorPredictor`: the learned error distribution
#: and the tokens generated so far) or ``paper`` (``r_i = max(1, o_hat_i - tau_i)``,
#: the paper's convention).
REMAINING = ("posterior", "paper")


def default_remaining(solver: str) -> str:
    """BF-IO's option ``remaining`` when not given: the noise-aware ``posterior``
    reading where the solver takes expected (fractional) loads (``fast``), else ``paper``."""
    return "posterior" if solver == "fast" else "paper"


#: Length buckets of the ``bucket`` predictor (tokens; upper edges, the last open)
#: and the length it reports for each (the bucket's middle; 2048 for the open one).
BUCKET_EDGES = (64, 256, 1024)
BUCKET_VALUES = (32, 160, 640, 2048)

# "Never finishes within any window": larger than every horizon we accept.
NEVER = np.int64(2**40)


class Predictor:
    """Base class of the point predictors: :meth:`decode_estimate` returns ``o_hat``
    for every request (``probabilistic = False``)."""

    name = "predictor"
    probabilistic = False

    def reset(self) -> None:
        """Forget what was learnt (called before every simulation)."""

    def stats(self) -> dict:
        return {}

    def decode_estimate(self, decode: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        return {"predictor": self.name}


class OraclePredictor(Predictor):
    """True decode lengths: ``r_i = o_i - tau_i``."""

    name = "oracle"

    def decode_estimate(self, decode):
        return np.asarray(decode, dtype=np.int64).copy()


class NoisyPredictor(Predictor):
    """The paper's multiplicative estimate ``o_est = max(1, round(o * U[1-d_lo, 1+d_hi]))``.

    One uniform draw per request, in request-index order, from
    ``numpy.random.default_rng([seed, 0x0E57])``: the same seed and workload
    always give the same estimates, whatever the routing decisions.
    """

    name = "noisy"

    def __init__(self, noise_low: float, noise_high: float, seed: int):
        self.noise_low = float(noise_low)
        self.noise_high = float(noise_high)
        self.seed = int(seed)

    def decode_estimate(self, decode):
        o = np.asarray(decode, dtype=np.int64)
        rng = np.random.default_rng([self.seed, 0x0E57])
        factor = rng.uniform(1.0 - self.noise_low, 1.0 + self.noise_high, size=o.shape[0])
        return np.maximum(1, np.rint(o * factor)).astype(np.int64)

    def describe(self):
        return {"predictor": self.name, "noise_low": self.noise_low, "noise_high": self.noise_high}


class LogNormalPredictor(Predictor):
    """Multiplicative log-normal error: ``o_hat = max(1, round(o * exp(N(0, sigma^2))))``,
    median-unbiased (a regressor's error on log length; ``docs/predictors.md``).
    One draw per request from ``numpy.random.default_rng([seed, 0x106])``."""

    name = "lognormal"

    def __init__(self, sigma: float, seed: int):
        self.sigma = float(sigma)
        self.seed = int(seed)

    def decode_estimate(self, decode):
        o = np.asarray(decode, dtype=np.int64)
        rng = np.random.default_rng([self.seed, 0x106])
        return np.maximum(1, np.rint(o * np.exp(rng.normal(0.0, self.sigma, size=o.shape[0])))).astype(np.int64)


class BucketPredictor(Predictor):
    """A length-bucket classifier: the true bucket (:data:`BUCKET_EDGES`: 1-64,
    65-256, 257-1024, > 1024 tokens) with probability ``accuracy``, else a
    neighbouring bucket (either neighbour equally likely; the only one at the
    ends); the estimate is the reported bucket's length (:data:`BUCKET_VALUES`).
    Draws from ``numpy.random.default_rng([seed, 0xB0C])``, one pair per request."""

    name = "bucket"

    def __init__(self, accuracy: float, seed: int):
        self.accuracy = float(accuracy)
        self.seed = int(seed)

    def decode_estimate(self, decode):
        o = np.asarray(decode, dtype=np.int64)
        rng = np.random.default_rng([self.seed, 0xB0C])
        right, side = rng.random(o.shape[0]) < self.accuracy, rng.random(o.shape[0]) < 0.5
        true = np.searchsorted(np.asarray(BUCKET_EDGES), o, side="left")
        last = len(BUCKET_VALUES) - 1
        step = np.where(side, 1, -1)
        step = np.where(true == 0, 1, np.where(true == last, -1, step))
        reported = np.where(right, true, true + step)
        return np.asarray(BUCKET_VALUES, dtype=np.int64)[reported]


class NoPredictor(Predictor):
    """No lookahead signal: every active request is predicted to stay active."""

    name = "none"

    def decode_estimate(self, decode):
        return np.full(np.asarray(decode).shape[0], NEVER, dtype=np.int64)


def still_active(s0, st) -> np.ndarray:
    """``q(h) = S(tau + h) / S(tau)`` from ``s0 = S(tau)`` (one per request) and
    ``st = S(tau + h)`` (a row per request); 1 where ``S(tau) = 0`` (no evidence:
    the request is predicted to stay), within ``[0, 1]``."""
    s0 = np.asarray(s0, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(s0 > 0, st / np.where(s0 > 0, s0, 1.0), 1.0), 0.0, 1.0)


def active_requests(state) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The worker, request id and generated tokens ``tau`` of every running request."""
    g, b = np.nonzero(state.slot_request >= 0)
    ids = state.slot_request[g, b]
    return g, ids, state.generated[ids].astype(np.int64)


def weighted_loads(workers: int, worker, prefill, tau, q) -> np.ndarray:
    """The ``(G, H + 1)`` expected loads ``sum (s_i + tau_i + h) q_i(h)`` of the
    running requests on each worker (``q``: a row per request)."""
    h = np.arange(q.shape[1], dtype=float)
    w = (np.asarray(prefill, dtype=float)[:, None] + np.asarray(tau, dtype=float)[:, None] + h[None, :]) * q
    out = np.zeros((workers, q.shape[1]))
    for k in range(q.shape[1]):
        out[:, k] = np.bincount(worker, weights=w[:, k], minlength=workers)
    return out


class SurvivalPredictor(Predictor):
    """Base class of the oracle-free, probabilistic predictors.

    Subclasses implement :meth:`_consume` (new completed decode lengths) and
    :meth:`survival` (the current ``S`` as a table plus geometric tail, the
    arguments of :func:`bfio.profiles.expected_loads`).
    """

    probabilistic = True

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.consumed = 0  # completions read so far
        self._key = None

    def observe(self, completed, decode) -> None:
        """Read the completions ``completed[self.consumed:]`` (ids in completion
        order) with true decode lengths ``decode[ids]`` -- known once a request has
        finished. Only the new ones are read."""
        completed = np.asarray(completed)
        if completed.shape[0] < self.consumed:  # a new run without reset()
            self.reset()
        if completed.shape[0] > self.consumed:
            new = np.asarray(decode)[completed[self.consumed:]].astype(np.int64)
            self._consume(new)
            self.consumed = completed.shape[0]

    def observe_state(self, state) -> None:
        key = id(state.workload)
        if self._key is not None and self._key != key:
            self.reset()
        self._key = key
        self.observe(state.completed, state.workload.decode)

    def _consume(self, lengths: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def survival(self) -> tuple[np.ndarray, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def survival_at(self, t) -> np.ndarray:
        """``S(t) = P(o > t)`` of the current fit at integer ``t >= 0``."""
        t = np.asarray(t, dtype=np.int64)
        surv, rho = self.survival()
        T = surv.shape[0] - 1
        inside = surv[np.minimum(t, T)]
        with np.errstate(under="ignore"):
            return np.where(t <= T, inside, surv[T] * rho ** np.maximum(t - T, 0).astype(float))

    def active_probability(self, tau, horizon: int) -> np.ndarray:
        """``(len(tau), H + 1)`` array of ``q(h) = P(o > tau + h | o > tau)``
        (``q = 1`` where ``S(tau) = 0``); the probabilities
        :func:`~bfio.profiles.expected_loads` weights loads with."""
        tau = np.atleast_1d(np.asarray(tau, dtype=np.int64))
        h = np.arange(horizon + 1, dtype=np.int64)
        surv, rho = self.survival()
        T = surv.shape[0] - 1
        inside = np.minimum(tau, T)  # tau >= T is handled below
        q = still_active(surv[inside], self.survival_at(inside[:, None] + h[None, :]))
        # beyond the table: memoryless geometric tail, or (finite support) persist
        tail = (rho ** h.astype(float))[None, :] if surv[T] > 0 else np.ones((1, h.shape[0]))
        q = np.where((tau >= T)[:, None], tail, q)
        return np.clip(q, 0.0, 1.0)

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """Observe the new completions of ``state`` and return the ``(G, H + 1)``
        expected loads ``E[Lhat_g(h)]`` of the active requests (float)."""
        self.observe_state(state)
        surv, rho = self.survival()
        return expected_loads(state.slot_request, state.workload.prefill, state.generated, surv, float(rho),
                              int(horizon))


class EmpiricalPredictor(SurvivalPredictor):
    """Empirical survival of the completed decode lengths (oracle-free).

    ``S(t) = #{completed o > t} / #completed`` for ``t = 0..max o`` (so
    ``S(max o) = 0``); an active request with ``tau`` generated tokens is still
    active at offset ``h`` with probability ``S(tau + h) / S(tau)``. Keeps a
    histogram of the completed lengths, updated with the new completions only;
    the table is rebuilt (``O(max o)``) when it changed. Cold start and
    ``tau >= max o``: ``q = 1`` (see the module docstring).
    """

    name = "empirical"

    def reset(self) -> None:
        super().reset()
        self.counts = np.zeros(1, dtype=np.int64)  # counts[t] = completed requests with o = t
        self.n = 0
        self._surv = np.ones(1)

    def _consume(self, lengths):
        if lengths.size == 0:
            return
        if lengths.min() < 0:
            raise ValueError("decode lengths must be >= 0")
        top = int(lengths.max())
        if top >= self.counts.shape[0]:
            grown = np.zeros(max(top + 1, 2 * self.counts.shape[0]), dtype=np.int64)
            grown[: self.counts.shape[0]] = self.counts
            self.counts = grown
        self.counts += np.bincount(lengths, minlength=self.counts.shape[0])
        self.n += int(lengths.size)
        T = int(np.flatnonzero(self.counts)[-1])
        self._surv = (self.n - np.cumsum(self.counts[: T + 1])) / self.n

    def survival(self):
        return self._surv, 1.0

    def stats(self):
        return {"predictor_completions_seen": self.n}


class GeometricPredictor(SurvivalPredictor):
    """``o ~ Geometric(p)`` on ``{1, 2, ...}`` with ``p`` fitted online by maximum
    likelihood (oracle-free).

    The paper's Section 5 assumes ``o_i ~ Geo(p)`` i.i.d. (mean ``1/p``, variance
    ``(1 - p)/p^2``; Theorem "Inhomogeneous decode lengths" and Appendix C).
    The MLE from ``n`` completed lengths is ``p = n / sum o``; survival is
    ``S(t) = (1 - p)**t`` and, memoryless, ``q(h) = (1 - p)**h`` for every active
    request. Cold start: ``p = 0`` (never finishes).
    """

    name = "geometric"

    def reset(self) -> None:
        super().reset()
        self.n = 0
        self.tokens = 0

    def _consume(self, lengths):
        self.n += int(lengths.size)
        self.tokens += int(lengths.sum())

    @property
    def p(self) -> float:
        """The MLE ``n / sum o`` (0 before the first completion)."""
        return self.n / self.tokens if self.tokens > 0 else 0.0

    def survival(self):
        return np.ones(1), 1.0 - self.p

    def stats(self):
        return {"predictor_completions_seen": self.n, "predictor_geometric_p": self.p}


class PosteriorPredictor(Predictor):
    """Noise-aware remaining lengths (issue 29): a point predictor's estimates
    ``o_hat`` read through its error distribution, learned online.

    The error is the ratio ``R = o / o_hat`` of true to estimated decode length.
    Its survival ``S_R(x) = P(R > x)`` is estimated by Kaplan-Meier on a log grid
    of ratios (:data:`RATIO_GRID`): a completed request is an event at
    ``o_i / o_hat_i``; an active one is right-censored at ``tau_i / o_hat_i`` (it
    has lived that long), so long requests still running count, and early
    estimates are not biased short. No oracle knowledge of the error level is
    used: only pairs of estimate and length known at the routing call.

    An active request with ``tau`` generated tokens is still active at offset
    ``h`` with probability ``q(h) = S_R((tau + h) / o_hat) / S_R(tau / o_hat)``
    (``q = 1`` where it has outlived all evidence, ``S_R(tau / o_hat) = 0``: it is
    predicted to stay, never to finish at the next step); its expected load is
    ``(s + tau + h) q(h)``, as for the oracle-free predictors. A new request's
    lifetime in the objective is its expected length ``o_hat E[R]``
    (:meth:`expected_lengths`). Before :data:`MIN_EVENTS` completions the
    estimate is taken at face value (``R = 1``), except that a request which
    outlived it stays active."""

    probabilistic = True
    gives_lifetimes = True

    def __init__(self, point: Predictor):
        self.point = point
        self.name = point.name
        self.reset()

    def reset(self) -> None:
        self.point.reset()
        self.events = np.zeros(RATIO_GRID.shape[0] - 1, dtype=np.int64)
        self.n = 0
        self.consumed = 0
        self._key = None
        self._estimate = None
        self._surv = None

    def describe(self) -> dict:
        return {**self.point.describe(), "remaining": "posterior"}

    def stats(self) -> dict:
        return {"predictor_completions_seen": self.n}

    def decode_estimate(self, decode):
        return self.point.decode_estimate(decode)

    def _estimates(self, workload) -> np.ndarray:
        key = (id(workload), len(workload))
        if self._key != key:
            if self._key is not None:
                self.reset()
            self._key = key
            self._estimate = self.point.decode_estimate(workload.decode)
        return self._estimate

    def _observe(self, state) -> None:
        est = self._estimates(state.workload)
        completed = np.asarray(state.completed)
        if completed.shape[0] > self.consumed:
            new = completed[self.consumed:]
            ratio = state.workload.decode[new] / est[new]
            self.events += np.bincount(ratio_bin(ratio), minlength=self.events.shape[0])
            self.n += int(new.shape[0])
            self.consumed = completed.shape[0]

    def survival(self, state) -> np.ndarray:
        """``S_R`` at the edges of :data:`RATIO_GRID` (Kaplan-Meier): the completed
        requests are events, the active ones censored at ``tau / o_hat``."""
        est = self._estimates(state.workload)
        active = state.slot_request[state.slot_request >= 0]
        censored = np.bincount(ratio_bin(state.generated[active] / est[active]), minlength=self.events.shape[0])
        return kaplan_meier(self.events, censored)

    def expected_lengths(self, workload) -> np.ndarray:
        """Every request's expected decode length ``o_hat E[R]`` under the current fit
        (its lifetime when it is admitted; ``o_hat`` before :data:`MIN_EVENTS`)."""
        est = self._estimates(workload)
        if self.n < MIN_EVENTS or self._surv is None:
            return est
        return np.maximum(1, np.rint(est * ratio_mean(self._surv))).astype(np.int64)

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """The ``(G, H + 1)`` expected loads of the active requests (float)."""
        self._observe(state)
        est = self._estimates(state.workload)
        g, ids, tau_i = active_requests(state)
        tau = tau_i.astype(float)
        o_hat = est[ids].astype(float)
        h = np.arange(horizon + 1, dtype=float)
        if self.n < MIN_EVENTS:
            self._surv = None
            q = np.where(tau[:, None] >= o_hat[:, None], 1.0, (tau[:, None] + h[None, :] < o_hat[:, None]) * 1.0)
        else:
            self._surv = self.survival(state)
            log_edges = np.log(RATIO_GRID)
            s0 = np.interp(np.log(np.maximum(tau / o_hat, RATIO_GRID[0])), log_edges, self._surv)
            x = np.log(np.maximum((tau[:, None] + h[None, :]) / o_hat[:, None], RATIO_GRID[0]))
            q = still_active(s0, np.interp(x, log_edges, self._surv))
        return weighted_loads(state.slot_request.shape[0], g, state.workload.prefill[ids], tau, q)


class PromptSurvivalPredictor(Predictor):
    """Oracle-free and prompt-conditioned (issue 29): the decode-length survival
    of each prompt-length bucket (:data:`PROMPT_EDGES`), learned online by
    Kaplan-Meier from completed requests (events at their length) and running
    ones (censored at ``tau``: they have lived that long), so long requests
    still running count.

    An active request with prompt ``s`` and ``tau`` generated tokens is still
    active ``h`` steps ahead with probability ``S_b(tau + h) / S_b(tau)``, ``b``
    its prompt bucket; a bucket with fewer than :data:`MIN_EVENTS` completions
    uses the pooled survival of every bucket. A request beyond all evidence
    (``S(tau) = 0``, or past the longest length seen) is predicted to stay."""

    name = "prompt_survival"
    probabilistic = True

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.events = np.zeros((len(PROMPT_EDGES) + 1, 1), dtype=np.int64)  # [bucket, length]
        self.consumed = 0
        self._key = None

    def stats(self) -> dict:
        return {"predictor_completions_seen": int(self.events.sum())}

    def _observe(self, state) -> None:
        key = id(state.workload)
        if self._key is not None and self._key != key:
            self.reset()
        self._key = key
        completed = np.asarray(state.completed)
        if completed.shape[0] > self.consumed:
            new = completed[self.consumed:]
            lengths = state.workload.decode[new].astype(np.int64)
            buckets = prompt_bucket(state.workload.prefill[new])
            top = int(lengths.max()) + 1
            if top > self.events.shape[1]:
                grown = np.zeros((self.events.shape[0], max(top, 2 * self.events.shape[1])), dtype=np.int64)
                grown[:, : self.events.shape[1]] = self.events
                self.events = grown
            np.add.at(self.events, (buckets, lengths), 1)
            self.consumed = completed.shape[0]

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """The ``(G, H + 1)`` expected loads of the active requests (float)."""
        self._observe(state)
        g, ids, tau = active_requests(state)
        bucket = prompt_bucket(state.workload.prefill[ids])
        T = self.events.shape[1]
        censored = np.zeros_like(self.events)
        np.add.at(censored, (bucket, np.minimum(tau, T - 1)), 1)
        h = np.arange(horizon + 1, dtype=np.int64)
        q = np.ones((ids.shape[0], horizon + 1))
        pooled = kaplan_meier(self.events.sum(axis=0), censored.sum(axis=0))
        for k in range(self.events.shape[0]):
            mine = bucket == k
            if not mine.any() or self.events.sum() < MIN_EVENTS:
                continue
            surv = kaplan_meier(self.events[k], censored[k]) if self.events[k].sum() >= MIN_EVENTS else pooled
            t0 = tau[mine]
            st = surv[np.minimum(t0[:, None] + h[None, :] + 1, T)]
            qk = still_active(surv[np.minimum(t0 + 1, T)], st)  # S(t) = P(o > t) = surv[t + 1]
            beyond = (t0 + 1 >= T)[:, None] | (t0[:, None] + h[None, :] + 1 > T)  # past the longest seen: stays
            q[mine] = np.where(beyond & (st == 0), 1.0, qk)
        return weighted_loads(state.slot_request.shape[0], g, state.workload.prefill[ids], tau, q)


#: Prompt-length buckets of :class:`PromptSurvivalPredictor` (tokens; upper edges, the last open).
PROMPT_EDGES = (256, 1024, 4096)


def prompt_bucket(prefill) -> np.ndarray:
    """The :data:`PROMPT_EDGES` bucket of each prompt length."""
    return np.searchsorted(np.asarray(PROMPT_EDGES), np.asarray(prefill), side="left")


#: Edges of the ratio grid ``R = o / o_hat`` of :class:`PosteriorPredictor`
#: (log-spaced, 1/64 to 64; ratios outside fall in the end bins).
RATIO_GRID = np.exp(np.linspace(np.log(1 / 64), np.log(64), 769))
#: Completions before :class:`PosteriorPredictor` trusts its fit.
MIN_EVENTS = 30


def ratio_bin(ratio) -> np.ndarray:
    """The bin of :data:`RATIO_GRID` of each ratio (the end bins take the rest)."""
    k = np.searchsorted(RATIO_GRID, np.asarray(ratio, dtype=float), side="right") - 1
    return np.clip(k, 0, RATIO_GRID.shape[0] - 2)


def kaplan_meier(events: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """Survival at the bin edges from per-bin ``events`` and right-``censored``
    counts: ``S(e_0) = 1``, ``S(e_{k+1}) = S(e_k) (1 - d_k / n_k)`` with ``n_k``
    the observations in bins ``>= k`` (a censored one was at risk up to its bin)."""
    at_risk = np.cumsum((events + censored)[::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(at_risk > 0, events / np.where(at_risk > 0, at_risk, 1), 0.0)
    return np.concatenate([[1.0], np.cumprod(1.0 - hazard)])


def ratio_mean(surv: np.ndarray) -> float:
    """``E[R]`` of a survival at the edges of :data:`RATIO_GRID` (trapezoids;
    ``R`` below the first edge counted at it)."""
    return float(RATIO_GRID[0] + np.sum(0.5 * (surv[1:] + surv[:-1]) * np.diff(RATIO_GRID)))


def make_predictor(name: str, noise_low: float = 0.2, noise_high: float = 0.2, seed: int = 0, *,
                   noise_sigma: float = 0.5, bucket_accuracy: float = 0.8, remaining: str = "paper") -> Predictor:
    """Build a predictor by name; raises :class:`ConfigError` naming the option.
    A predictor of :data:`ERROR_MODELS` with ``remaining='posterior'`` is read
    through its learned error distribution (:class:`PosteriorPredictor`)."""
    if remaining not in REMAINING:
        raise ConfigError(f"remaining: expected {' | '.join(REMAINING)}, got {remaining!r}")
    if name in ERROR_MODELS:
        point = _error_model(name, noise_low, noise_high, seed, noise_sigma, bucket_accuracy)
        return PosteriorPredictor(point) if remaining == "posterior" else point

    if name == "oracle":
        return OraclePredictor()
    if name == "none":
        return NoPredictor()
    if name == "empirical":
        return EmpiricalPredictor()
    if name == "geometric":
        return GeometricPredictor()
    if name == "prompt_survival":
        return PromptSurvivalPredictor()
    raise ConfigError(f"predictor: expected {' | '.join(PREDICTORS)}, got {name!r}")


def _error_model(name, noise_low, noise_high, seed, noise_sigma, bucket_accuracy) -> Predictor:
    """The point predictor of error model ``name`` (:data:`ERROR_MODELS`)."""
    if name == "noisy":
        for key, v in (("noise_low", noise_low), ("noise_high", noise_high)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
                raise ConfigError(f"{key}: expected a finite number >= 0, got {v!r}")

        if noise_high > MAX_NOISE_HIGH:
            raise ConfigError(f"noise_high: expected a value in [0, {MAX_NOISE_HIGH:g}] (bfio.limits.MAX_NOISE_HIGH: "
                              f"an estimate of at most {1 + MAX_NOISE_HIGH:g} times the true length), got {noise_high!r}")
        if noise_low > 1:
            raise ConfigError(f"noise_low: expected a value in [0, 1] (o * U[1 - d_lo, ...] must stay >= 0), "
                              f"got {noise_low!r}")
        return NoisyPredictor(noise_low, noise_high, seed)
    if name == "lognormal":
        if isinstance(noise_sigma, bool) or not isinstance(noise_sigma, (int, float)) or not 0 <= noise_sigma <= 5:
            raise ConfigError(f"noise_sigma: expected a number in [0, 5], got {noise_sigma!r}")
        return LogNormalPredictor(noise_sigma, seed)
    if isinstance(bucket_accuracy, bool) or not isinstance(bucket_accuracy, (int, float)) \
            or not 0 <= bucket_accuracy <= 1:
        raise ConfigError(f"bucket_accuracy: expected a number in [0, 1], got {bucket_accuracy!r}")
    return BucketPredictor(bucket_accuracy, seed)


__all__ = ["PREDICTORS", "PROBABILISTIC", "ERROR_MODELS", "REMAINING", "default_remaining", "BUCKET_EDGES", "BUCKET_VALUES", "NEVER",
           "Predictor", "OraclePredictor", "NoisyPredictor", "LogNormalPredictor", "BucketPredictor", "NoPredictor",
           "SurvivalPredictor", "EmpiricalPredictor", "GeometricPredictor", "PosteriorPredictor", "PromptSurvivalPredictor",
           "PROMPT_EDGES", "prompt_bucket", "still_active", "active_requests", "weighted_loads", "RATIO_GRID",
           "MIN_EVENTS", "ratio_bin", "kaplan_meier", "ratio_mean", "make_predictor"]
