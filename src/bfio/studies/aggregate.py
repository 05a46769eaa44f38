"""Aggregating study runs over seeds: means with 95% Student-t intervals
(:func:`bfio.runs.tables.mean_ci`) and paired effects of a target row against a
baseline row (ratio, relative gain, saving), paired by seed. A ratio's summary
is its geometric mean with the t-interval of the log ratios, exponentiated
(:func:`bfio.runs.tables.ratio_ci`: positive bounds, reciprocal for the inverse ratio)."""

from __future__ import annotations

import math

import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.runs.tables import mean_ci, ratio_ci

#: Effect kinds: how a (baseline, target) pair of one seed becomes one number.
EFFECTS = {
    # e.g. imbalance FCFS / BF-IO (> 1: BF-IO better); a zero target gives inf, left out by ratio_ci
    "ratio": lambda b, t: b / t if t != 0 else math.inf,
    "gain_pct": lambda b, t: 100.0 * (t / b - 1.0),    # e.g. throughput gain of BF-IO
    "saving_pct": lambda b, t: 100.0 * (1.0 - t / b),  # e.g. energy saving of BF-IO
}


def summarize_runs(runs: pd.DataFrame, by, metrics) -> pd.DataFrame:
    """Per group in ``by``: ``<metric>_mean``, ``_ci_lo``, ``_ci_hi`` and ``n_seeds``."""
    missing = [m for m in metrics if m not in runs.columns]
    if missing:
        raise ConfigError(f"metrics: {missing} are not columns of the study results")
    out = []
    for keys, grp in runs.groupby(list(by), sort=False, dropna=False):
        rec = dict(zip(by, keys if isinstance(keys, tuple) else (keys,)))
        for m in metrics:
            rec[f"{m}_mean"], rec[f"{m}_ci_lo"], rec[f"{m}_ci_hi"], _ = mean_ci(grp[m].to_numpy(dtype=float))
        rec["n_seeds"] = int(grp["seed"].nunique())
        out.append(rec)
    return pd.DataFrame(out)


def paired_effect(runs: pd.DataFrame, by, baseline: str, target: str, metric: str, effect: str) -> pd.DataFrame:
    """Per group in ``by``: the ``effect`` of row ``target`` over row ``baseline``
    on ``metric``, computed per seed (paired) then averaged with a 95% t interval.

    Columns: the ``by`` keys, ``<effect>_mean``, ``_ci_lo``, ``_ci_hi``, ``n_seeds``.
    Groups where either row is missing are left out of the result (reported by
    ``n_seeds = 0`` rows, never silently dropped).
    """
    if effect not in EFFECTS:
        raise ConfigError(f"effect: expected one of {', '.join(EFFECTS)}, got {effect!r}")
    fn = EFFECTS[effect]
    out = []
    for keys, grp in runs.groupby(list(by), sort=False, dropna=False):
        rec = dict(zip(by, keys if isinstance(keys, tuple) else (keys,)))
        b = grp[grp["row"] == baseline].set_index("seed")[metric]
        t = grp[grp["row"] == target].set_index("seed")[metric]
        seeds = sorted(set(b.index) & set(t.index))
        vals = [float(fn(float(b[s]), float(t[s]))) for s in seeds]
        summary = ratio_ci if effect == "ratio" else mean_ci  # ratios: geometric mean, log-scale interval
        rec[f"{effect}_mean"], rec[f"{effect}_ci_lo"], rec[f"{effect}_ci_hi"], rec["n_seeds"] = summary(vals)
        rec["baseline"], rec["target"], rec["metric"] = baseline, target, metric
        out.append(rec)
    return pd.DataFrame(out)


__all__ = ["EFFECTS", "summarize_runs", "paired_effect"]
