"""The generality study's table (:mod:`bfio.studies.generality` runs it): paired
effects over the baseline row per trace, arrival case and G, with 95% intervals,
and its Markdown rendering. Kept apart from the runs so editing the table never
reruns a simulation (the workflow fingerprints the two modules separately)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.studies.aggregate import paired_effect
from bfio.runs.tables import MIN_INTERVAL_SEEDS, ci_text, row_label

#: Table effects: (column prefix, unified metric, effect kind).
EFFECTS = (("imb_ratio", "imbalance", "ratio"), ("thr_gain_pct", "throughput", "gain_pct"),
           ("energy_saving_pct", "energy_per_token_j", "saving_pct"))


def _case_key(case: str) -> tuple:
    if case == "backlog":
        return (0, 0.0)
    if case.startswith("replay_x"):
        return (1, -float(case[len("replay_x"):]))
    return (2, float(case[len("replay_load"):]))


def generality_table(runs: pd.DataFrame, stats: dict, baseline: str, targets) -> pd.DataFrame:
    """One row per (trace, case, G): trace descriptors, FCFS load descriptors and
    the paired effects of every target row over ``baseline`` with 95% intervals.

    ``stats``: trace -> its ``results/traces/<trace>.stats.json`` dict.
    Columns per target ``t``: ``imb_ratio_<t>`` (baseline / target imbalance,
    > 1: BF-IO better balanced; geometric mean over seeds, interval on the log
    scale: :func:`~bfio.studies.aggregate.paired_effect`), ``thr_gain_pct_<t>``, ``energy_saving_pct_<t>``
    (J/token; arithmetic mean, t interval), each with ``_lo``/``_hi``;
    ``n_seeds`` counts the paired seeds.
    """
    by = ["trace", "case", "workers"]
    missing = [r for r in [baseline, *targets] if r not in set(runs["row"])]
    if missing:
        raise ConfigError(f"generality: rows {missing} are not in the study runs")
    base = runs[runs["row"] == baseline]
    desc = base.groupby(by, sort=False).agg(
        requests=("requests_run", "first"), slots=("slots", "first"),
        offered_load=("offered_load", "first"), time_scale=("time_scale", "first"),
        fcfs_slot_util=("slot_util", "mean"), fcfs_throughput_tps=("throughput_tps", "mean")).reset_index()
    desc["rows_per_slot"] = desc["requests"] / (desc["workers"] * desc["slots"])
    desc.loc[~desc["case"].str.startswith("replay"), "time_scale"] = np.nan
    desc["mean_prompt"] = desc["trace"].map(lambda t: stats[t]["prefill_tokens"]["mean"])
    desc["mean_decode"] = desc["trace"].map(lambda t: stats[t]["decode_tokens"]["mean"])
    desc["decode_p99"] = desc["trace"].map(lambda t: stats[t]["decode_tokens"]["p99"])
    table = desc
    n_seeds = None
    for t in targets:
        for prefix, metric, effect in EFFECTS:
            eff = paired_effect(runs, by, baseline, t, metric, effect)
            eff = eff.rename(columns={f"{effect}_mean": f"{prefix}_{t}", f"{effect}_ci_lo": f"{prefix}_{t}_lo",
                                      f"{effect}_ci_hi": f"{prefix}_{t}_hi"})
            n = eff[by + ["n_seeds"]]
            n_seeds = n if n_seeds is None else n_seeds.merge(n, on=by, suffixes=("", "_x")).assign(
                n_seeds=lambda d: np.minimum(d["n_seeds"], d["n_seeds_x"])).drop(columns="n_seeds_x")
            table = table.merge(eff[by + [f"{prefix}_{t}", f"{prefix}_{t}_lo", f"{prefix}_{t}_hi"]], on=by,
                                how="left")
    table = table.merge(n_seeds, on=by, how="left")
    trace_order = {t: i for i, t in enumerate(dict.fromkeys(runs["trace"]))}
    table = table.sort_values(by, key=lambda c: c.map(trace_order) if c.name == "trace" else
                              (c.map(_case_key) if c.name == "case" else c))
    return table.reset_index(drop=True)


def _num(x, digits: int = 3) -> str:
    if x is None or pd.isna(x) or not math.isfinite(float(x)):
        return "n/a"
    x = float(x) + 0.0
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _cell(rec, col: str, digits: int = 3, signed: bool = False) -> str:
    """``'mean [lo, hi]'``; ``'mean (n = 2, no interval)'`` with fewer than
    :data:`~bfio.runs.tables.MIN_INTERVAL_SEEDS` paired seeds (a 2-seed t interval is
    12.7 standard errors wide: it says nothing)."""
    m, lo, hi = rec.get(col), rec.get(f"{col}_lo"), rec.get(f"{col}_hi")
    if m is None or pd.isna(m):
        return "n/a"
    f = (lambda v: f"{float(v):+.1f}") if signed else (lambda v: _num(v, digits))
    n = rec.get("n_seeds")
    if (lo is None or pd.isna(lo) or hi is None or pd.isna(hi)) and (n is None or pd.isna(n)
                                                                    or int(n) >= MIN_INTERVAL_SEEDS):
        return f(m)
    return ci_text(f(m), f(lo), f(hi), n)


def case_label(case: str) -> str:
    if case == "backlog":
        return "backlog"
    if case.startswith("replay_x"):
        s = case[len("replay_x"):]
        return "replay, native times" if float(s) == 1 else f"replay, times x{s}"
    return f"replay, load {case[len('replay_load'):]}x sat."


def generality_markdown(table: pd.DataFrame, targets, title: str, seeds) -> str:
    """Markdown: one row per (trace, case, G) with ``mean [95% CI]`` cells."""
    head, *others = list(targets)
    cols = ["trace", "prompt / decode (mean tok)", "arrivals", "G", "N (per slot)", "load"]
    cols += [f"imbalance FCFS / {row_label(t)}" for t in targets]
    cols += [f"throughput gain {row_label(head)} (%)", f"energy/token saving {row_label(head)} (%)"]
    lines = [f"# {title}", "",
             f"Targets vs the baseline, paired by seed, mean [95% t interval] over seeds {list(seeds)}"
             + (f" (no interval with fewer than {MIN_INTERVAL_SEEDS} seeds)"
                if (pd.to_numeric(table.get("n_seeds", pd.Series(dtype=float)), errors="coerce")
                    < MIN_INTERVAL_SEEDS).any() else "") + ". "
             "Imbalance ratios: geometric mean over seeds, interval of the log ratio (always positive). "
             "Imbalance ratio > 1: BF-IO better balanced; gain/saving > 0: BF-IO better. "
             "`load`: offered request rate / FCFS saturation rate at that G (backlog: saturated). "
             "Backlog metrics over the paper's window (up to the last admission); replay metrics over the "
             "whole run; energy is per generated token. See docs/generality.md.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in table.to_dict("records"):
        load = "sat." if rec["case"] == "backlog" else _num(rec["offered_load"], 2)
        # (baseline named in the header as FCFS: the study's default baseline)
        cells = [rec["trace"], f"{rec['mean_prompt']:,.0f} / {rec['mean_decode']:,.0f}", case_label(rec["case"]),
                 str(int(rec["workers"])), f"{int(rec['requests']):,} ({rec['rows_per_slot']:.2g})", load,
                 _cell(rec, f"imb_ratio_{head}")]
        cells += [_cell(rec, f"imb_ratio_{t}") for t in others]
        cells += [_cell(rec, f"thr_gain_pct_{head}", signed=True), _cell(rec, f"energy_saving_pct_{head}",
                                                                        signed=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def generality_tabulate(runs, section, settings, inputs=()):
    """The generality table and its Markdown: every run against the section's baseline, with the traces' statistics (``inputs``: their ``results/traces/<trace>.stats.json``, in ``generality.traces`` order)."""
    import json

    stats = {}
    for t, p in zip(section["traces"], inputs):
        with open(p) as f:
            stats[t] = json.load(f)
    table = generality_table(runs, stats, section["baseline"], list(section["targets"]))
    seeds = [int(s) for s in dict.fromkeys(runs["seed"])]  # the config's seeds, in its order
    return table, generality_markdown(table, list(section["targets"]), section["description"], seeds)


__all__ = ["generality_tabulate", "EFFECTS", "generality_table", "generality_markdown", "case_label"]
