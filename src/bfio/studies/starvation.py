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

from bfio.paper import admission_label, row_key
from bfio.run import RunSpec, run_batch


def starvation_variants(setting: dict, study: dict) -> dict:
    """Row label ``bfio_h<H>_<admission>`` -> BF-IO variant, for every horizon
    of the setting and every admission of the study (config order)."""
    return {row_key("bfio", h, admission=a): {"policy": "bfio", "horizon": int(h), "admission": a}
            for h in setting["horizons"] for a in study["admissions"]}


def starvation_runs(setting: dict, study: dict, seeds, slots: int, bfio_defaults=None):
    variants = starvation_variants(setting, study)
    rows = list(study.get("references") or []) + list(variants)
    runs = [RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                          variants=variants, bfio_defaults=bfio_defaults) for row in rows for seed in seeds]
    return runs, variants


def run_starvation(name: str, setting: dict, study: dict, seeds, slots: int, frame: pd.DataFrame,
                   bfio_defaults=None, log=None) -> pd.DataFrame:
    """Simulate every row of the study on setting ``name``; one row per run with
    ``setting``, ``horizon``, ``admission`` and the metrics."""
    runs, variants = starvation_runs(setting, study, seeds, slots, bfio_defaults)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    out.insert(0, "setting", name)
    out["horizon"] = [variants[r]["horizon"] if r in variants else np.nan for r in out["row"]]
    out["admission"] = [variants[r]["admission"] if r in variants else "-" for r in out["row"]]
    return out


__all__ = ["admission_label", "starvation_variants", "starvation_runs", "run_starvation"]
