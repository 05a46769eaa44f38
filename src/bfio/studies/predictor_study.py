"""Study 2: how much BF-IO needs its decode-length predictor (issue 6).

BF-IO with horizon ``predictor_study.horizon`` on the paper's backlog settings,
with

- the noisy predictor at every level ``d`` of ``noise_levels``
  (``noise_low = noise_high = d``: estimates ``o * U[1 - d, 1 + d]``);
- every oracle-free predictor of ``predictors`` (e.g. ``empirical``,
  ``geometric`` learned online from completed requests, and ``none``);
- the references in ``references`` (e.g. ``fcfs`` and the oracle ``bfio_h40``).

Rows are built from those lists by :func:`predictor_variants` (labels such as
``noisy_d0.25``, ``pred_empirical``) with columns ``predictor`` and ``noise``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.run import RunSpec, resolve_row, run_batch

def predictor_variants(study: dict) -> dict:
    """Row label -> variant ``{policy, horizon, predictor[, noise_low, noise_high]}``
    for every noise level and oracle-free predictor of the study (config order)."""
    h = int(study["horizon"])
    out = {}
    for d in study.get("noise_levels") or []:
        out[f"noisy_d{float(d):g}"] = {"policy": "bfio", "horizon": h, "predictor": "noisy",
                                        "noise_low": float(d), "noise_high": float(d)}
    for p in study.get("predictors") or []:
        out[f"pred_{p}"] = {"policy": "bfio", "horizon": h, "predictor": p}
    out.update(study.get("variants") or {})
    return out


def row_columns(row: str, variants: dict, bfio_defaults=None) -> dict:
    """``predictor`` and ``noise`` columns of a row (``'-'`` and NaN for non-BF-IO rows)."""
    policy, opts = resolve_row(row, variants, bfio_defaults)
    if policy != "bfio":
        return {"predictor": "-", "noise": np.nan, "horizon": np.nan}
    pred = opts.get("predictor", "oracle")
    noise = float(opts.get("noise_low", 0.2)) if pred == "noisy" else np.nan
    return {"predictor": pred, "noise": noise, "horizon": int(opts.get("horizon", 0))}


def study_rows(study: dict) -> list[str]:
    return list(study.get("references") or []) + list(predictor_variants(study))


def predictor_runs(setting: dict, study: dict, seeds, slots: int, bfio_defaults=None) -> list[RunSpec]:
    variants = predictor_variants(study)
    return [RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                          variants=variants, bfio_defaults=bfio_defaults)
            for row in study_rows(study) for seed in seeds]


def run_predictor_study(name: str, setting: dict, study: dict, seeds, slots: int, frame: pd.DataFrame,
                        bfio_defaults=None, log=None) -> pd.DataFrame:
    """Simulate every row of the study on setting ``name``; one row per run with
    ``setting``, ``predictor``, ``noise``, ``horizon`` and the metrics."""
    runs = predictor_runs(setting, study, seeds, slots, bfio_defaults)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    variants = predictor_variants(study)
    cols = pd.DataFrame([row_columns(r, variants, bfio_defaults) for r in out["row"]])
    out = pd.concat([out, cols], axis=1)
    out.insert(0, "setting", name)
    return out


__all__ = ["predictor_variants", "row_columns", "study_rows", "predictor_runs", "run_predictor_study"]
