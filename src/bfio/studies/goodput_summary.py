"""The goodput study's table (issue 44): per setting, every router's goodput,
its share of the model's capacity and the headroom it leaves, best first.

Kept apart from :mod:`bfio.studies.goodput_study` so the workflow reruns only
the table, never the bisections, when this code changes.
"""

from __future__ import annotations

import json

import pandas as pd

from bfio.metrics import STEADY, WARMUP_SHARE
from bfio.studies.report import fmt, markdown_table
from bfio.studies.online_summary import policy_label
from bfio.tables import mean_ci


#: The columns that name one router's row of a section (its seeds are aggregated).
ROUTER = ["setting", "regime", "row", "dispatch"]


def summarize_goodput(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per router and section, best mean goodput first within each
    section: ``goodput_rps`` the mean over the seeds' own bisections, with its
    95% Student-t interval (``goodput_ci_lo``/``_hi``, :func:`bfio.tables.mean_ci`;
    NaN below two seeds) and ``n_seeds``; ``at_capacity`` when every seed held the
    targets at the capacity; ``headroom_rps`` (capacity minus the mean goodput)
    and ``vs_best_pct`` (the mean against the section's best router's, %).
    Runs written before per-seed bisections (no ``seed`` column: one pooled row
    per router) keep their row, with no interval."""
    out = runs.copy()
    if "regime" not in out.columns:  # runs written before the regimes: the paper's step
        out["regime"] = "paper"
    if "predictor" not in out.columns:
        out["predictor"] = ""
    out["predictor"] = out["predictor"].fillna("")
    if "seed" in out.columns:
        rows = []
        for _, grp in out.groupby(ROUTER, sort=False):
            m, lo, hi, n = mean_ci(grp["goodput_rps"])
            first = grp.iloc[0].to_dict()
            rows.append({**first, "goodput_rps": m, "goodput_ci_lo": lo, "goodput_ci_hi": hi, "n_seeds": n,
                         "goodput_share": m / first["capacity_rps"], "at_capacity": bool(grp["at_capacity"].all()),
                         "seeds": json.dumps([int(x) for x in grp["seed"]]),
                         "seed_goodput_rps": json.dumps([float(x) for x in grp["goodput_rps"]]),
                         "sim_wall_s": float(grp["sim_wall_s"].sum())})
        out = pd.DataFrame(rows).drop(columns=["seed", "probes"])
    else:
        out["goodput_ci_lo"] = out["goodput_ci_hi"] = float("nan")
    # capacity minus goodput; a goodput at the capacity leaves none (not a float's residue, 2e-13)
    room = out["capacity_rps"] - out["goodput_rps"]
    out["headroom_rps"] = room.where(room > 1e-9 * out["capacity_rps"], 0.0)
    best = out.groupby(SECTION)["goodput_rps"].transform("max")
    out["vs_best_pct"] = [100.0 * (g / b - 1.0) if b > 0 else float("nan") for g, b in zip(out["goodput_rps"], best)]
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
    :data:`SUBJECT`; best by mean goodput) and the best :data:`SUBJECT` row, and
    the share of the headroom the production router leaves (capacity minus its
    goodput) that BF-IO recovers, ``(bfio - best) / (capacity - best)`` on the
    means (NaN when the router leaves none); with per-seed goodputs
    (``seed_goodput_rps``) also the share's mean over the seeds, paired, and
    its 95% interval (``recovered_ci``)."""
    prod = grp[(grp["dispatch"] == "instant") & (grp["policy"] != SUBJECT)]
    ours = grp[grp["policy"] == SUBJECT]
    if prod.empty or ours.empty:
        return {}
    best = prod.loc[prod["goodput_rps"].idxmax()]
    bfio = ours.loc[ours["goodput_rps"].idxmax()]
    room = float(best["capacity_rps"] - best["goodput_rps"])
    rec = {"best_router": best, "bfio": bfio,
           "recovered": float(bfio["goodput_rps"] - best["goodput_rps"]) / room if room > 0 else float("nan"),
           "recovered_ci": (float("nan"), float("nan"))}
    if "seed_goodput_rps" in grp.columns and isinstance(best.get("seed_goodput_rps"), str):
        cap = float(best["capacity_rps"])
        shares = [(b - r) / (cap - r) for b, r in zip(json.loads(bfio["seed_goodput_rps"]),
                                                      json.loads(best["seed_goodput_rps"])) if cap - r > 0]
        _, lo, hi, _ = mean_ci(shares)
        rec["recovered_ci"] = (lo, hi)
    return rec


def _label(r) -> str:
    return policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"), r.get("horizon"),
                        predictor=r.get("predictor") or None)


def _goodput_cell(r) -> str:
    """``mean [lo, hi]`` (95%), or the mean alone below two seeds."""
    lo, hi = r.get("goodput_ci_lo", float("nan")), r.get("goodput_ci_hi", float("nan"))
    if lo == lo and hi == hi:
        return f"{fmt(r['goodput_rps'])} [{fmt(max(lo, 0.0))}, {fmt(hi)}]"
    return fmt(r["goodput_rps"])


