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
"""

from __future__ import annotations

import numpy as np

from bfio.errors import ConfigError

PREDICTORS = ("oracle", "noisy", "none")

# "Never finishes within any window": larger than every horizon we accept.
NEVER = np.int64(2**40)


class Predictor:
    """Base class: :meth:`decode_estimate` returns ``o_hat`` for every request."""

    name = "predictor"

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


def make_predictor(name: str, noise_low: float = 0.2, noise_high: float = 0.2, seed: int = 0) -> Predictor:
    """Build a predictor by name; raises :class:`ConfigError` naming the option."""
    if name == "oracle":
        return OraclePredictor()
    if name == "noisy":
        for key, v in (("noise_low", noise_low), ("noise_high", noise_high)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
                raise ConfigError(f"{key}: expected a finite number >= 0, got {v!r}")
        if noise_low > 1:
            raise ConfigError(f"noise_low: expected a value in [0, 1] (o * U[1 - d_lo, ...] must stay >= 0), "
                              f"got {noise_low!r}")
        return NoisyPredictor(noise_low, noise_high, seed)
    if name == "none":
        return NoPredictor()
    raise ConfigError(f"predictor: expected oracle | noisy | none, got {name!r}")


__all__ = ["PREDICTORS", "NEVER", "Predictor", "OraclePredictor", "NoisyPredictor", "NoPredictor",
           "make_predictor"]
