"""The plateau over the lookahead window ``H`` (issue 11, ``docs/bfio.md``).

The paper's claim (Section 6.4, Figure Hnum, Table 1) is that BF-IO's performance
"saturates around H = 40": looking further ahead neither helps nor hurts much. The
project states it as a criterion on an H-sweep of one objective: every long
window (``H >= LONG_HORIZON``) is within :data:`IMBALANCE_TOLERANCE_PCT` of the
best ``H``'s imbalance and within :data:`THROUGHPUT_TOLERANCE_PCT` of the best
``H``'s throughput.

:func:`plateau` measures it both ways a reader needs: at the reference seed
(one run per ``H``, how the paper's tables are printed) and over seeds, paired
by seed against the ``H`` with the best *mean* (mean and 95% Student-t
interval, :func:`bfio.studies.aggregate.paired_effect`). ``H = 0`` (row
``bfio_h0``) belongs to both objectives: the program is the same there.
"""

from __future__ import annotations

import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.lookahead.discount import OBJECTIVES
from bfio.studies.aggregate import paired_effect
from bfio.runs.tables import row_label

#: A long window's imbalance may exceed the best H's by at most this (percent).
IMBALANCE_TOLERANCE_PCT = 5.0
#: A long window's throughput may fall below the best H's by at most this (percent).
THROUGHPUT_TOLERANCE_PCT = 1.0
#: The windows the criterion applies to: ``H >= LONG_HORIZON``.
LONG_HORIZON = 40
#: (metric, direction): which H is "best" on it (+1: highest, -1: lowest).
CRITERION = {"avg_imbalance": -1, "throughput": +1}


def within_plateau(imbalance_pct: float, throughput_pct: float) -> bool:
    """The criterion on one window: imbalance at most :data:`IMBALANCE_TOLERANCE_PCT`
    above the best H's, throughput at most :data:`THROUGHPUT_TOLERANCE_PCT` below."""
    return imbalance_pct <= IMBALANCE_TOLERANCE_PCT and throughput_pct >= -THROUGHPUT_TOLERANCE_PCT


def plateau_verdict(imbalance_ci: tuple[float, float], throughput_ci: tuple[float, float]) -> str:
    """What the 95% intervals say of the criterion: ``met`` (both intervals inside
    the tolerances), ``missed`` (either wholly outside), else ``undecided``."""
    (imb_lo, imb_hi), (thr_lo, thr_hi) = imbalance_ci, throughput_ci
    if any(pd.isna(x) for x in (imb_lo, imb_hi, thr_lo, thr_hi)):
        return "undecided"
    if imb_lo > IMBALANCE_TOLERANCE_PCT or thr_hi < -THROUGHPUT_TOLERANCE_PCT:
        return "missed"
    if imb_hi <= IMBALANCE_TOLERANCE_PCT and thr_lo >= -THROUGHPUT_TOLERANCE_PCT:
        return "met"
    return "undecided"


def bfio_rows(runs: pd.DataFrame, objective: str) -> pd.DataFrame:
    """The runs of ``objective``'s BF-IO rows (``H = 0`` rows count for every
    objective: both coincide there), read from the ``horizon`` and ``objective``
    columns every run stores (:func:`bfio.runs.experiments.run_one`)."""
    if objective not in OBJECTIVES:
        raise ConfigError(f"objective: expected {' | '.join(OBJECTIVES)}, got {objective!r}")
    horizon = pd.to_numeric(runs["horizon"])
    keep = horizon.notna() & runs["objective"].notna() & ((runs["objective"] == objective) | (horizon == 0))
    out = runs[keep].copy()
    out["horizon"] = horizon[keep].astype(int)
    return out


