"""Aggregating run summaries into the pipeline's tables.

* :func:`summarize` - per (row, workers): the reference-seed value and the mean
  with a 95% Student-t confidence interval over seeds, for every metric.
* the paper's Table 1 / Table 2 cell by cell: :mod:`bfio.runs.paper_tables` (the
  verdict of a cell against the print: :mod:`bfio.runs.verdicts`);
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

from bfio.lookahead.run_keys import row_label as key_label
from bfio.ground.errors import BfioError
from bfio.ground.student_t import t_quantile
from bfio.policies import KEYED_ROWS, policy_label
from bfio.lookahead.discount import NEGLIGIBLE_WEIGHT

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
    table at ``path``), or :class:`~bfio.ground.errors.BfioError` naming the file, how
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
    :func:`bfio.runs.experiments.run_one`), never from the row key (issue 28). A
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
    :func:`bfio.lookahead.discount.effective_horizon`: offsets whose weight
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
    """Paper-style label: ``FCFS``, ``JSQ``, ``BF-IO (H=40)`` (:func:`bfio.lookahead.run_keys.row_label`
    with the policy registry's labels, :func:`bfio.policies.policy_label`)."""
    return row if row in KEYED_ROWS else key_label(row, policy_label)


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}g}"


def _fmt_pct(x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return f"{100 * x:+.1f}%"


def few_seeds_note(n_seeds) -> str:
    """``'; no interval with fewer than 3 seeds'`` when a cell has fewer, else ``''``
    (tables with enough seeds read as before)."""
    n = pd.to_numeric(pd.Series(list(n_seeds)), errors="coerce").dropna()
    return f"; no interval with fewer than {MIN_INTERVAL_SEEDS} seeds" if (n < MIN_INTERVAL_SEEDS).any() else ""


def interval_text(lo: str, hi: str, n) -> str:
    """A table's *95% CI* cell on its own (the mean in a column of its own):
    ``'[lo, hi]'`` (already formatted), ``'(n = 2, no interval)'`` below
    :data:`MIN_INTERVAL_SEEDS` seeds."""
    n = None if n is None or pd.isna(n) else int(n)
    if n is not None and n < MIN_INTERVAL_SEEDS:
        return f"(n = {n}, no interval)"
    return f"[{lo}, {hi}]"


def summary_markdown(summary: pd.DataFrame, title: str, ref_seed: int) -> str:
    """Markdown of :func:`summarize`: one table per metric (SI units) with the
    reference-seed value, the mean, the 95% CI and the number of seeds in
    columns of their own, and BF-IO's effective lookahead ``H_eff``."""
    lines = [f"# {title}", "",
             f"Per metric: *seed {ref_seed}* the value at the reference seed; *mean* and *95% CI* over the "
             f"*seeds* (Student t{few_seeds_note(summary['n_seeds'] if 'n_seeds' in summary else [])}); "
             "*H_eff*: the offsets 0..H_eff BF-IO's fast solver optimizes (- for other rows). SI units: "
             "imbalance in tokens, throughput in tokens/s, TPOT in s/token, energy in J. 'pre-step' = theory "
             "convention (loads that gate each step); the others follow the paper's convention.", ""]
    note = effective_window_note(summary)
    if note:
        lines += [note, ""]
    records = summary.to_dict("records")
    for m, (label, unit, _) in METRIC_INFO.items():
        if m not in summary:
            continue
        rows = []
        for r in records:
            h_eff = r.get("effective_horizon")
            rows.append({"policy": row_label(r["row"]), "G": r["workers"],
                         "H_eff": "-" if h_eff is None or pd.isna(h_eff) else str(int(h_eff)),
                         f"seed {ref_seed}": _fmt(r[m], 4), "mean": _fmt(r[m + "_mean"], 4),
                         "95% CI": interval_text(_fmt(r[m + "_ci_lo"], 4), _fmt(r[m + "_ci_hi"], 4),
                                                 r.get("n_seeds")),
                         "seeds": r["n_seeds"]})
        lines += [f"## {label} ({unit})", "", pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), ""]
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


__all__ = ["distinct_runs", "mean_ci", "ratio_ci", "ci_text", "interval_text", "few_seeds_note", "MIN_INTERVAL_SEEDS",
           "stored_keys", "summarize", "summary_markdown", "energy_reduction", "write_table", "row_label",
           "METRIC_INFO"]
