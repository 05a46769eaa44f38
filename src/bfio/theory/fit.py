"""Shape checks for statements with an unknown universal constant ``c``.

A statement ``IIR >= c * rate`` is checked by its shape on the grid:

- ``c_fit``: least squares through the origin, ``IIR ~ c * rate``, with the
  centred ``R^2 = 1 - sum (IIR - c rate)^2 / sum (IIR - mean IIR)^2``;
- per-cell constants ``c_cell = IIR / rate``: min, max, spread ``max/min``
  and coefficient of variation (the constant is *stable* if the spread is at
  most ``spread_tol``);
- the log-log slope ``b`` of ``IIR`` on ``rate``: the lower bound's shape holds
  if ``b + slope_z * se(b) >= 1 - slope_tol`` (IIR grows at least as fast as the rate; a stable
  constant means ``b ~ 1``, ``b > 1`` means the rate is loose).
"""

from __future__ import annotations

import numpy as np


def fit_through_origin(x, y) -> dict:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size == 0:
        return {"c_fit": np.nan, "c_fit_se": np.nan, "r2": np.nan}
    c = float(np.dot(x, y) / np.dot(x, x))
    res = y - c * x
    sst = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(res**2)) / sst if sst > 0 else np.nan
    se = float(np.sqrt(np.sum(res**2) / max(x.size - 1, 1) / np.dot(x, x)))
    return {"c_fit": c, "c_fit_se": se, "r2": r2}


def loglog_slope(x, y) -> dict:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    lx, ly = np.log(x[ok]), np.log(y[ok])
    if lx.size < 3 or np.ptp(lx) == 0:
        return {"slope": np.nan, "slope_se": np.nan, "slope_r2": np.nan}
    A = np.vstack([np.ones_like(lx), lx]).T
    coef, *_ = np.linalg.lstsq(A, ly, rcond=None)
    res = ly - A @ coef
    s2 = float(np.sum(res**2)) / max(lx.size - 2, 1)
    cov = s2 * np.linalg.inv(A.T @ A)
    sst = float(np.sum((ly - ly.mean()) ** 2))
    return {"slope": float(coef[1]), "slope_se": float(np.sqrt(cov[1, 1])),
            "slope_r2": 1.0 - float(np.sum(res**2)) / sst if sst > 0 else np.nan}


def shape_check(rate, iir, spread_tol: float = 4.0, slope_tol: float = 0.1, slope_z: float = 2.0) -> dict:
    """All shape statistics and the two verdicts ``shape_pass`` (lower-bound shape)
    and ``constant_stable`` (the rate is tight up to ``spread_tol``)."""
    rate, iir = np.asarray(rate, float), np.asarray(iir, float)
    c = iir / rate
    out = {"cells": int(rate.size), **fit_through_origin(rate, iir), **loglog_slope(rate, iir)}
    out["c_min"] = float(np.nanmin(c))
    out["c_max"] = float(np.nanmax(c))
    out["c_median"] = float(np.nanmedian(c))
    out["c_spread"] = out["c_max"] / out["c_min"] if out["c_min"] > 0 else np.inf
    out["c_cv"] = float(np.nanstd(c) / np.nanmean(c))
    out["constant_stable"] = bool(out["c_spread"] <= spread_tol)
    out["shape_pass"] = bool(out["c_min"] > 0 and np.isfinite(out["slope"])
                             and out["slope"] + slope_z * out["slope_se"] >= 1 - slope_tol)
    return out


def power_law(x, y) -> dict:
    """``log y = a + b log x`` (for gap-vs-B/G trends)."""
    return loglog_slope(x, y)