def plateau(runs: pd.DataFrame, ref_seed: int, source: str = "runs") -> pd.DataFrame:
    """Per objective, ``G`` and BF-IO row of an H-sweep: the imbalance and throughput
    relative to the best ``H`` (percent; ``+`` is more), at ``ref_seed`` and paired
    over seeds, and whether the window meets the plateau criterion.

    Columns: ``objective``, ``workers``, ``row``, ``horizon``, ``long`` (``H >=``
    :data:`LONG_HORIZON`), per metric ``<m>_best_row`` (the best mean),
    ``<m>_ref_best_row`` (the best at ``ref_seed``), ``<m>_ref_pct``,
    ``<m>_pct_mean``, ``<m>_pct_ci_lo``, ``<m>_pct_ci_hi``, then ``n_seeds``,
    ``met_ref``, ``met_mean`` and ``ci_verdict`` (:func:`plateau_verdict`). ``source`` names the input in errors.
    """
    missing = [c for c in ("row", "workers", "seed", "horizon", "objective", *CRITERION) if c not in runs.columns]
    if missing:
        raise ConfigError(f"{source}: missing columns {missing} (need the H-sweep's run table)")
    out = []
    for objective in OBJECTIVES:
        rows = bfio_rows(runs, objective)
        for workers, grp in rows.groupby("workers", sort=True):
            if grp["horizon"].nunique() < 2:
                continue
            horizon_of = grp.drop_duplicates("row").set_index("row")["horizon"]
            ref = grp[grp["seed"] == ref_seed].set_index("row")
            table = pd.DataFrame({"row": horizon_of.sort_values().index})
            table["horizon"] = table["row"].map(horizon_of)
            for metric, direction in CRITERION.items():
                # ties go to the shortest window (the first row in H order)
                means = grp.groupby("row")[metric].mean().reindex(table["row"])
                best = means.idxmax() if direction > 0 else means.idxmin()
                eff = pd.concat([paired_effect(grp, ["workers"], best, r, metric, "gain_pct")
                                 for r in table["row"]], ignore_index=True)
                table[f"{metric}_best_row"] = best
                for stat in ("mean", "ci_lo", "ci_hi"):
                    table[f"{metric}_pct_{stat}"] = eff[f"gain_pct_{stat}"].to_numpy()
                table["n_seeds"] = eff["n_seeds"].to_numpy(dtype=int)
                if metric in ref.columns and len(ref):
                    ref_vals = ref[metric].reindex(table["row"])
                    ref_best = ref_vals.idxmax() if direction > 0 else ref_vals.idxmin()
                    table[f"{metric}_ref_best_row"] = ref_best
                    table[f"{metric}_ref_pct"] = (100.0 * (ref_vals / ref_vals[ref_best] - 1.0)).to_numpy()
                else:
                    table[f"{metric}_ref_best_row"] = None
                    table[f"{metric}_ref_pct"] = float("nan")
            table["long"] = table["horizon"] >= LONG_HORIZON
            for col, kind in (("met_ref", "ref_pct"), ("met_mean", "pct_mean")):
                table[col] = [within_plateau(i, t) if pd.notna(i) and pd.notna(t) else None
                              for i, t in zip(table[f"avg_imbalance_{kind}"], table[f"throughput_{kind}"])]
            table["ci_verdict"] = [
                plateau_verdict((r["avg_imbalance_pct_ci_lo"], r["avg_imbalance_pct_ci_hi"]),
                                (r["throughput_pct_ci_lo"], r["throughput_pct_ci_hi"]))
                for r in table.to_dict("records")]
            table.insert(0, "workers", workers)
            table.insert(0, "objective", objective)
            out.append(table)
    if not out:
        raise ConfigError(f"{source}: no objective has BF-IO rows at two or more horizons "
                          "(rows bfio_h<H>, bfio_h<H>_literal): nothing to compare")
    return pd.concat(out, ignore_index=True)


def _pct(x) -> str:
    return "n/a" if pd.isna(x) else f"{x:+.1f}%"


def _label(row) -> str:
    return row_label(row) if isinstance(row, str) and row else "n/a"


def _verdict(long: bool, met) -> str:
    if not long:
        return ""
    return "n/a" if met is None or pd.isna(met) else ("yes" if met else "**no**")


def plateau_markdown(table: pd.DataFrame, title: str, ref_seed: int) -> str:
    """Markdown of :func:`plateau`: one table per objective and ``G``."""
    lines = [f"# Plateau over H: {title}", "",
             "Criterion (docs/bfio.md, 'The paper's tables with the default objective'): "
             f"every H >= {LONG_HORIZON} within {IMBALANCE_TOLERANCE_PCT:g}% of the best H's "
             f"imbalance and within {THROUGHPUT_TOLERANCE_PCT:g}% of the best H's throughput. Each cell is the "
             f"row's value relative to the best H (+: more), at seed {ref_seed} (the best H at that seed) and "
             "as the mean [95% CI] over seeds, paired by seed against the H with the best mean (ties: the "
             "shorter H). '95% CI': met if both intervals lie inside the tolerances, missed if either lies "
             "outside, undecided otherwise (more seeds would tell).", ""]
    for (objective, workers), grp in table.groupby(["objective", "workers"], sort=False):
        first = grp.iloc[0]
        best = {m: f"{_label(first[f'{m}_best_row'])} (mean), {_label(first[f'{m}_ref_best_row'])} (seed {ref_seed})"
                for m in CRITERION}
        lines += [f"## {objective}, G = {workers}", "",
                  f"Best H: imbalance {best['avg_imbalance']}; throughput {best['throughput']}.", ""]
        rows = []
        for r in grp.to_dict("records"):
            rec = {"H": r["horizon"]}
            for metric, label in (("avg_imbalance", "imbalance"), ("throughput", "throughput")):
                rec[f"{label} vs best (seed {ref_seed})"] = _pct(r[f"{metric}_ref_pct"])
                rec[f"{label} vs best, mean [95% CI]"] = (f"{_pct(r[f'{metric}_pct_mean'])} "
                                                         f"[{_pct(r[f'{metric}_pct_ci_lo'])}, "
                                                         f"{_pct(r[f'{metric}_pct_ci_hi'])}]")
            rec[f"plateau (seed {ref_seed})"] = _verdict(r["long"], r["met_ref"])
            rec["plateau (mean)"] = _verdict(r["long"], r["met_mean"])
            rec["plateau (95% CI)"] = r["ci_verdict"] if r["long"] else ""
            rec["seeds"] = r["n_seeds"]
            rows.append(rec)
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    return "\n".join(lines)


__all__ = ["IMBALANCE_TOLERANCE_PCT", "THROUGHPUT_TOLERANCE_PCT", "LONG_HORIZON", "CRITERION", "within_plateau",
           "plateau_verdict", "bfio_rows", "plateau", "plateau_markdown"]
