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
(:func:`bfio.lookahead.profiles.expected_loads`, float base loads):

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


The package: :mod:`~bfio.predictors.base` (the base class and conventions),
:mod:`~bfio.predictors.point` (point estimates and their error models),
:mod:`~bfio.predictors.survival` (``empirical``, ``geometric``),
:mod:`~bfio.predictors.posterior` (the noise-aware reading),
:mod:`~bfio.predictors.prompt_survival` and :mod:`~bfio.predictors.expected`
(what the learned ones share). This module is the registry: the names, and
:func:`make_predictor`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.limits import MAX_NOISE_HIGH
from bfio.predictors.base import NEVER, REMAINING, Predictor, default_remaining
from bfio.predictors.expected import MIN_EVENTS, active_requests, kaplan_meier, still_active, weighted_loads
from bfio.predictors.point import (BUCKET_EDGES, BUCKET_VALUES, BucketPredictor, LogNormalPredictor, NoisyPredictor,
                                   NoPredictor, OraclePredictor)
from bfio.predictors.posterior import RATIO_GRID, PosteriorPredictor, ratio_bin, ratio_mean
from bfio.predictors.prompt_survival import PROMPT_EDGES, PromptSurvivalPredictor, prompt_bucket
from bfio.predictors.survival import EmpiricalPredictor, GeometricPredictor, SurvivalPredictor


def _error_model(name, noise_low, noise_high, seed, noise_sigma, bucket_accuracy) -> Predictor:
    """The point predictor of error model ``name`` (:data:`ERROR_MODELS`)."""
    if name == "noisy":
        for key, v in (("noise_low", noise_low), ("noise_high", noise_high)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
                raise ConfigError(f"{key}: expected a finite number >= 0, got {v!r}")

        if noise_high > MAX_NOISE_HIGH:
            raise ConfigError(f"noise_high: expected a value in [0, {MAX_NOISE_HIGH:g}] (bfio.ground.limits.MAX_NOISE_HIGH: "
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


#: The predictors by name: how each is built from the options
#: :func:`make_predictor` takes. The one list of names: :data:`PREDICTORS`, the
#: CLI's and the config schema's choices, is its keys, in this order.
_FACTORIES: dict[str, Callable[..., Predictor]] = {
    "oracle": lambda **_: OraclePredictor(),
    "noisy": lambda **o: _error_model("noisy", **o),
    "none": lambda **_: NoPredictor(),
    "empirical": lambda **_: EmpiricalPredictor(),
    "geometric": lambda **_: GeometricPredictor(),
    "lognormal": lambda **o: _error_model("lognormal", **o),
    "bucket": lambda **o: _error_model("bucket", **o),
    "prompt_survival": lambda **_: PromptSurvivalPredictor(),
}
PREDICTORS = tuple(_FACTORIES)
#: Point predictors with an error model (issue 29): their estimates err, and
#: BF-IO's option ``remaining`` says how the lookahead reads them
#: (:data:`~bfio.predictors.base.REMAINING`).
ERROR_MODELS = ("noisy", "lognormal", "bucket")
#: The predictors whose loads are expectations (float), not point estimates.
PROBABILISTIC = tuple(n for n in PREDICTORS if n not in ERROR_MODELS and _FACTORIES[n]().probabilistic)


def make_predictor(name: str, noise_low: float = 0.2, noise_high: float = 0.2, seed: int = 0, *,
                   noise_sigma: float = 0.5, bucket_accuracy: float = 0.8, remaining: str = "paper") -> Predictor:
    """Build a predictor by name; raises :class:`ConfigError` naming the option.
    A predictor of :data:`ERROR_MODELS` with ``remaining='posterior'`` is read
    through its learned error distribution (:class:`PosteriorPredictor`)."""
    if remaining not in REMAINING:
        raise ConfigError(f"remaining: expected {' | '.join(REMAINING)}, got {remaining!r}")
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(f"predictor: expected {' | '.join(PREDICTORS)}, got {name!r}")
    p = factory(noise_low=noise_low, noise_high=noise_high, seed=seed, noise_sigma=noise_sigma,
                bucket_accuracy=bucket_accuracy)
    return PosteriorPredictor(p) if name in ERROR_MODELS and remaining == "posterior" else p


__all__ = ["PREDICTORS", "PROBABILISTIC", "ERROR_MODELS", "REMAINING", "default_remaining", "BUCKET_EDGES", "BUCKET_VALUES", "NEVER",
           "Predictor", "OraclePredictor", "NoisyPredictor", "LogNormalPredictor", "BucketPredictor", "NoPredictor",
           "SurvivalPredictor", "EmpiricalPredictor", "GeometricPredictor", "PosteriorPredictor", "PromptSurvivalPredictor",
           "PROMPT_EDGES", "prompt_bucket", "still_active", "active_requests", "weighted_loads", "RATIO_GRID",
           "MIN_EVENTS", "ratio_bin", "kaplan_meier", "ratio_mean", "make_predictor"]
