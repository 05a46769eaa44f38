"""Study 3: starvation and fairness of BF-IO's admission rule (issue 6).

Eq. (IO) admits *any* ``U`` of the waiting requests, so a request whose
prefill never fits the balance can wait indefinitely (``admission: free``).
The router offers ``fifo`` (the oldest ``U`` are admitted, only their
placement is optimized) and ``aging:N`` (requests waiting ``N`` or more steps
are admitted first). For every setting of ``starvation.settings`` (the paper's
backlog settings) and every horizon of the setting, BF-IO runs with every
admission of ``starvation.admissions``, next to the ``references`` (FCFS, which
admits in arrival order). Reported: p99 and max wait in steps and seconds,
throughput and imbalance, the paired throughput cost of each admission against
``free`` (same H, per seed) and :func:`bfio.studies.starvation_summary.recommend_admission`'s pick.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.run_keys import admission_label, row_key
from bfio.run import RunSpec, run_batch
from bfio.studies.registry import Study, register_study


def starvation_variants(setting: dict, study: dict) -> dict:
    """Row label ``bfio_h<H>_<admission>`` -> BF-IO variant, for every horizon
    of the setting and every admission of the study (config order)."""
    return {row_key("bfio", h, admission=a): {"policy": "bfio", "horizon": int(h), "admission": a}
            for h in setting["horizons"] for a in study["admissions"]}


def starvation_runs(setting: dict, study: dict, seeds, slots: int, bfio_defaults=None, defaults=None):
    variants = starvation_variants(setting, study)
    rows = list(study.get("references") or []) + list(variants)
    runs = [RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                          variants=variants, bfio_defaults=bfio_defaults, defaults=defaults)
            for row in rows for seed in seeds]
    return runs, variants


def run_starvation(name: str, setting: dict, study: dict, seeds, slots: int, frame: pd.DataFrame,
                   bfio_defaults=None, log=None, defaults=None) -> pd.DataFrame:
    """Simulate every row of the study on setting ``name``; one row per run with
    ``setting``, ``horizon``, ``admission`` and the metrics."""
    runs, variants = starvation_runs(setting, study, seeds, slots, bfio_defaults, defaults)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    out.insert(0, "setting", name)
    # the study's columns are the runs' resolved options (variant rows only, as the study compares them)
    resolved = [run.resolved_options if run.row in variants else None for run in runs]
    out["horizon"] = [v["horizon"] if v else np.nan for v in resolved]
    out["admission"] = [v["admission"] if v else "-" for v in resolved]
    return out


def _recommendation(runs: pd.DataFrame, section: dict):
    from bfio.studies.starvation_summary import recommend_admission, summarize_starvation

    summary = summarize_starvation(runs)
    return summary, recommend_admission(summary, section["max_throughput_cost_pct"], by=section["recommend_by"],
                                        max_wait_vs_free_p99=section.get("max_wait_vs_free_p99"),
                                        cost_metric=section.get("cost_metric", "throughput"))


def _tabulate(runs: pd.DataFrame, section: dict, settings: dict):
    from bfio.studies.starvation_summary import starvation_markdown

    summary, rec = _recommendation(runs, section)
    return summary, starvation_markdown(summary, settings, rec, section["description"])


STUDY = register_study(Study(
    name="starvation", description="starvation and fairness of BF-IO's admission rules",
    figure="starvation",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_starvation(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=_tabulate, plot="bfio.figures.starvation:plot_starvation",
    extras=lambda runs, section, settings: {"recommendation": _recommendation(runs, section)[1]},
    extra_outputs=("recommendation",),
    modules=("studies/starvation.py",), table_modules=("studies/starvation_summary.py",), figure_modules=("figures/starvation.py",),
    caption="""Starvation and fairness (study beyond the paper, ``docs/studies.md``): p99 and
maximum wait (pool entry to admission, s, log scale) against throughput
(tokens/s) for BF-IO with the admission rules
{{ config["starvation"]["admissions"] }} (one marker each, one line
per horizon H) and the references {{ config["starvation"]["references"] }}
(stars). Backlog mode, paper settings; mean over seeds
{{ config["seeds"] }} with 95% CI bars.""",
))

__all__ = ["admission_label", "starvation_variants", "starvation_runs", "run_starvation", "STUDY"]
