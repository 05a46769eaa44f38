"""Bounded prefill-length laws of the Section 5 model.

The theorems assume i.i.d. prefill lengths ``s_i`` drawn from a distribution
``D_prefill`` supported on ``{1, ..., s_max}`` with standard deviation
``sigma_s`` and the non-degeneracy condition ``kappa_0 <= sigma_s / s_max <= 1/2``.
A :class:`PrefillLaw` is a probability mass function on that support.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bfio.traces import load_trace


@dataclass(frozen=True)
class PrefillLaw:
    """A pmf on ``{1, ..., s_max}`` (``pmf[j]`` is ``P(s = j + 1)``)."""

    name: str
    pmf: np.ndarray

    def __post_init__(self):
        pmf = np.asarray(self.pmf, dtype=float)
        if pmf.ndim != 1 or pmf.size < 1 or np.any(pmf < 0) or not np.isclose(pmf.sum(), 1.0):
            raise ValueError(f"{self.name}: pmf must be a non-negative vector summing to 1")
        object.__setattr__(self, "pmf", pmf / pmf.sum())

    @property
    def s_max(self) -> int:
        return int(self.pmf.size)

    @property
    def support(self) -> np.ndarray:
        return np.arange(1, self.s_max + 1, dtype=np.int64)

    @property
    def mean(self) -> float:
        """``mu_s``."""
        return float(np.dot(self.support, self.pmf))

    @property
    def var(self) -> float:
        """``sigma_s^2``."""
        return float(np.dot((self.support - self.mean) ** 2, self.pmf))

    @property
    def std(self) -> float:
        """``sigma_s``."""
        return float(np.sqrt(self.var))

    @property
    def kappa(self) -> float:
        """``sigma_s / s_max`` (the non-degeneracy ratio, at most 1/2 by Popoviciu)."""
        return self.std / self.s_max

    @property
    def max_class_prob(self) -> float:
        return float(self.pmf.max())

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        """i.i.d. draws (int64) by inverse-cdf lookup."""
        cdf = np.cumsum(self.pmf)
        cdf[-1] = 1.0
        u = rng.random(size)
        return (np.searchsorted(cdf, u, side="right") + 1).astype(np.int64)

    def describe(self) -> dict:
        return {"dist": self.name, "s_max": self.s_max, "mu_s": self.mean,
                "sigma_s": self.std, "kappa": self.kappa}


def uniform(s_max: int) -> PrefillLaw:
    """Uniform on ``{1..s_max}``: ``sigma_s = sqrt((s_max^2 - 1)/12)``."""
    return PrefillLaw("uniform", np.full(s_max, 1.0 / s_max))


def two_point(s_max: int, low: int = 1, high: int | None = None, p_low: float = 0.5) -> PrefillLaw:
    """Mass ``p_low`` at ``low`` and ``1 - p_low`` at ``high`` (default ``s_max``)."""
    high = s_max if high is None else int(high)
    if not 1 <= low < high <= s_max or not 0 < p_low < 1:
        raise ValueError("two_point needs 1 <= low < high <= s_max and 0 < p_low < 1")
    pmf = np.zeros(s_max)
    pmf[low - 1] = p_low
    pmf[high - 1] = 1 - p_low
    return PrefillLaw("two_point", pmf)


def scale_to_support(values, s_max: int, clip_quantile: float = 1.0) -> np.ndarray:
    """Map positive token counts to ``{1..s_max}``:
    ``s = clip(ceil(s_max * v / q), 1, s_max)`` with ``q`` the ``clip_quantile``
    quantile of ``v`` (``1.0``: the maximum, a pure rescaling)."""
    v = np.asarray(values, dtype=float)
    q = float(np.quantile(v, clip_quantile))
    return np.clip(np.ceil(s_max * v / q), 1, s_max).astype(np.int64)


def empirical(name: str, values, s_max: int, clip_quantile: float = 1.0) -> PrefillLaw:
    """The empirical law of a trace's prefill lengths scaled to ``{1..s_max}``."""
    s = scale_to_support(values, s_max, clip_quantile)
    pmf = np.bincount(s - 1, minlength=s_max).astype(float)
    return PrefillLaw(name, pmf / pmf.sum())


def trace_law(trace: str, s_max: int, clip_quantile: float = 1.0, data_dir=None) -> PrefillLaw:
    """Empirical prefill law of a known trace (``longbench``, ``burstgpt``, ...)."""
    t = load_trace(trace, data_dir=data_dir)
    return empirical(trace, t.prefill, s_max, clip_quantile)


def make_law(spec: dict, s_max: int, data_dir=None) -> PrefillLaw:
    """Build a law from a config entry ``{"kind": ..., ...}`` (see the theory schema)."""
    kind = spec["kind"]
    if kind == "uniform":
        law = uniform(s_max)
    elif kind == "two_point":
        law = two_point(s_max, int(spec.get("low", 1)), spec.get("high"), float(spec.get("p_low", 0.5)))
    elif kind == "trace":
        law = trace_law(spec["trace"], s_max, float(spec.get("clip_quantile", 1.0)), data_dir)
    else:
        raise ValueError(f"unknown prefill distribution kind {kind!r}")
    name = spec.get("name", law.name)
    return PrefillLaw(name, law.pmf)
