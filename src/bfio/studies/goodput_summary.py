"""The goodput study's table (issue 44): per setting, every router's goodput,
its share of the model's capacity and the headroom it leaves, best first.

Kept apart from :mod:`bfio.studies.goodput_study` so the workflow reruns only
the table, never the bisections, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.metrics import STEADY, WARMUP_SHARE
from bfio.studies.report import fmt, markdown_table


def summarize_goodput(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs, best goodput first within each setting, with ``headroom_rps``
    (capacity minus goodput) and ``vs_best_pct`` (goodput against the setting's
    best router, %)."""
    out = runs.copy()
    out["headroom_rps"] = out["capacity_rps"] - out["goodput_rps"]
    best = out.groupby("setting")["goodput_rps"].transform("max")
    out["vs_best_pct"] = 100.0 * (out["goodput_rps"] / best - 1.0)
    order = {s: i for i, s in enumerate(dict.fromkeys(out["setting"]))}
    out["_s"] = out["setting"].map(order)
    out = out.sort_values(["_s", "goodput_rps"], ascending=[True, False], kind="stable").drop(columns="_s")
    return out.reset_index(drop=True)


def _label(r) -> str:
    from bfio.studies.online_summary import policy_label

    return policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"), r.get("horizon"))


def goodput_markdown(summary: pd.DataFrame, settings: dict, title: str = "Goodput", rel_tol: float | None = None) -> str:
    lines = [f"# {title}", ""]
    if len(summary):
        r0 = summary.iloc[0]
        key = str(r0["ttft_metric"])
        ttft = ("p99 queue wait (the paper's step loop has no prefill: the first token comes with the first "
                "decode step)" if key.startswith("queue_wait_s_p99") else "p99 TTFT")
        if key.endswith(STEADY):
            ttft += (f"; every p99 over the requests arriving after the first {100 * WARMUP_SHARE:g}% of a run, "
                     "discarded as warm-up (a run starts empty)")
        lines += [f"Goodput: the highest Poisson arrival rate (requests/s) whose runs meet p99 TTFT <= "
                  f"{r0['ttft_slo_s']:g} s and p99 TPOT <= {r0['tpot_slo_s']:g} s (means over {int(r0['n_seeds'])} "
                  f"seeds of each run's p99; TTFT read as the {ttft}), by bisection up to the model's capacity "
                  "(every slot busy, every worker at the mean load: no router sustains more). *at capacity*: the "
                  "targets held at the capacity itself, so the runs there are a transient."
                  + (f" The bisection stops at a bracket of {100 * rel_tol:g}% of the capacity: smaller differences "
                     "between routers are not resolved." if rel_tol else ""), ""]
    for setting, grp in summary.groupby("setting", sort=False):
        s = settings.get(setting, {})
        lines += [f"## {setting}: {s.get('trace', grp['trace'].iloc[0])}, G={int(grp['workers'].iloc[0])}, "
                  f"B={int(grp['slots'].iloc[0])}, N={int(grp['requests'].iloc[0]):,}; capacity "
                  f"{fmt(grp['capacity_rps'].iloc[0])} req/s", ""]
        lines += [markdown_table(grp.to_dict("records"), [
            ("router", _label), ("goodput (req/s)", lambda r: fmt(r["goodput_rps"])),
            ("share of capacity", lambda r: f"{100 * r['goodput_share']:.1f}%"),
            ("headroom (req/s)", lambda r: fmt(r["headroom_rps"])),
            ("vs best router", lambda r: f"{r['vs_best_pct']:+.1f}%"),
            ("at capacity", lambda r: "yes" if r["at_capacity"] else "no")]), ""]
    return "\n".join(lines)


__all__ = ["summarize_goodput", "goodput_markdown"]
