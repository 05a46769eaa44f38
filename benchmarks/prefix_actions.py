"""Issue 45's criterion on the prefix-cache settings (not a test): "BF-IO with actions
dominated by no router on (throughput, p99 TTFT), over 10 seeds". Every setting of the
prefix study (``config/config.yaml`` ``prefix_study``: the shared Mooncake trace at two
rates, GRPO groups open and closed loop, closed-loop sessions) with its routers and
regime, run by the study's own runner (:func:`bfio.studies.prefix_study.run_prefix_study`)
on the reporting seeds 42, 1-9, plus two rows of ``prefix_study.variants``:

- ``bfio_moves``: instant BF-IO (its prefix-cache term, ``H`` = 20) with its queue moves
  (``queue_moves: bfio``, :mod:`bfio.sim.moves`; free, no option to choose);
- ``bfio_actions``: the same with its migrations too (``migration: bfio``, ``kv: choose``)
  at the form ``--form`` gives (chosen on the tuning seeds 100-109 by
  ``benchmarks/kv_choice_prefix.py``; nothing is chosen on the reporting seeds).

    python benchmarks/prefix_actions.py --form cost_weight=16,evaluations=1,per_rank=1 [--out CSV]
        [--settings NAME ...] [--seeds 42 1 ...]

Prints, per setting and per subject row (``bfio``, ``bfio_moves``, ``bfio_actions``), the
routers that dominate it (better means on both) and those that dominate it beyond the 95%
intervals (paired by seed), from the study's own table code
(:func:`bfio.studies.prefix_summary.summarize_prefix`, the subject relabelled ``bfio`` and
the other two subjects left out), and its paired lead on throughput and p99 TTFT against
each router. Traces by their registry names under ``$BFIO_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from bfio.studies.prefix_study import run_prefix_study
from bfio.studies.prefix_summary import SUBJECT, summarize_prefix
from bfio.traces import load_trace

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
SEEDS = (42, 1, 2, 3, 4, 5, 6, 7, 8, 9)
SUBJECTS = ("bfio", "bfio_moves", "bfio_actions")


def variants(horizon: int, form: dict) -> dict:
    moves = {"policy": "bfio", "horizon": horizon, "queue_moves": "bfio"}
    return {"bfio_moves": moves,
            "bfio_actions": {**moves, "migration": "bfio", "migration_options": {"kv": "choose", **form}}}


def verdicts(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting and subject: the routers dominating it (means; beyond the intervals) and
    its paired leads, by :func:`summarize_prefix` with the subject as its ``bfio`` row."""
    out = []
    for subject in SUBJECTS:
        others = [s for s in SUBJECTS if s != subject]
        frame = runs[~runs["row"].isin(others)].copy()
        frame["row"] = frame["row"].replace({subject: SUBJECT})
        summary = summarize_prefix(frame)
        for setting, grp in summary.groupby("setting", sort=False):
            me = grp[grp["row"] == SUBJECT].iloc[0]
            leads = "; ".join(f"{r['row']} thr {r['lead_throughput_pct_mean']:+.1f}% "
                              f"[{r['lead_throughput_pct_ci_lo']:+.1f}, {r['lead_throughput_pct_ci_hi']:+.1f}] "
                              f"ttft {r['lead_ttft_p99_pct_mean']:+.1f}% "
                              f"[{r['lead_ttft_p99_pct_ci_lo']:+.1f}, {r['lead_ttft_p99_pct_ci_hi']:+.1f}]"
                              for _, r in grp[grp["row"] != SUBJECT].iterrows())
            out.append({"setting": setting, "subject": subject, "throughput": me["throughput_run_mean"],
                        "ttft_p99": me["ttft_s_p99_mean"], "dominated_by": me["dominated_by"],
                        "dominated_by_significant": me["dominated_by_significant"], "leads": leads})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--form", required=True, help="the migration rule's form, KEY=VALUE,... (cost_weight, "
                                                  "evaluations, per_rank)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--settings", nargs="*", default=None)
    ap.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    args = ap.parse_args()
    form = {k: float(v) if k == "cost_weight" else int(v) for k, v in (p.split("=") for p in args.form.split(","))}
    config = yaml.safe_load(CONFIG.read_text())
    section = dict(config["prefix_study"])
    section["variants"] = variants(int(section["horizon"]), form)
    section["routers"] = list(section["routers"]) + ["bfio_moves", "bfio_actions"]
    rows = []
    for setting in section["settings"]:
        if args.settings and setting["name"] not in args.settings:
            continue
        t0 = time.process_time()
        frame = load_trace(setting["trace"]).to_frame()
        rows.append(run_prefix_study(setting["name"], setting, section, args.seeds, int(config["slots"]), frame))
        print(f"{setting['name']}: {len(rows[-1])} runs, {time.process_time() - t0:.1f} s CPU", flush=True)
        if args.out:
            pd.concat(rows).to_csv(args.out, index=False)
    runs = pd.concat(rows, ignore_index=True)
    table = verdicts(runs)
    with pd.option_context("display.max_colwidth", None, "display.width", 250):
        print(table[["setting", "subject", "throughput", "ttft_p99", "dominated_by",
                     "dominated_by_significant"]].to_string(index=False))
        for _, r in table.iterrows():
            print(f"{r['setting']} {r['subject']}: {r['leads']}")


if __name__ == "__main__":
    main()
