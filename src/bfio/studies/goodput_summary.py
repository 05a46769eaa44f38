"""The goodput study's table (issue 44): per setting, every router's goodput,
its share of the model's capacity and the headroom it leaves, best first.

Kept apart from :mod:`bfio.studies.goodput_study` so the workflow reruns only
the table, never the bisections, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.metrics import STEADY, WARMUP_SHARE
from bfio.studies.report import fmt, markdown_table
from bfio.studies.online_summary import policy_label


def summarize_goodput(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs, best goodput first within each setting, with ``headroom_rps``
    (capacity minus goodput) and ``vs_best_pct`` (goodput against the setting's
    best router, %)."""
    out = runs.copy()
    if "regime" not in out.columns:  # runs written before the regimes: the paper's step
        out["regime"] = "paper"
    out["headroom_rps"] = out["capacity_rps"] - out["goodput_rps"]
    best = out.groupby(SECTION)["goodput_rps"].transform("max")
    out["vs_best_pct"] = 100.0 * (out["goodput_rps"] / best - 1.0)
    order = {s: i for i, s in enumerate(dict.fromkeys(zip(out["setting"], out["regime"])))}
    out["_s"] = [order[k] for k in zip(out["setting"], out["regime"])]
    out = out.sort_values(["_s", "goodput_rps"], ascending=[True, False], kind="stable").drop(columns="_s")
    return out.reset_index(drop=True)


#: A table section: one setting in one regime.
SECTION = ["setting", "regime"]
#: The policy whose goodput the table compares with the production routers.
SUBJECT = "bfio"


def headroom_recovered(grp: pd.DataFrame) -> dict:
    """In one section: the best production router (an instant row that is not
    :data:`SUBJECT`) and its goodput, the best :data:`SUBJECT` row's, and the share
    of the headroom the production router leaves (capacity minus its goodput)
    that BF-IO recovers, ``(bfio - best) / (capacity - best)`` (NaN when the
    router leaves none)."""
    prod = grp[(grp["dispatch"] == "instant") & (grp["policy"] != SUBJECT)]
    ours = grp[grp["policy"] == SUBJECT]
    if prod.empty or ours.empty:
        return {}
    best = prod.loc[prod["goodput_rps"].idxmax()]
    bfio = ours.loc[ours["goodput_rps"].idxmax()]
    room = float(best["capacity_rps"] - best["goodput_rps"])
    return {"best_router": best, "bfio": bfio,
            "recovered": float(bfio["goodput_rps"] - best["goodput_rps"]) / room if room > 0 else float("nan")}


def _label(r) -> str:
    return policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"), r.get("horizon"))


def _ttft_words(grp: pd.DataFrame) -> str:
    """What a section's runs read as TTFT (their ``ttft_metric``)."""
    key = str(grp["ttft_metric"].iloc[0])
    words = ("p99 queue wait (this step loop has no prefill: the first token comes with the first decode step)"
             if key.startswith("queue_wait_s_p99") else "p99 TTFT of the prefill model")
    if key.endswith(STEADY):
        words += (f", over the requests arriving after the first {100 * WARMUP_SHARE:g}% of a run (discarded as "
                  "warm-up: a run starts empty)")
    return words


def goodput_markdown(summary: pd.DataFrame, settings: dict, title: str = "Goodput", rel_tol: float | None = None) -> str:
    lines = [f"# {title}", ""]
    if len(summary):
        r0 = summary.iloc[0]
        lines += [f"Goodput: the highest Poisson arrival rate (requests/s) whose runs meet p99 TTFT <= "
                  f"{r0['ttft_slo_s']:g} s and p99 TPOT <= {r0['tpot_slo_s']:g} s (means over {int(r0['n_seeds'])} "
                  "seeds of each run's p99; what TTFT is read as is said per section), by bisection up to the "
                  "model's capacity (every slot busy, every worker at the mean load: no router sustains more). "
                  "*at capacity*: the targets held at the capacity itself, so the runs there are a transient."
                  + (f" The bisection stops at a bracket of {100 * rel_tol:g}% of the capacity: smaller differences "
                     "between routers are not resolved." if rel_tol else ""), ""]
    for (setting, regime), grp in summary.groupby(SECTION, sort=False):
        lines += [f"## {setting}, {regime} regime: {grp['trace'].iloc[0]}, G={int(grp['workers'].iloc[0])}, "
                  f"B={int(grp['slots'].iloc[0])}, N={int(grp['requests'].iloc[0]):,}; capacity "
                  f"{fmt(grp['capacity_rps'].iloc[0])} req/s", "", f"TTFT read as the {_ttft_words(grp)}.", ""]
        if "ttft_floor_s" in grp.columns:
            r0 = grp.iloc[0]
            beyond = [f"p99 {m} {r0[f'{k}_floor_s']:.3g} s" for m, k, slo in (("TTFT", "ttft", "ttft_slo_s"),
                                                                               ("TPOT", "tpot", "tpot_slo_s"))
                      if r0[f"{k}_floor_s"] > r0[slo]]
            lines += [f"A request alone on an idle rank: p99 TTFT {r0['ttft_floor_s']:.3g} s, p99 TPOT "
                      f"{r0['tpot_floor_s']:.3g} s (`bfio.goodput.latency_floor`)"
                      + (f"; {' and '.join(beyond)} exceed the targets, so no router has any goodput here."
                         if beyond else "."), ""]
        rec = headroom_recovered(grp)
        if rec:
            lines += [f"Best production router: {_label(rec['best_router'])}, {fmt(rec['best_router']['goodput_rps'])} "
                      f"req/s; best BF-IO row: {_label(rec['bfio'])}, {fmt(rec['bfio']['goodput_rps'])} req/s, "
                      f"recovering {100 * rec['recovered']:.0f}% of the headroom the router leaves."
                      if rec["recovered"] == rec["recovered"] else
                      f"Best production router: {_label(rec['best_router'])}, at the capacity (no headroom).", ""]
        lines += [markdown_table(grp.to_dict("records"), [
            ("router", _label), ("goodput (req/s)", lambda r: fmt(r["goodput_rps"])),
            ("share of capacity", lambda r: f"{100 * r['goodput_share']:.1f}%"),
            ("headroom (req/s)", lambda r: fmt(r["headroom_rps"])),
            ("vs best router", lambda r: f"{r['vs_best_pct']:+.1f}%"),
            ("at capacity", lambda r: "yes" if r["at_capacity"] else "no")]), ""]
    return "\n".join(lines)


__all__ = ["SECTION", "SUBJECT", "goodput_markdown", "headroom_recovered", "summarize_goodput"]