def _ttft_words(grp: pd.DataFrame) -> str:
    """What a section's runs read as TTFT (their ``ttft_metric``)."""
    key = str(grp["ttft_metric"].iloc[0])
    words = ("p99 queue wait (this step loop has no prefill: the first token comes with the first decode step)"
             if key.startswith("queue_wait_s_p99") else "p99 TTFT of the prefill model")
    if key.endswith(STEADY):
        words += (f", over the requests arriving after the first {100 * WARMUP_SHARE:g}% of a run (discarded as "
                  "warm-up: a run starts empty)")
    return words


def _recovered_words(rec: dict) -> str:
    lo, hi = rec["recovered_ci"]
    ci = f" (95% interval over the seeds, paired: [{100 * lo:.0f}%, {100 * hi:.0f}%])" if lo == lo else ""
    return f"recovering {100 * rec['recovered']:.0f}% of the headroom the router leaves{ci}."


def goodput_markdown(summary: pd.DataFrame, settings: dict, title: str = "Goodput", rel_tol: float | None = None) -> str:
    lines = [f"# {title}", ""]
    if len(summary):
        per_seed = "goodput_ci_lo" in summary.columns and summary["goodput_ci_lo"].notna().any()
        how = ("each seed its own bisection; the table gives the mean over the seeds with its 95% Student-t "
               "interval" if per_seed else "the means over the seeds of each run's p99")
        lines += ["Goodput: the highest Poisson arrival rate (requests/s) whose runs meet the section's p99 TTFT "
                  f"and p99 TPOT targets ({how}; what TTFT is read as is said per section), by bisection up to the "
                  "model's capacity (every slot busy, every worker at the mean load: no router sustains more). "
                  "*at capacity*: the targets held at the capacity itself (every seed), so the runs there are a "
                  "transient."
                  + (f" The bisection stops at a bracket of {100 * rel_tol:g}% of the capacity: smaller differences "
                     "between routers are not resolved." if rel_tol else ""), ""]
    for (setting, regime), grp in summary.groupby(SECTION, sort=False):
        r0 = grp.iloc[0]
        lines += [f"## {setting}, {regime} regime: {r0['trace']}, G={int(r0['workers'])}, "
                  f"B={int(r0['slots'])}, N={int(r0['requests']):,}, {int(grp['n_seeds'].max())} seeds; capacity "
                  f"{fmt(r0['capacity_rps'])} req/s", "",
                  f"Targets: p99 TTFT <= {r0['ttft_slo_s']:g} s, p99 TPOT <= {r0['tpot_slo_s']:g} s. "
                  f"TTFT read as the {_ttft_words(grp)}.", ""]
        if "ttft_floor_s" in grp.columns:
            beyond = [f"p99 {m} {r0[f'{k}_floor_s']:.3g} s" for m, k, slo in (("TTFT", "ttft", "ttft_slo_s"),
                                                                               ("TPOT", "tpot", "tpot_slo_s"))
                      if r0[f"{k}_floor_s"] > r0[slo]]
            lines += [f"A request alone on an idle rank: p99 TTFT {r0['ttft_floor_s']:.3g} s, p99 TPOT "
                      f"{r0['tpot_floor_s']:.3g} s (`bfio.goodput.latency_floor`)"
                      + (f"; {' and '.join(beyond)} exceed the targets, so no router has any goodput here."
                         if beyond else "."), ""]
        rec = headroom_recovered(grp)
        if rec and not (grp["goodput_rps"] > 0).any():
            lines += ["No router has any goodput here.", ""]
        elif rec:
            lines += [f"Best production router: {_label(rec['best_router'])}, {fmt(rec['best_router']['goodput_rps'])} "
                      f"req/s; best BF-IO row: {_label(rec['bfio'])}, {fmt(rec['bfio']['goodput_rps'])} req/s, "
                      + _recovered_words(rec)
                      if rec["recovered"] == rec["recovered"] else
                      f"Best production router: {_label(rec['best_router'])}, at the capacity (no headroom).", ""]
        lines += [markdown_table(grp.to_dict("records"), [
            ("router", _label), ("goodput (req/s) [95%]", _goodput_cell),
            ("share of capacity", lambda r: f"{100 * r['goodput_share']:.1f}%"),
            ("headroom (req/s)", lambda r: fmt(r["headroom_rps"])),
            ("vs best router", lambda r: f"{r['vs_best_pct']:+.1f}%" if r["vs_best_pct"] == r["vs_best_pct"]
             else "n/a (no router has goodput)"),
            ("at capacity", lambda r: "yes" if r["at_capacity"] else "no")]), ""]
    return "\n".join(lines)


def goodput_table(runs: pd.DataFrame, section: dict, settings: dict):
    """The goodput table: the runs summarized (:func:`summarize_goodput`) and its Markdown."""
    summary = summarize_goodput(runs)
    return summary, goodput_markdown(summary, settings, section["description"], rel_tol=section.get("rel_tol"))


__all__ = ["goodput_table", "ROUTER", "SECTION", "SUBJECT", "goodput_markdown", "headroom_recovered", "summarize_goodput"]
