"""The point predictors: an estimate ``o_hat_i`` per request (Section 4; issue 29's
error models ``noisy``, ``lognormal``, ``bucket``).
"""

from __future__ import annotations

import numpy as np

from bfio.predictors.base import NEVER, Predictor

#: Length buckets of the ``bucket`` predictor (tokens; upper edges, the last open)
#: and the length it reports for each (the bucket's middle; 2048 for the open one).
BUCKET_EDGES = (64, 256, 1024)
BUCKET_VALUES = (32, 160, 640, 2048)


class OraclePredictor(Predictor):
    """True decode lengths: ``r_i = o_i - tau_i``.

    The estimate is a read-only view of ``decode`` (int64; a copy only when
    ``decode`` is of another type), not a copy: one array of ``N`` values a run
    (12 MB at ``N = 1.5M``) that no caller writes to, and writing to it raises
    (issue 40). ``decode`` is a workload's, which nothing changes in place."""

    name = "oracle"

    def decode_estimate(self, decode):
        out = np.asarray(decode, dtype=np.int64).view()
        out.flags.writeable = False
        return out


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


__all__ = ["BUCKET_EDGES", "BUCKET_VALUES", "OraclePredictor", "NoisyPredictor", "LogNormalPredictor",
           "BucketPredictor", "NoPredictor"]
