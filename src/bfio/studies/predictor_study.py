"""Study 2: how much BF-IO needs its decode-length predictor (issue 6).

BF-IO with horizon ``predictor_study.horizon`` on the paper's backlog settings,
with

- the error models (issue 29), each at every level of its list, read by
  each of ``readings`` (BF-IO option ``remaining``: ``posterior``, the learned
  error distribution; ``paper``, ``r = max(1, o_hat - tau)``): the paper's
  uniform ``noisy`` at every ``d`` of ``noise_levels`` (``o * U[1 - d, 1 + d]``),
  ``lognormal`` at every ``sigma`` of ``lognormal_sigmas`` and ``bucket`` at
  every accuracy of ``bucket_accuracies``;
- every oracle-free predictor of ``predictors`` (e.g. ``empirical``,
  ``geometric`` learned online from completed requests, and ``none``);
- the references in ``references`` (e.g. ``fcfs`` and the oracle ``bfio_h40``).

Rows are built from those lists by :func:`predictor_variants` (labels such as
``noisy_d0.25``, ``noisy_d0.25_paper``, ``lognormal_s0.5``, ``bucket_a0.7``,
``pred_empirical``) with columns ``predictor``, ``remaining``, ``noise`` (the
level: ``d``, ``sigma`` or the accuracy) and ``horizon``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.predictors import PREDICTORS, default_remaining
from bfio.runs.run import RunSpec
from bfio.runs.runner import run_batch
from bfio.studies.registry import Study, register_study
from bfio.studies.predictor_summary import predictor_table

#: Error models of the study: predictor -> (config key of its levels, the BF-IO
#: option each level sets, the row label's prefix of a level).
ERROR_LEVELS = {"noisy": ("noise_levels", ("noise_low", "noise_high"), "d"),
                "lognormal": ("lognormal_sigmas", ("noise_sigma",), "s"),
                "bucket": ("bucket_accuracies", ("bucket_accuracy",), "a")}


def predictor_variants(study: dict) -> dict:
    """Row label -> BF-IO variant for every error model x level x reading and
    every oracle-free predictor of the study (config order)."""
    h = int(study["horizon"])
    out = {}
    readings = study.get("readings") or ["posterior"]
    for predictor, (key, options, prefix) in ERROR_LEVELS.items():
        for level in study.get(key) or []:
            for reading in readings:
                label = f"{predictor}_{prefix}{float(level):g}" + ("" if reading == "posterior" else f"_{reading}")
                out[label] = {"policy": "bfio", "horizon": h, "predictor": predictor,
                              **{o: float(level) for o in options}, "remaining": reading}
    for p in study.get("predictors") or []:
        out[f"pred_{p}"] = {"policy": "bfio", "horizon": h, "predictor": p}
    out.update(study.get("variants") or {})
    return out


def row_columns(run: RunSpec) -> dict:
    """``predictor``, ``remaining``, ``noise`` (the error level) and ``horizon``
    columns of a run, from its policy's resolved options (``'-'`` and NaN where
    they do not apply)."""
    if run.policy != "bfio":
        return {"predictor": "-", "remaining": "-", "noise": np.nan, "horizon": np.nan}
    v = run.resolved_options
    level = ERROR_LEVELS.get(v["predictor"])
    reading = v["remaining"] or default_remaining(v["solver"])
    return {"predictor": v["predictor"], "remaining": reading if level else "-",
            "noise": v[level[1][0]] if level else np.nan, "horizon": v["horizon"]}


def study_rows(study: dict) -> list[str]:
    return list(study.get("references") or []) + list(predictor_variants(study))


def predictor_runs(setting: dict, study: dict, seeds, slots: int, bfio_defaults=None,
                   defaults=None) -> list[RunSpec]:
    variants = predictor_variants(study)
    return [RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                          variants=variants, bfio_defaults=bfio_defaults, defaults=defaults)
            for row in study_rows(study) for seed in seeds]


def run_predictor_study(name: str, setting: dict, study: dict, seeds, slots: int, frame: pd.DataFrame,
                        bfio_defaults=None, log=None, defaults=None) -> pd.DataFrame:
    """Simulate every row of the study on setting ``name``; one row per run with
    ``setting``, ``predictor``, ``noise``, ``horizon`` and the metrics."""
    runs = predictor_runs(setting, study, seeds, slots, bfio_defaults, defaults)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    cols = pd.DataFrame([row_columns(r) for r in runs])
    out = pd.concat([out, cols], axis=1)
    out.insert(0, "setting", name)
    return out


def schema_enums(properties: dict) -> None:
    """The section schema's predictor names: the predictors' registry (:data:`bfio.predictors.PREDICTORS`)."""
    items = properties.get("predictors", {}).get("items")
    if items is not None:
        items["enum"] = list(PREDICTORS)


STUDY = register_study(Study(
    name="predictor_study", description="BF-IO with noisy and oracle-free decode-length predictors",
    directory="predictors", table="predictors", figure="predictor_noise",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_predictor_study(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=predictor_table, plot="bfio.figures.predictor_noise:plot_predictor_noise",
    modules=("studies/predictor_study.py",), table_modules=("studies/predictor_summary.py",), figure_modules=("figures/predictor_noise.py",),
    schema_enums=schema_enums,
    caption="""BF-IO (H = {{ config["predictor_study"]["horizon"] }}) with imperfect
decode-length predictors (study beyond the paper, ``docs/studies.md``): average
imbalance (tokens) and throughput (tokens/s) against the noise level d of the
noisy predictor (estimate o x U[1-d, 1+d]), d in
{{ config["predictor_study"]["noise_levels"] }}; horizontal lines: the
references {{ config["predictor_study"]["references"] }} (oracle
predictor) and the oracle-free predictors
{{ config["predictor_study"]["predictors"] }}, with their 95% CI as a
band. Backlog mode, paper metric window; mean over seeds
{{ config["seeds"] }}.""",
))

__all__ = ["schema_enums", "predictor_variants", "row_columns", "study_rows", "predictor_runs", "run_predictor_study", "STUDY"]
