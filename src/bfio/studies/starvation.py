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

from bfio.lookahead.admission import ADMISSION_PATTERN
from bfio.lookahead.run_keys import admission_label
from bfio.studies.declared_rows import starvation_row_specs
from bfio.runs.run import RunSpec, policy_defaults, resolve_row
from bfio.runs.runner import run_batch
from bfio.studies.registry import Study, register_study, studies
from bfio.ground.errors import ConfigError
from bfio.studies.starvation_summary import COST_METRICS, online_rows, starvation_extras, starvation_table


def starvation_variants(setting: dict, study: dict) -> dict:
    """Row label ``bfio_h<H>_<admission>`` -> BF-IO variant, for every horizon
    of the setting and every admission of the study (config order)."""
    return {spec.key: {"policy": "bfio", "horizon": spec.horizon, "admission": spec.admission}
            for spec in starvation_row_specs(setting, study)}


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


def validate_section(section: dict, config: dict) -> None:
    """``starvation.proposed_default`` is one of the study's admissions; every row of
    ``starvation.online_rows`` is a central row of the online study that runs BF-IO
    with the admission it is listed under (``free`` among them)."""
    proposed = section.get("proposed_default")
    if proposed is not None and proposed not in (section.get("admissions") or []):
        raise ConfigError(f"config key 'starvation.proposed_default': {proposed!r} is not one of "
                          f"starvation.admissions ({', '.join(section.get('admissions') or [])})")
    rows = online_rows(section)
    if not rows:
        return
    if len(rows) != len(section.get("online_rows") or []):
        raise ConfigError("config key 'starvation.online_rows': an admission is listed twice")
    if "free" not in rows:
        raise ConfigError("config key 'starvation.online_rows': needs 'free' (the reference of the cost)")
    online = config.get("online") or {}
    central = online.get("central") or []
    for adm, row in rows.items():
        key = f"config key 'starvation.online_rows.{adm}'"
        if row not in central:
            raise ConfigError(f"{key}: row {row!r} is not in online.central ({', '.join(central) or 'empty'})")
        policy, opts = resolve_row(row, online.get("variants") or {}, defaults=policy_defaults(config))
        got = opts.get("admission")
        if policy != "bfio" or got != adm:
            raise ConfigError(f"{key}: row {row!r} runs {policy} with admission {got!r}, not BF-IO with {adm!r}")


def _online_run_files(config: dict) -> list[str]:
    """The online study's runs files, when ``starvation.online_rows`` reads them."""
    if not (config.get("starvation") or {}).get("online_rows"):
        return []
    online = studies()["online"]
    return [f"results/studies/{online.directory}/{online.run_stem(k, v)}.csv"
            for k, v in online.settings(config).items()]


def schema_enums(properties: dict) -> None:
    """The section schema's admission rules (the rules' registry, :data:`bfio.lookahead.admission.ADMISSIONS`)
    and cost metrics (:data:`bfio.studies.starvation_summary.COST_METRICS`)."""
    if "admissions" in properties:
        properties["admissions"]["items"]["pattern"] = f"^({ADMISSION_PATTERN})$"
    if "cost_metric" in properties:
        properties["cost_metric"]["enum"] = list(COST_METRICS)


STUDY = register_study(Study(
    name="starvation", description="starvation and fairness of BF-IO's admission rules",
    figure="starvation",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_starvation(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=starvation_table, plot="bfio.figures.starvation:plot_starvation",
    extras=starvation_extras,
    table_inputs=_online_run_files, validate=validate_section, sim_keys=("admissions", "references"),
    extra_outputs=("recommendation",), builds_on=("online",), schema_enums=schema_enums,
    modules=("studies/starvation.py",), table_modules=("studies/starvation_summary.py",), figure_modules=("figures/starvation.py",),
    caption="""Starvation and fairness (study beyond the paper, ``docs/studies.md``): p99 and
maximum wait (pool entry to admission, s, log scale) against throughput
(tokens/s) for BF-IO with the admission rules
{{ config["starvation"]["admissions"] }} (one marker each, one line
per horizon H) and the references {{ config["starvation"]["references"] }}
(stars). Backlog mode, paper settings; mean over seeds
{{ config["seeds"] }} with 95% CI bars.""",
))

__all__ = ["admission_label", "schema_enums", "starvation_variants", "starvation_runs", "run_starvation", "STUDY"]
