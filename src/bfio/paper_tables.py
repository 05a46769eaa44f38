"""The paper's Table 1 / Table 2 against this reproduction, cell by cell.

* :func:`paper_comparison` - the long table (CSV ``results/tables/table{1,2}.csv``):
  one row per (policy row, metric): the print, ours at the reference seed (full
  precision and rounded like the paper), the relative difference, the mean and
  95% CI over seeds, what the row is (``kind``: baseline, BF-IO ``default``
  objective or ``paper-literal`` Eq. (IO)), its effective lookahead ``H_eff``,
  the rows that solve the same program, and the cell's verdict against the
  print with what the row must reach (the rule: :mod:`bfio.runs.verdicts`).
* :func:`paper_markdown` - its Markdown: a header saying what each row is, the
  verdict rule, what is not modelled (the authors' released simulator's
  objective), then one table per metric with separate columns for the seed-42
  value, the mean, the interval and the number of seeds.
* :func:`paper_pivot` - the metrics laid out as the paper prints them.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bfio.runs.paper import TABLE_SETTINGS, round_like
from bfio.lookahead.run_keys import row_key
from bfio.lookahead.discount import OBJECTIVES
from bfio.runs.tables import (METRIC_INFO, MIN_INTERVAL_SEEDS, PAPER_METRICS, PRE_STEP_UNIT_OF, _fmt, _fmt_pct,
                         _row_order, few_seeds_note, interval_text, row_label, stored_keys, summarize)
from bfio.runs.verdicts import (BASELINE, DEFAULT, EXPECTATION_RULE, PAPER_LITERAL, RULE, expected, meets, row_kind,
                           verdict)

#: What the authors' released simulator gives on Table 1's workload for the printed cells it does not
#: reproduce itself (../shared/spec/semantics.md, "BF-IO"; its other cells match the print to every
#: digit): table -> row -> metric -> value in the printed unit. Outputs of that simulator, quoted in
#: the tables' header for reference: this project does not model its objective (offset t weighted
#: 0.86^t, new requests counted at their prompt size over the window), so no row runs it. (Not in
#: bfio.runs.paper: every simulation's code fingerprint includes that module.)
AUTHORS_SIMULATOR = {
    "table1": {"bfio_h0": {"throughput": "8.53", "energy_j": "23.5"}, "bfio_h40": {"energy_j": "20.74"}},
    "table2": {},
}

#: Order of the row kinds in the Markdown (the CSV keeps :func:`bfio.runs.tables._row_order`).
KIND_ORDER = (BASELINE, DEFAULT, PAPER_LITERAL)
TITLES = {"table1": "Table 1 (LongBench)", "table2": "Table 2 (BurstGPT)"}

COLUMNS = ["table", "row", "label", "paper_label", "kind", "objective_label", "horizon", "effective_horizon",
           "same_program_as", "metric", "metric_label", "unit", "convention", "paper_printed", "paper", "ours",
           "ours_rounded", "rel_diff", "mean", "ci_lo", "ci_hi", "n_seeds", "verdict", "expected", "ok", "ran"]


def _printed_keys(table: str) -> dict:
    """Row -> ``(H, 'default')`` of the BF-IO rows the paper prints in ``table``
    (:data:`bfio.runs.paper.TABLE_SETTINGS`' ``horizons``), ``None`` for its baselines."""
    setting = TABLE_SETTINGS[table]
    bfio = {row_key("bfio", h): (int(h), "default") for h in setting["horizons"]}
    return {row: bfio.get(row) for row in setting["values"]}


def _options(runs: pd.DataFrame) -> dict:
    """Row -> its BF-IO options (the ``policy_options`` JSON a run stores), ``{}`` when not stored."""
    if runs.empty or "policy_options" not in runs:
        return {}
    out = {}
    for row, text in zip(runs.drop_duplicates("row")["row"], runs.drop_duplicates("row")["policy_options"]):
        try:
            out[str(row)] = json.loads(text) if isinstance(text, str) else {}
        except ValueError:
            out[str(row)] = {}
    return out


def same_programs(keys: dict, effective: dict, options: dict | None = None) -> dict:
    """Row -> the other BF-IO rows that solve the same routing program: the same
    objective and options (``options``: row -> ``policy_options``, the horizon left
    out) and the same effective lookahead ``H_eff`` (``effective``: row -> H_eff;
    a row whose ``H`` exceeds it optimizes offsets ``0..H_eff`` only, so it routes
    as the row with ``H = H_eff`` does). Rows without a known ``H_eff`` share with
    none. ``keys``: row -> ``(H, objective)`` or ``None`` (:func:`bfio.runs.tables.stored_keys`)."""
    options = options or {}
    groups: dict = {}
    for row, key in keys.items():
        h_eff = effective.get(row)
        if key is None or h_eff is None or pd.isna(h_eff):
            continue
        opts = {k: v for k, v in options.get(row, {}).items() if k != "horizon"}
        groups.setdefault((key[1], int(h_eff), json.dumps(opts, sort_keys=True, default=str)), []).append(row)
    return {r: tuple(x for x in rows if x != r) for rows in groups.values() for r in rows}


def objective_label(kind: str, options: dict | None = None) -> str:
    """``'baseline'``, ``'default (delta = 0.6)'`` or ``'paper-literal (Eq. (IO) as printed)'``;
    the discount is the run's (``options``) or the named objective's."""
    if kind == BASELINE:
        return "baseline"
    if kind == PAPER_LITERAL:
        return "paper-literal (Eq. (IO) as printed)"
    delta = (options or {}).get("discount", OBJECTIVES[kind]["discount"])
    return f"{kind} (delta = {float(delta):g})"


def paper_comparison(runs: pd.DataFrame, table: str, ref_seed: int) -> pd.DataFrame:
    """Long table, one row per (policy row, metric) of paper ``table``
    (``'table1'`` or ``'table2'``), plus the pre-step metrics (no paper value).

    ``ours`` is the reference-seed value in the paper's unit (full precision),
    ``ours_rounded`` the same rounded to the printed digits, ``rel_diff`` is
    ``ours / paper - 1``; ``mean``, ``ci_lo``, ``ci_hi`` are over seeds in the
    paper's unit; ``verdict`` is ``reproduced``, ``better`` or ``worse`` against the
    print (:func:`bfio.runs.verdicts.verdict`), ``expected`` what the row's ``kind``
    must reach and ``ok`` whether the verdict meets it (``None``: nothing
    required). ``effective_horizon`` is the lookahead BF-IO optimized and
    ``same_program_as`` the other rows that solve the same program (row keys, ``'; '``-separated).
    A BF-IO row with objective ``paper-literal`` is compared with the printed row of its ``H``.
    Rows the paper prints but the runs lack are kept with NaN (``ran=False``).
    """
    setting = TABLE_SETTINGS[table]
    printed, units = setting["values"], setting["units"]
    summary = summarize(runs, ref_seed) if len(runs) else pd.DataFrame(columns=["row"])
    by_row = {r["row"]: r for r in summary.to_dict("records")}
    keys = {**_printed_keys(table), **stored_keys(runs)}
    options = _options(runs)
    effective = {r: rec.get("effective_horizon") for r, rec in by_row.items()}
    shared = same_programs(keys, {r: (None if pd.isna(v) else v) for r, v in effective.items()}, options)
    out = []
    for row in _row_order(list(printed) + list(by_row), keys):
        rec, key = by_row.get(row), keys.get(row)
        kind = row_kind(key[1] if key else None)
        printed_row = row_key("bfio", key[0]) if key else row  # bfio_h40_literal is compared with bfio_h40
        h_eff = effective.get(row)
        ident = {"table": table, "row": row, "label": row_label(row), "paper_label": row_label(printed_row),
                 "kind": kind, "objective_label": objective_label(kind, options.get(row)),
                 "horizon": key[0] if key else np.nan,
                 "effective_horizon": np.nan if h_eff is None or pd.isna(h_eff) else int(h_eff),
                 "same_program_as": "; ".join(shared.get(row, ())), "ran": rec is not None}
        for metric in (*PAPER_METRICS, *PRE_STEP_UNIT_OF):
            scale, unit = units[PRE_STEP_UNIT_OF.get(metric, metric)]
            paper = printed.get(printed_row, {}).get(metric) if metric in PAPER_METRICS else None
            label, _, convention = METRIC_INFO[metric]
            cell = {**ident, "metric": metric, "metric_label": label, "unit": unit, "convention": convention,
                    "paper": float(paper) if paper is not None else float("nan"), "paper_printed": paper or ""}
            if rec is not None:
                v = rec[metric]
                cell.update({"ours": v / scale,
                             "ours_rounded": round_like(v, paper, scale) if paper else f"{v / scale:.3g}",
                             "mean": rec[f"{metric}_mean"] / scale, "ci_lo": rec[f"{metric}_ci_lo"] / scale,
                             "ci_hi": rec[f"{metric}_ci_hi"] / scale, "n_seeds": rec["n_seeds"]})
                if paper is not None:
                    outcome = verdict(v, paper, scale, metric)
                    cell.update({"rel_diff": v / (float(paper) * scale) - 1.0, "verdict": outcome,
                                 "expected": expected(kind), "ok": meets(outcome, kind)})
            out.append(cell)
    frame = pd.DataFrame(out)
    for c in COLUMNS:
        if c not in frame:
            frame[c] = np.nan
    frame = frame[COLUMNS]
    frame["horizon"] = frame["horizon"].astype("Int64")
    frame["effective_horizon"] = pd.to_numeric(frame["effective_horizon"]).astype("Int64")
    return frame


def paper_pivot(comp: pd.DataFrame, values: str = "ours_rounded") -> pd.DataFrame:
    """The paper's metrics of a :func:`paper_comparison` table (or its CSV) as
    the paper lays them out: one row per policy in the order of the table
    (:func:`paper_comparison` writes the paper's: FCFS, JSQ, then BF-IO by H
    ascending; the table stores no horizon, and the row key is not parsed),
    one column per metric in table order."""
    cells = comp[comp["metric"].isin(PAPER_METRICS)]
    if cells.empty:
        raise ValueError("paper_pivot: no paper metric in the table (expected a paper_comparison table)")
    rows = list(dict.fromkeys(cells["row"]))
    labels = [cells.loc[cells["row"] == r, "label"].iloc[0] for r in rows]
    metrics = [m for m in PAPER_METRICS if m in set(cells["metric"])]
    columns = [cells.loc[cells["metric"] == m, "metric_label"].iloc[0] for m in metrics]
    out = cells.pivot(index="label", columns="metric_label", values=values)
    return out.reindex(index=labels, columns=columns)


def is_paper_setting(runs: pd.DataFrame, table: str) -> bool:
    """True when every run has the trace, N, G, B of the paper's ``table``."""
    s = TABLE_SETTINGS[table]
    if runs.empty:
        return False
    return bool((runs["trace"] == s["trace"]).all() and (runs["requests"] == s["requests"]).all()
                and (runs["workers"] == s["workers"]).all() and (runs["slots"] == s["slots"]).all())


def _by_kind(comp: pd.DataFrame) -> pd.DataFrame:
    """``comp`` with its rows grouped by kind (baselines, default, paper-literal), in table order within."""
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    pos = {r: i for i, r in enumerate(dict.fromkeys(comp["row"]))}
    return comp.assign(_k=comp["kind"].map(order), _p=comp["row"].map(pos)).sort_values(
        ["_k", "_p"], kind="stable").drop(columns=["_k", "_p"])


def _text(x) -> str:
    return "-" if x is None or (not isinstance(x, str) and pd.isna(x)) or x == "" else str(x)


def _same_program_text(comp: pd.DataFrame, same: str) -> str:
    """``'H=40, 60, 80, 100'``: the horizons of the rows in ``same`` (``'; '``-separated keys)."""
    if not isinstance(same, str) or not same:
        return "-"
    horizon = comp.drop_duplicates("row").set_index("row")["horizon"]
    hs = [horizon.get(r) for r in same.split("; ")]
    if any(h is None or pd.isna(h) for h in hs):
        return ", ".join(row_label(r) for r in same.split("; "))
    return "H=" + ", ".join(str(int(h)) for h in sorted(hs))


def _rows_header(comp: pd.DataFrame, table: str) -> list[str]:
    """What each row is: the print, the baselines, the default objective (with its
    H_eff), paper-literal (which H ran), and the authors' released simulator's
    objective (not modelled, with the outputs the spec quotes)."""
    first = comp.drop_duplicates("row")
    ran = first[first["ran"].astype(bool)]

    def horizons(kind):
        hs = sorted({int(h) for h in ran.loc[ran["kind"] == kind, "horizon"].dropna()})
        return "H = " + ", ".join(map(str, hs)) if hs else ""

    default_label = next(iter(ran.loc[ran["kind"] == DEFAULT, "objective_label"]), objective_label(DEFAULT))
    reach = sorted({(int(h), int(e)) for h, e in ran.loc[ran["kind"] == DEFAULT, ["horizon", "effective_horizon"]]
                    .dropna().itertuples(index=False)})
    reach_text = "; ".join(f"{e} at H = {h}" for h, e in reach)
    literal = horizons(PAPER_LITERAL)
    lines = ["**What the rows are.**", "",
             "- *print*: the value printed in the paper (column *print*; a paper-literal row is compared with the "
             "printed row of its H).",
             "- *baseline*: FCFS and JSQ as the paper runs them.",
             f"- *{default_label}*: BF-IO with the project's default objective, Eq. (IO) discounted by delta^h with "
             "new requests ending at their predicted decode length (docs/bfio.md); "
             + (horizons(DEFAULT) or "not run") + ". Column *H_eff*: the last offset the fast solver optimizes "
             "(offsets 0..H_eff)" + (f": {reach_text}" if reach else "") + ".",
             "- *paper-literal (Eq. (IO) as printed)*: delta = 1, new requests persist over the window; "
             + (literal if literal else "not run in this configuration (config `literal_horizons`)") + ".",
             "- *the authors' released simulator's objective* (offset t weighted 0.86^t, new requests counted at "
             "their prompt size over the window; ../shared/spec/semantics.md): **not modelled by this project**, "
             "so no row runs it."]
    quoted = AUTHORS_SIMULATOR.get(table, {})
    if quoted:
        units = TABLE_SETTINGS[table]["units"]
        cells = [f"{row_label(r)} {METRIC_INFO[m][0].lower()} {v} (printed {TABLE_SETTINGS[table]['values'][r][m]}; "
                 f"{units[m][1]})" for r, ms in quoted.items() for m, v in ms.items()]
        lines[-1] += (" The spec quotes that simulator's output for the printed cells it does not reproduce "
                      "itself (its other cells match the print): " + "; ".join(cells) + ".")
    return lines


def paper_markdown(comp: pd.DataFrame, table: str, paper_setting: bool, ref_seed: int,
                   setting_note: str = "", window_note: str = "") -> str:
    """Markdown rendering of :func:`paper_comparison`: the header (setting, what
    each row is, the verdict rule), one table per paper metric, then the pre-step
    convention."""
    s = TABLE_SETTINGS[table]
    lines = [f"# {TITLES[table]}: paper vs this reproduction", "",
             f"Paper setting: {s['trace']}, G={s['workers']}, B={s['slots']}, N={s['requests']:,}, seed {s['seed']}."]
    if setting_note:
        lines.append(f"This run: {setting_note}.")
    if not paper_setting:
        lines += ["", "**Warning: these runs do not use the paper's setting (the trace, N, G or B differ: "
                      "see 'This run' above); differences from the paper are expected and the verdicts are not "
                      "meaningful.**"]
    lines += ["", *_rows_header(comp, table), "",
              f"**Verdict** (one per cell, against the print). {RULE} {EXPECTATION_RULE}", ""]
    if window_note:
        lines += [window_note + " Column *same program as* names the rows that route identically for that "
                                "reason (their cells are equal).", ""]
    ran = comp["ran"].astype(bool)
    lines += [f"*ours (seed {ref_seed})*: the reference seed (the paper's is 42), rounded like the paper; "
              "*rel. diff* = ours (full precision) / print - 1; *mean* and *95% CI* over the *seeds* (Student t"
              f"{few_seeds_note(comp.loc[ran, 'n_seeds'])}).", ""]
    comp = _by_kind(comp)
    for metric in PAPER_METRICS:
        sub = comp[comp["metric"] == metric]
        label, unit = sub["metric_label"].iloc[0], sub["unit"].iloc[0]
        arrow = "higher is better" if metric == "throughput" else "lower is better"
        lines += [f"## {label} ({unit}; paper convention, {arrow})", ""]
        rows = []
        for r in sub.itertuples():
            cell = r.ran and bool(r.paper_printed)
            rows.append({"row": r.paper_label, "objective": r.objective_label, "H_eff": _text(r.effective_horizon),
                         "same program as": _same_program_text(comp, r.same_program_as), "print": r.paper_printed or "n/a",
                         f"ours (seed {ref_seed})": r.ours_rounded if r.ran else "not run",
                         "rel. diff": _fmt_pct(r.rel_diff) if cell else "n/a",
                         "verdict": r.verdict if cell else "n/a", "expected": r.expected if cell else "n/a",
                         "met": ("-" if r.ok is None or pd.isna(r.ok) else "yes" if r.ok else "no") if cell else "n/a",
                         "mean": _fmt(r.mean) if r.ran else "n/a",
                         "95% CI": interval_text(_fmt(r.ci_lo), _fmt(r.ci_hi), r.n_seeds) if r.ran else "n/a",
                         "seeds": int(r.n_seeds) if r.ran else "n/a"})
        lines += [pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), ""]
    lines += ["## Pre-step convention (theory: loads that gate each step; not printed in the paper)", ""]
    for metric, paper_metric in PRE_STEP_UNIT_OF.items():
        sub = comp[comp["metric"] == metric]
        lines += [f"### {sub['metric_label'].iloc[0]} ({sub['unit'].iloc[0]})", ""]
        paper_conv = comp[comp["metric"] == paper_metric].set_index("row")["ours"]
        rows = []
        for r in sub.itertuples():
            rows.append({"row": r.paper_label, "objective": r.objective_label,
                         f"pre-step (seed {ref_seed})": _fmt(r.ours) if r.ran else "not run",
                         f"paper convention (seed {ref_seed})": _fmt(paper_conv.get(r.row)) if r.ran else "not run",
                         "pre-step mean": _fmt(r.mean) if r.ran else "n/a",
                         "95% CI": interval_text(_fmt(r.ci_lo), _fmt(r.ci_hi), r.n_seeds) if r.ran else "n/a",
                         "seeds": int(r.n_seeds) if r.ran else "n/a"})
        lines += [pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), ""]
    return "\n".join(lines)


__all__ = ["AUTHORS_SIMULATOR", "paper_comparison", "paper_markdown", "paper_pivot", "is_paper_setting", "same_programs",
           "objective_label", "MIN_INTERVAL_SEEDS"]
