"""Aggregating run summaries into the pipeline's tables.

* :func:`summarize` - per (row, workers): the reference-seed value and the mean
  with a 95% Student-t confidence interval over seeds, for every metric.
* :func:`paper_comparison` - Table 1 / Table 2 cells: the paper's printed value,
  ours (reference seed, rounded like the paper), the relative difference, the
  mean and CI over seeds in the paper's unit, and the check the project applies
  (exact to printed digits for FCFS and JSQ, equal-or-better for BF-IO).
* :func:`energy_reduction` - per G: energy of a baseline vs a target row and
  the reduction in percent (paired over seeds).
* writers for CSV and Markdown (``write_table``).

Conventions: "paper" metrics are measured on post-completion loads over the
admission window (``../shared/spec/semantics.md``); "pre-step" metrics use the
loads that gate each step (the theory's definition). Both are labelled.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.paper import TABLE_SETTINGS, at_least_as_good, compare_to_printed, matches_printed, round_like
from bfio.run_keys import row_key, row_label as key_label
from bfio.errors import BfioError
from bfio.student_t import t_quantile
from bfio.policies import KEYED_ROWS, policy_label
from bfio.solvers.objective import NEGLIGIBLE_WEIGHT

#: Metric -> (label, SI unit, convention).
METRIC_INFO = {
    "avg_imbalance": ("Avg imbalance", "tokens", "paper (post-completion loads)"),
    "throughput": ("Throughput", "tokens/s", "paper"),
    "tpot": ("TPOT", "s/token", "paper"),
    "energy_j": ("Energy", "J", "paper (post-completion loads)"),
    "avg_imbalance_pre": ("Avg imbalance, pre-step", "tokens", "pre-step (gating loads, theory)"),
    "energy_j_pre": ("Energy, pre-step", "J", "pre-step (gating loads, theory)"),
}
#: Pre-step metric -> the paper metric whose printed unit it uses.
PRE_STEP_UNIT_OF = {"avg_imbalance_pre": "avg_imbalance", "energy_j_pre": "energy_j"}
PAPER_METRICS = ("avg_imbalance", "throughput", "tpot", "energy_j")


def check_runs_complete(runs: pd.DataFrame, path, *, rows, workers, seeds, table: str = "") -> None:
    """Every (row, G, seed) run a table needs is in ``runs`` (the collected runs
    table at ``path``), or :class:`~bfio.errors.BfioError` naming the file, how
    many are missing with an example, and how to rebuild it: a truncated or
    stale runs table must not become a table with cells marked 'not run'."""
    need = {"row", "workers", "seed"}
    if not need <= set(runs.columns):
        raise BfioError(f"file {path}: columns {sorted(need - set(runs.columns))} missing; the runs table is "
                        f"truncated or not a runs table: {_REBUILD.format(table=table or '<table>')}")
    have = set(zip(runs["row"].astype(str), runs["workers"].astype(int), runs["seed"].astype(int)))
    missing = [(r, int(g), int(s)) for r in rows for g in workers for s in seeds if (r, int(g), int(s)) not in have]
    if missing:
        r, g, s = missing[0]
        raise BfioError(f"file {path}: {len(missing)} of {len(rows) * len(workers) * len(seeds)} runs the table "
                        f"needs are missing (e.g. row {r}, G={g}, seed {s}); the runs table is truncated or "
                        f"stale: {_REBUILD.format(table=table or '<table>')}")


_REBUILD = ("delete it and rebuild with snakemake -c 2 --forcerun collect_runs results/tables/{table}.md "
            "(docs/pipeline.md, 'A table fails on its runs table')")


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """``(mean, lo, hi, n)`` with a two-sided Student-t interval; NaN bounds for n < 2."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    n = int(x.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n < 2:
        return m, float("nan"), float("nan"), n
    half = float(t_quantile(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half, n


def ratio_ci(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """``(geometric mean, lo, hi, n)`` of positive ratios: the Student-t interval
    of their logarithms, exponentiated, so the bounds stay positive and a ratio
    and its inverse get reciprocal intervals (the arithmetic interval of a ratio
    can go below 0: ``7.49 [-28.8, 43.7]``). Non-finite values are left out as
    in :func:`mean_ci`; NaN bounds for n < 2, and when a ratio is not positive
    (no logarithm: the mean is then the arithmetic one)."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    n = int(x.size)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    if (x <= 0).any():
        return float(x.mean()), float("nan"), float("nan"), n
    m, lo, hi, _ = mean_ci(np.log(x), level)
    return float(np.exp(m)), float(np.exp(lo)), float(np.exp(hi)), n


#: Fewest seeds for which a table prints a 95% interval: with n = 2 the t
#: quantile is 12.7 and the interval says nothing (issue 31 item 5).
MIN_INTERVAL_SEEDS = 3


def ci_text(mean: str, lo: str, hi: str, n) -> str:
    """A table cell: ``'mean [lo, hi]'`` (already formatted), or
    ``'mean (n = 2, no interval)'`` below :data:`MIN_INTERVAL_SEEDS` seeds."""
    n = None if n is None or pd.isna(n) else int(n)
    if n is not None and n < MIN_INTERVAL_SEEDS:
        return f"{mean} (n = {n}, no interval)"
    return f"{mean} [{lo}, {hi}]"


def stored_keys(runs: pd.DataFrame) -> dict:
    """Row -> ``(H, objective)`` of a BF-IO row, ``None`` for any other row, read
    from the columns a run stores (``horizon`` and ``objective``,
    :func:`bfio.experiments.run_one`), never from the row key (issue 28). A
    BF-IO row is one with an objective (``default`` or ``paper-literal``);
    the starvation study's admission rows store none and, like the baselines,
    come first. A runs table without an ``objective`` column (written before
    runs stored it) is read as the default objective wherever a horizon is
    stored."""
    if runs.empty or "row" not in runs:
        return {}
    first = runs.drop_duplicates("row")
    horizon = pd.to_numeric(first.get("horizon", pd.Series(np.nan, index=first.index)), errors="coerce")
    objective = first["objective"] if "objective" in first else horizon.where(horizon.isna(), "default")
    return {str(r): (int(h), str(o)) if pd.notna(o) and pd.notna(h) else None
            for r, h, o in zip(first["row"], horizon, objective)}


def _row_order(rows, keys: dict) -> list[str]:
    """Baselines first, then BF-IO by horizon (numerically), the default objective
    before ``paper-literal``; ``keys``: row -> ``(H, objective)`` or ``None``
    (:func:`stored_keys`)."""
    def key(r):
        p = keys.get(r)
        if p:
            return (1, p[0], p[1] != "default", r)
        return (0, 0, False, r)
    return sorted(set(rows), key=key)


def summarize(runs: pd.DataFrame, ref_seed: int, metrics=None, by=("row", "workers")) -> pd.DataFrame:
    """Per group in ``by``: ``<metric>`` (reference seed), ``<metric>_mean``,
    ``<metric>_ci_lo``, ``<metric>_ci_hi`` and ``n_seeds``."""
    metrics = [m for m in (metrics or METRIC_INFO) if m in runs.columns]
    out = []
    for keys, grp in runs.groupby(list(by), sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rec = dict(zip(by, keys))
        first = grp.iloc[0]
        rec.update({"policy": first.get("policy_name", first.get("policy")),
                    "horizon": first.get("horizon"), "trace": first.get("trace"),
                    "requests": first.get("requests"), "slots": first.get("slots"),
                    # the offsets the fast solver optimized: 0..effective_horizon (BF-IO rows)
                    "effective_horizon": first.get("fast_solver_horizon")})
        ref = grp[grp["seed"] == ref_seed]
        for m in metrics:
            rec[m] = float(ref[m].iloc[0]) if len(ref) else float("nan")
            mean, lo, hi, n = mean_ci(grp[m].to_numpy(dtype=float))
            rec[f"{m}_mean"], rec[f"{m}_ci_lo"], rec[f"{m}_ci_hi"] = mean, lo, hi
        rec["n_seeds"] = int(grp["seed"].nunique())
        rec["ref_seed"] = ref_seed
        out.append(rec)
    frame = pd.DataFrame(out)
    if frame.empty:
        return frame
    order = {r: i for i, r in enumerate(_row_order(frame["row"], stored_keys(runs)))}
    frame = frame.sort_values(by=["row", "workers"], key=lambda c: c.map(order) if c.name == "row" else c)
    frame["horizon"] = frame["horizon"].astype("Int64")
    if "effective_horizon" in frame:
        frame["effective_horizon"] = pd.to_numeric(frame["effective_horizon"], errors="coerce").astype("Int64")
    return frame.reset_index(drop=True)


def effective_window_note(frame: pd.DataFrame) -> str:
    """One sentence naming the lookahead BF-IO actually optimized, when some row's
    ``H`` goes beyond it (``frame``: runs with ``horizon`` and
    ``fast_solver_horizon``, or a :func:`summarize` frame with
    ``effective_horizon``); ``''`` otherwise. The cut-off is
    :func:`bfio.solvers.objective.effective_horizon`: offsets whose weight
    ``delta^h`` is below ``NEGLIGIBLE_WEIGHT`` of offset 0's."""
    col = "effective_horizon" if "effective_horizon" in frame else "fast_solver_horizon"
    if col not in frame or "horizon" not in frame:
        return ""
    h = pd.to_numeric(frame["horizon"], errors="coerce")
    e = pd.to_numeric(frame[col], errors="coerce")
    cut = frame[e.notna() & h.notna() & (h > e)]
    if cut.empty:
        return ""
    reach = sorted({int(v) for v in pd.to_numeric(cut[col])})
    rows = ", ".join(sorted({row_label(r) for r in cut["row"]}))
    return (f"**Effective lookahead.** The fast solver optimizes offsets 0..H_eff = "
            f"{' / '.join(map(str, reach))} only: beyond them the discount's weights delta^h are below "
            f"{NEGLIGIBLE_WEIGHT:g} of offset 0's (bfio.solvers.objective.effective_horizon; docs/bfio.md). "
            f"A row with a longer H solves the same program as H = H_eff ({rows}); the option "
            "`discount` (closer to 1) lengthens the reach, about 1 / (1 - delta) steps.")


def row_label(row: str) -> str:
    """Paper-style label: ``FCFS``, ``JSQ``, ``BF-IO (H=40)`` (:func:`bfio.run_keys.row_label`
    with the policy registry's labels, :func:`bfio.policies.policy_label`)."""
    return row if row in KEYED_ROWS else key_label(row, policy_label)


#: The check of a paper-literal row: shown beside the default, no expectation (the printed IO
#: degrades with H; docs/bfio.md "Findings").
REPORTED_ONLY = "reported only (paper-literal)"


def check_kind(objective: str | None) -> str:
    """The tolerance the project applies to a paper cell of a row with BF-IO
    ``objective`` (the stored column; ``None``: a baseline)."""
    if objective is None:
        return "exact to printed digits"
    return "equal or better" if objective == "default" else REPORTED_ONLY


def _printed_keys(table: str) -> dict:
    """Row -> ``(H, 'default')`` of the BF-IO rows the paper prints in ``table``
    (:data:`bfio.paper.TABLE_SETTINGS`' ``horizons``), ``None`` for its baselines."""
    setting = TABLE_SETTINGS[table]
    bfio = {row_key("bfio", h): (int(h), "default") for h in setting["horizons"]}
    return {row: bfio.get(row) for row in setting["values"]}


def paper_comparison(runs: pd.DataFrame, table: str, ref_seed: int) -> pd.DataFrame:
    """Long table, one row per (policy row, metric) of paper ``table``
    (``'table1'`` or ``'table2'``), plus the pre-step metrics (no paper value).

    ``ours`` is the reference-seed value in the paper's unit (full precision),
    ``ours_rounded`` the same rounded to the printed digits, ``rel_diff`` is
    ``ours / paper - 1``; ``mean``, ``ci_lo``, ``ci_hi`` are over seeds in the
    paper's unit; ``vs_paper`` says whether the reference seed is ``equal`` to the printed
    digits, ``better`` or ``worse`` than the paper (metric direction), and
    ``ok`` whether that meets the expectation of :func:`check_kind`.
    Rows the paper prints but the runs lack are kept with NaN (``ran=False``).
    """
    setting = TABLE_SETTINGS[table]
    printed, units = setting["values"], setting["units"]
    summary = summarize(runs, ref_seed) if len(runs) else pd.DataFrame(columns=["row"])
    by_row = {r["row"]: r for r in summary.to_dict("records")}
    keys = {**_printed_keys(table), **stored_keys(runs)}
    rows = _row_order(list(printed) + list(by_row), keys)
    out = []
    for row in rows:
        rec = by_row.get(row)
        key = keys.get(row)
        printed_row = row_key("bfio", key[0]) if key else row  # bfio_h40_literal is compared with bfio_h40
        for metric in (*PAPER_METRICS, *PRE_STEP_UNIT_OF):
            unit_metric = PRE_STEP_UNIT_OF.get(metric, metric)
            scale, unit = units[unit_metric]
            paper = printed.get(printed_row, {}).get(metric) if metric in PAPER_METRICS else None
            label, _, convention = METRIC_INFO[metric]
            cell = {"table": table, "row": row, "label": row_label(row), "metric": metric,
                    "metric_label": label, "unit": unit, "convention": convention,
                    "paper": float(paper) if paper is not None else float("nan"),
                    "paper_printed": paper or "", "ran": rec is not None}
            if rec is not None:
                v = rec[metric]
                cell.update({"ours": v / scale, "ours_rounded": round_like(v, paper, scale) if paper else
                             f"{v / scale:.3g}",
                             "mean": rec[f"{metric}_mean"] / scale, "ci_lo": rec[f"{metric}_ci_lo"] / scale,
                             "ci_hi": rec[f"{metric}_ci_hi"] / scale, "n_seeds": rec["n_seeds"]})
                if paper is not None:
                    cell["rel_diff"] = v / (float(paper) * scale) - 1.0
                    cell["check"] = check_kind(key[1] if key else None)
                    cell["vs_paper"] = compare_to_printed(v, paper, scale, metric)
                    kind = cell["check"]
                    cell["ok"] = (bool(at_least_as_good(v, paper, scale, metric)) if kind == "equal or better" else
                                  bool(matches_printed(v, paper, scale)) if kind == "exact to printed digits" else None)
            out.append(cell)
    cols = ["table", "row", "label", "metric", "metric_label", "unit", "convention", "paper_printed", "paper",
            "ours", "ours_rounded", "rel_diff", "mean", "ci_lo", "ci_hi", "n_seeds", "check", "vs_paper", "ok", "ran"]
    frame = pd.DataFrame(out)
    for c in cols:
        if c not in frame:
            frame[c] = np.nan
    return frame[cols]


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


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}g}"


def _fmt_pct(x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return f"{100 * x:+.1f}%"


def vs_paper_cell(outcome: str, rel_diff: float, check: str) -> str:
    """Markdown of one comparison: ``'equal'``, ``'better by 3.2%'``,
    ``'worse by 1.5% (unexpected: exact to printed digits)'``."""
    text = "equal" if outcome == "equal" else f"{outcome} by {abs(100 * rel_diff):.1f}%"
    expected = {"exact to printed digits": ("equal",), "equal or better": ("equal", "better"),
                REPORTED_ONLY: ("equal", "better", "worse")}.get(check, ())
    return text if outcome in expected else f"{text} (unexpected: {check})"


def paper_markdown(comp: pd.DataFrame, table: str, paper_setting: bool, ref_seed: int,
                   setting_note: str = "", window_note: str = "") -> str:
    """Markdown rendering of :func:`paper_comparison`: one block per metric."""
    s = TABLE_SETTINGS[table]
    title = {"table1": "Table 1 (LongBench)", "table2": "Table 2 (BurstGPT)"}[table]
    lines = [f"# {title}: paper vs this reproduction", ""]
    lines.append(f"Paper setting: {s['trace']}, G={s['workers']}, B={s['slots']}, N={s['requests']:,}, seed {s['seed']}.")
    if setting_note:
        lines.append(f"This run: {setting_note}.")
    if window_note:
        lines += ["", window_note]
    if not paper_setting:
        lines += ["", "**Warning: these runs do not use the paper's setting (the trace, N, G or B differ: "
                      "see 'This run' above); differences from the paper are expected and the checks are not "
                      "meaningful.**"]
    lines += ["", f"*ours* = seed {ref_seed} (the paper's seed is 42), rounded like the paper; "
                  "*rel. diff* = ours (full precision) / paper - 1; *mean [95% CI]* over seeds (Student t"
                  f"{_few_seeds_note(comp.loc[comp['ran'].astype(bool), 'n_seeds'])}). "
                  "*vs paper*: ours is *equal* to the printed digits, or *better* / *worse* than the paper "
                  "(in the metric's direction) by the relative difference; expected: FCFS and JSQ equal, "
                  "BF-IO equal or better (a cell that misses it is marked *unexpected*); BF-IO *paper-literal* rows "
                  "(Eq. (IO) as printed, no discount) are shown beside the default without an expectation.", ""]
    for metric in PAPER_METRICS:
        sub = comp[comp["metric"] == metric]
        label, unit = sub["metric_label"].iloc[0], sub["unit"].iloc[0]
        arrow = "higher is better" if metric == "throughput" else "lower is better"
        lines += [f"## {label} ({unit}; paper convention, {arrow})", ""]
        rows = []
        for r in sub.itertuples():
            rows.append({"policy": r.label, "paper": r.paper_printed or "n/a",
                         "ours": r.ours_rounded if r.ran else "not run", "rel. diff": _fmt_pct(r.rel_diff),
                         "mean [95% CI]": (_paper_ci_cell(r) if r.ran else "n/a"),
                         "vs paper": vs_paper_cell(r.vs_paper, r.rel_diff, r.check)
                                     if r.ran and r.paper_printed else "n/a"})
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    lines += ["## Pre-step convention (theory: loads that gate each step; not printed in the paper)", ""]
    rows = []
    for row in comp["row"].unique():
        sub = comp[(comp["row"] == row)]
        rec = {"policy": sub["label"].iloc[0]}
        for metric in PRE_STEP_UNIT_OF:
            m = sub[sub["metric"] == metric].iloc[0]
            paper_m = sub[sub["metric"] == PRE_STEP_UNIT_OF[metric]].iloc[0]
            head = f"{m['metric_label']} ({m['unit']})"
            if not m["ran"]:
                rec[head] = "not run"
                continue
            rec[head] = (f"{_fmt(m['ours'])} (paper conv. {_fmt(paper_m['ours'])}); mean "
                         + ci_text(_fmt(m['mean']), _fmt(m['ci_lo']), _fmt(m['ci_hi']), m.get("n_seeds")))
        rows.append(rec)
    lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    return "\n".join(lines)


def _few_seeds_note(n_seeds) -> str:
    """``'; no interval with fewer than 3 seeds'`` when a cell has fewer, else ``''``
    (tables with enough seeds read as before)."""
    n = pd.to_numeric(pd.Series(list(n_seeds)), errors="coerce").dropna()
    return f"; no interval with fewer than {MIN_INTERVAL_SEEDS} seeds" if (n < MIN_INTERVAL_SEEDS).any() else ""


def _paper_ci_cell(r) -> str:
    """``'mean [lo, hi] (n=5)'``; ``'mean (n = 2, no interval)'`` below :data:`MIN_INTERVAL_SEEDS`."""
    cell = ci_text(_fmt(r.mean), _fmt(r.ci_lo), _fmt(r.ci_hi), r.n_seeds)
    return cell if int(r.n_seeds) < MIN_INTERVAL_SEEDS else f"{cell} (n={int(r.n_seeds)})"


def summary_markdown(summary: pd.DataFrame, title: str, ref_seed: int) -> str:
    """Markdown of :func:`summarize`: reference-seed value and mean [95% CI] per metric (SI units)."""
    lines = [f"# {title}", "",
             f"Value at seed {ref_seed}; mean [95% CI] over seeds (Student t"
             f"{_few_seeds_note(summary['n_seeds'] if 'n_seeds' in summary else [])}). SI units: imbalance in "
             "tokens, throughput in tokens/s, TPOT in s/token, energy in J. 'pre-step' = theory convention "
             "(loads that gate each step); the others follow the paper's convention.", ""]
    rows = []
    for r in summary.to_dict("records"):
        rec = {"policy": row_label(r["row"]), "G": r["workers"]}
        for m, (label, unit, _) in METRIC_INFO.items():
            if m in r:
                rec[f"{label} ({unit})"] = f"{_fmt(r[m], 4)}; " + ci_text(
                    _fmt(r[m + '_mean'], 4), _fmt(r[m + '_ci_lo'], 4), _fmt(r[m + '_ci_hi'], 4), r.get("n_seeds"))
        rec["seeds"] = r["n_seeds"]
        rows.append(rec)
    lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    note = effective_window_note(summary)
    if note:
        lines += [note, ""]
    return "\n".join(lines)


def energy_reduction(runs: pd.DataFrame, baseline: str, target: str, ref_seed: int,
                     metric: str = "energy_j") -> pd.DataFrame:
    """Per G: baseline and target energy (reference seed and mean) and the
    reduction ``1 - E_target / E_baseline`` in percent, paired by seed."""
    out = []
    for g, grp in runs.groupby("workers"):
        b = grp[grp["row"] == baseline].set_index("seed")[metric]
        t = grp[grp["row"] == target].set_index("seed")[metric]
        seeds = sorted(set(b.index) & set(t.index))
        if not seeds:
            continue
        red = [100.0 * (1.0 - t[s] / b[s]) for s in seeds]
        mean, lo, hi, n = mean_ci(red)
        rec = {"workers": int(g), "baseline": baseline, "target": target,
               f"{metric}_baseline": float(b.get(ref_seed, np.nan)), f"{metric}_target": float(t.get(ref_seed, np.nan)),
               f"{metric}_baseline_mean": float(b[seeds].mean()), f"{metric}_target_mean": float(t[seeds].mean()),
               "reduction_pct": float(100.0 * (1.0 - t.get(ref_seed, np.nan) / b.get(ref_seed, np.nan))),
               "reduction_pct_mean": mean, "reduction_pct_ci_lo": lo, "reduction_pct_ci_hi": hi, "n_seeds": n,
               "ref_seed": ref_seed}
        out.append(rec)
    return pd.DataFrame(out)


ID_COLUMNS = ("run", "trace", "requests", "workers", "slots", "row", "horizon", "seed")


def distinct_runs(frames, columns=None) -> pd.DataFrame:
    """Concatenate per-experiment run tables, one row per distinct ``run``
    (``experiment`` lists every experiment containing it), keeping
    :data:`ID_COLUMNS` plus ``columns`` (all columns when ``None``)."""
    runs = pd.concat(list(frames), ignore_index=True)
    exps = runs.groupby("run", sort=False)["experiment"].agg(lambda x: ",".join(dict.fromkeys(x)))
    runs = runs.drop_duplicates("run").drop(columns=["experiment"]).set_index("run")
    runs.insert(0, "experiments", exps)
    runs = runs.reset_index()
    if columns is not None:
        keep = ["experiments", *ID_COLUMNS, *[c for c in columns if c not in ID_COLUMNS]]
        runs = runs[[c for c in keep if c in runs.columns]]
    return runs


def write_table(frame: pd.DataFrame, csv_path, md_path=None, markdown: str | None = None,
                title: str | None = None) -> None:
    """Write ``frame`` as CSV and (optionally) Markdown (``markdown`` text or a plain rendering)."""
    Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(csv_path, index=False)
    if md_path is not None:
        if markdown is None:
            markdown = (f"# {title}\n\n" if title else "") + frame.to_markdown(index=False) + "\n"
        Path(md_path).write_text(markdown)


__all__ = ["distinct_runs", "mean_ci", "ratio_ci", "ci_text", "MIN_INTERVAL_SEEDS", "stored_keys", "summarize",
           "paper_comparison",
           "paper_markdown", "summary_markdown", "energy_reduction",
           "write_table", "row_label", "is_paper_setting", "METRIC_INFO"]
