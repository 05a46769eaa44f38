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

PREDICTORS = ("oracle", "noisy", "none", "empirical", "geometric")
PROBABILISTIC = ("empirical", "geometric")

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


class NoPredictor(Predictor):
    """No lookahead signal: every active request is predicted to stay active."""

    name = "none"

    def decode_estimate(self, decode):
        return np.full(np.asarray(decode).shape[0], NEVER, dtype=np.int64)


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
        s0 = surv[inside][:, None]
        st = self.survival_at(inside[:, None] + h[None, :])
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s0 > 0, st / np.where(s0 > 0, s0, 1.0), 1.0)
        # beyond the table: memoryless geometric tail, or (finite support) persist
        tail = (rho ** h.astype(float))[None, :] if surv[T] > 0 else np.ones((1, h.shape[0]))
        q = np.where((tau >= T)[:, None], tail, q)
        return np.clip(q, 0.0, 1.0)

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """Observe the new completions of ``state`` and return the ``(G, H + 1)``
        expected loads ``E[Lhat_g(h)]`` of the active requests (float)."""
        from bfio.profiles import expected_loads

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


def make_predictor(name: str, noise_low: float = 0.2, noise_high: float = 0.2, seed: int = 0) -> Predictor:
    """Build a predictor by name; raises :class:`ConfigError` naming the option."""
    if name == "oracle":
        return OraclePredictor()
    if name == "noisy":
        for key, v in (("noise_low", noise_low), ("noise_high", noise_high)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
                raise ConfigError(f"{key}: expected a finite number >= 0, got {v!r}")
        from bfio.limits import MAX_NOISE_HIGH

        if noise_high > MAX_NOISE_HIGH:
            raise ConfigError(f"noise_high: expected a value in [0, {MAX_NOISE_HIGH:g}] (bfio.limits.MAX_NOISE_HIGH: "
                              f"an estimate of at most {1 + MAX_NOISE_HIGH:g} times the true length), got {noise_high!r}")
        if noise_low > 1:
            raise ConfigError(f"noise_low: expected a value in [0, 1] (o * U[1 - d_lo, ...] must stay >= 0), "
                              f"got {noise_low!r}")
        return NoisyPredictor(noise_low, noise_high, seed)
    if name == "none":
        return NoPredictor()
    if name == "empirical":
        return EmpiricalPredictor()
    if name == "geometric":
        return GeometricPredictor()
    raise ConfigError(f"predictor: expected {' | '.join(PREDICTORS)}, got {name!r}")


__all__ = ["PREDICTORS", "PROBABILISTIC", "NEVER", "Predictor", "OraclePredictor", "NoisyPredictor", "NoPredictor",
           "SurvivalPredictor", "EmpiricalPredictor", "GeometricPredictor", "make_predictor"]
