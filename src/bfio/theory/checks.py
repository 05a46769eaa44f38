"""Statistical tolerances shared by the checks.

A Monte Carlo estimate ``x`` with standard error ``se`` is compared to a
theoretical value with a two-sided (equality) or one-sided (inequality) test at
family-wise level ``alpha`` over ``n_tests`` comparisons (Bonferroni), using
the Student-t quantile with the estimate's degrees of freedom.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.student_t import t_quantile

# Appendix C.1, Step B: c_1 = 1 - exp(-1/(4 sqrt(2 pi))), c_2 = c_1 / sqrt(2)
C1_PROOF = 1.0 - np.exp(-1.0 / (4.0 * np.sqrt(2.0 * np.pi)))
C2_PROOF = C1_PROOF / np.sqrt(2.0)


def quantile(alpha: float, n_tests: int, df: float, two_sided: bool = True) -> float:
    """Bonferroni-corrected t quantile."""
    a = alpha / max(int(n_tests), 1)
    if two_sided:
        a /= 2.0
    df = np.inf if df is None or not np.isfinite(df) else max(float(df), 1.0)
    return t_quantile(1.0 - a, df)


def equal_within(est, se, target, q: float, rel_floor: float = 0.0):
    """``|est - target| <= q * se + rel_floor * |target|`` (vectorised)."""
    est, se, target = np.asarray(est, float), np.asarray(se, float), np.asarray(target, float)
    return np.abs(est - target) <= q * se + rel_floor * np.abs(target)


def at_least(est, se, bound, q: float):
    """One-sided: cannot reject ``E[est] >= bound``: ``est + q se >= bound``."""
    return np.asarray(est, float) + q * np.asarray(se, float) >= np.asarray(bound, float)


def at_most(est, se, bound, q: float):
    """One-sided: cannot reject ``E[est] <= bound``: ``est - q se <= bound``."""
    return np.asarray(est, float) - q * np.asarray(se, float) <= np.asarray(bound, float)
