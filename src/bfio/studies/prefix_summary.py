"""The prefix-cache study's table (issue 32): per setting and router, the means
over seeds with 95% intervals of TTFT, decode TPOT, end-to-end latency,
throughput and cache hit rate; and whether any router dominates BF-IO on
(throughput, p99 TTFT), with BF-IO's lead or trail against each, paired by seed
(the routers of one seed serve the same requests) with 95% intervals."""

from __future__ import annotations

import pandas as pd

from bfio.ground.imbalance_share import IMBALANCE_FLOOR, IMBALANCE_SHARE, with_imbalance_share
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.runs.tables import MIN_INTERVAL_SEEDS, row_label

#: the table's metrics, in column order: (column, header, format)
METRICS = [("throughput_run", "throughput (tok/s)", "{:,.0f}"), ("ttft_s_p50", "TTFT p50 (s)", "{:.2f}"),
           ("ttft_s_p99", "TTFT p99 (s)", "{:.2f}"), ("tpot_decode_s_mean", "TPOT (s)", "{:.3f}"),
           ("e2e_s_p50", "e2e p50 (s)", "{:.2f}"), ("e2e_s_p99", "e2e p99 (s)", "{:.2f}"),
           ("cache_hit_rate", "hit rate", "{:.1%}"), (IMBALANCE_SHARE, "lost to imbalance", "{:.1%}"),
           (IMBALANCE_FLOOR, "of it indivisible", "{:.1%}")]
#: the row whose domination the table reports
SUBJECT = "bfio"


#: BF-IO's lead against a router, paired by seed: (metric, effect, column prefix)
LEADS = [("throughput_run", "gain_pct", "lead_throughput_pct"), ("ttft_s_p99", "saving_pct", "lead_ttft_p99_pct")]

#: GRPO settings' extra columns: how each router spreads a group's later turns
PINNING = [("group_ranks", "ranks per group", "{:.2f}"), ("pinned_share", "groups on one rank", "{:.0%}"),
           ("pinned_share_all", "groups on one rank, all turns", "{:.0%}")]
#: columns a run may carry (``bfio.studies.prefix_study``: the peak KV of any rank over its
#: budget, and the GRPO settings' pinning), shown where a setting has them
OPTIONAL = [("kv_peak_share", "peak KV / budget", "{:.0%}")] + PINNING


def router_label(row: str) -> str:
    """Display label of a router row (``bfio``: BF-IO with its prefix-cache term)."""
    return "BF-IO (prefix-cache term)" if row == SUBJECT else row_label(row)


def _metrics(runs: pd.DataFrame) -> list:
    return METRICS + [p for p in OPTIONAL if p[0] in runs and runs[p[0]].notna().any()]


def summarize_prefix(runs: pd.DataFrame) -> pd.DataFrame:
    """Means and 95% intervals per (setting, router); on each other router's row
    BF-IO's paired lead against it (``lead_throughput_pct_*``, ``lead_ttft_p99_pct_*``:
    + = BF-IO better); on BF-IO's rows ``dominated_by`` (routers better on both
    means) and ``dominated_by_significant`` (better on both beyond the intervals)."""
    runs = with_imbalance_share(runs)
    summary = summarize_runs(runs, ["setting", "workload", "row"], [m for m, _, _ in _metrics(runs)])
    summary["dominated_by"] = ""
    summary["dominated_by_significant"] = ""
    for setting, grp in summary.groupby("setting", sort=False):
        me = grp[grp["row"] == SUBJECT]
        if me.empty:
            continue
        mine = runs[runs["setting"] == setting]
        for idx, r in grp[grp["row"] != SUBJECT].iterrows():
            for metric, effect, col in LEADS:
                lead = paired_effect(mine, ["setting"], r["row"], SUBJECT, metric, effect).iloc[0]
                for part in ("mean", "ci_lo", "ci_hi"):
                    summary.loc[idx, f"{col}_{part}"] = lead[f"{effect}_{part}"]
        grp = summary.loc[grp.index]
        others = grp[grp["row"] != SUBJECT]
        thr, ttft = float(me["throughput_run_mean"].iloc[0]), float(me["ttft_s_p99_mean"].iloc[0])
        better = others[(others["throughput_run_mean"] > thr) & (others["ttft_s_p99_mean"] < ttft)]
        surely = others[(others["lead_throughput_pct_ci_hi"] < 0) & (others["lead_ttft_p99_pct_ci_hi"] < 0)]
        summary.loc[me.index, "dominated_by"] = ", ".join(better["row"]) or "none"
        summary.loc[me.index, "dominated_by_significant"] = ", ".join(surely["row"]) or "none"
    return summary


def _lead(r: pd.Series, col: str) -> str:
    """BF-IO's lead on one metric against row ``r``: mean and 95% interval (paired)."""
    mean, lo, hi = (r[f"{col}_{p}"] for p in ("mean", "ci_lo", "ci_hi"))
    return f"{mean:+.1f}%" + ("" if pd.isna(lo) else f" [{lo:+.1f}, {hi:+.1f}]")


def prefix_markdown(summary: pd.DataFrame, settings: dict, description: str) -> str:
    """One table per setting (rows: routers), then BF-IO's lead (+) or trail (-) on
    throughput and on p99 TTFT against each router, and the routers dominating it."""
    lines = [f"# {description}", ""]
    for setting, grp in summary.groupby("setting", sort=False):
        metrics = METRICS + [p for p in OPTIONAL if f"{p[0]}_mean" in grp and grp[f"{p[0]}_mean"].notna().any()]
        lines += [f"## {setting} ({grp['workload'].iloc[0]}, {int(grp['n_seeds'].max())} seeds; mean ± half "
                  f"the 95% interval, none below {MIN_INTERVAL_SEEDS} seeds)", "",
                  "| router | " + " | ".join(h for _, h, _ in metrics) + " |",
                  "|---|" + "---|" * len(metrics)]
        for _, r in grp.iterrows():
            cells = []
            for m, _, fmt in metrics:
                half = (r[f"{m}_ci_hi"] - r[f"{m}_ci_lo"]) / 2
                few = int(r["n_seeds"]) < MIN_INTERVAL_SEEDS  # no interval from 2 seeds (bfio.runs.tables)
                cells.append(fmt.format(r[f"{m}_mean"]) + ("" if few else f" ± {fmt.format(half)}"))
            lines.append(f"| {router_label(r['row'])} | " + " | ".join(cells) + " |")
        me = grp[grp["row"] == SUBJECT]
        if not me.empty:
            leads = [f"{router_label(r['row'])}: throughput {_lead(r, 'lead_throughput_pct')}, "
                     f"p99 TTFT {_lead(r, 'lead_ttft_p99_pct')}" for _, r in grp.iterrows() if r["row"] != SUBJECT]
            lines += ["", "BF-IO against each router, paired by seed (+: BF-IO better; mean [95% interval]): "
                      + "; ".join(leads) + ".",
                      f"Routers better than BF-IO on both throughput and p99 TTFT: {me['dominated_by'].iloc[0]}; "
                      f"beyond the 95% intervals on both: {me['dominated_by_significant'].iloc[0]}."]
        lines.append("")
    return "\n".join(lines)


def prefix_table(runs: pd.DataFrame, section: dict, settings: dict):
    """The prefix-cache table: the runs summarized (:func:`summarize_prefix`) and its Markdown."""
    summary = summarize_prefix(runs)
    return summary, prefix_markdown(summary, settings, section["description"])


__all__ = ["prefix_table", "METRICS", "LEADS", "PINNING", "OPTIONAL", "SUBJECT", "router_label", "summarize_prefix", "prefix_markdown"]
