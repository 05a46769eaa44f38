"""Table logic: mean and CI, per-experiment summaries, the paper comparison
(tolerances, units, both conventions), energy reduction and writers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bfio.paper import TABLE1, TABLE1_UNITS, TABLE2, TABLE2_UNITS
from bfio.tables import (
    vs_paper_cell,
    distinct_runs,
    energy_reduction,
    is_paper_setting,
    mean_ci,
    paper_comparison,
    paper_markdown,
    paper_pivot,
    summarize,
    summary_markdown,
    write_table,
)


def test_mean_ci_matches_t_interval():
    x = [1.0, 2.0, 4.0, 7.0, 11.0]
    m, lo, hi, n = mean_ci(x)
    half = stats.t.ppf(0.975, 4) * np.std(x, ddof=1) / math.sqrt(5)
    assert n == 5 and m == pytest.approx(5.0)
    assert (lo, hi) == (pytest.approx(5 - half), pytest.approx(5 + half))
    m, lo, hi, n = mean_ci([3.0])
    assert m == 3.0 and n == 1 and math.isnan(lo) and math.isnan(hi)
    assert mean_ci([])[3] == 0


def synthetic_runs(table: str, values: dict, units: dict, seeds=(42, 1, 2), trace="longbench", workers=256,
                   requests=80000, jitter=0.0):
    """Runs whose seed-42 metrics equal ``values`` (printed, in paper units), with the
    ``horizon`` and ``objective`` columns a run stores (:func:`bfio.experiments.run_one`)."""
    rows = []
    for row, cells in values.items():
        policy, h = ("bfio", int(row[6:])) if row.startswith("bfio_h") else (row, None)
        for k, seed in enumerate(seeds):
            rec = {"run": f"{trace}/n{requests}-g{workers}-b72/{row}/seed{seed}", "row": row, "policy_name": policy,
                   "horizon": h, "objective": "default" if h is not None else None, "seed": seed, "trace": trace,
                   "requests": requests, "workers": workers, "slots": 72, "experiment": table}
            for metric, printed in cells.items():
                scale = units[metric][0]
                v = float(printed) * scale * (1 + jitter * k)
                rec[metric] = v
                if metric in ("avg_imbalance", "energy_j"):
                    rec[metric + "_pre"] = v * 1.01
            rows.append(rec)
    return pd.DataFrame(rows)


def test_summarize_reference_seed_and_ci():
    runs = synthetic_runs("table1", TABLE1, TABLE1_UNITS, jitter=0.01)
    s = summarize(runs, ref_seed=42)
    assert list(s["row"][:3]) == ["fcfs", "jsq_tokens", "bfio_h0"]  # baselines first, then H ascending
    assert list(s["row"][2:]) == ["bfio_h0", "bfio_h20", "bfio_h40", "bfio_h60", "bfio_h80", "bfio_h100"]
    fcfs = s[s["row"] == "fcfs"].iloc[0]
    assert fcfs["avg_imbalance"] == pytest.approx(37.0e8)
    assert fcfs["avg_imbalance_mean"] == pytest.approx(37.0e8 * 1.01)
    assert fcfs["avg_imbalance_ci_lo"] < fcfs["avg_imbalance_mean"] < fcfs["avg_imbalance_ci_hi"]
    assert fcfs["n_seeds"] == 3
    md = summary_markdown(s, "t", 42)
    assert "pre-step" in md and "BF-IO (H=40)" in md


@pytest.mark.parametrize("table, values, units", [("table1", TABLE1, TABLE1_UNITS), ("table2", TABLE2, TABLE2_UNITS)])
def test_paper_comparison_exact_values_pass(table, values, units):
    runs = synthetic_runs(table, values, units)
    comp = paper_comparison(runs, table, 42)
    paper_cells = comp[comp["paper_printed"].astype(bool)]
    assert len(paper_cells) == 4 * len(values)
    assert paper_cells["ok"].all()
    assert np.allclose(paper_cells["rel_diff"], 0.0, atol=1e-12)
    assert (paper_cells["ours_rounded"] == paper_cells["paper_printed"]).all()
    # Both conventions, labelled
    pre = comp[comp["metric"].isin(["avg_imbalance_pre", "energy_j_pre"])]
    assert len(pre) == 2 * len(values) and pre["convention"].str.contains("pre-step").all()
    assert comp[comp["metric"] == "avg_imbalance"]["convention"].str.contains("paper").all()
    # Units are the paper's
    imb = comp[(comp["metric"] == "avg_imbalance") & (comp["row"] == "fcfs")].iloc[0]
    assert imb["unit"] == units["avg_imbalance"][1]
    assert imb["ours"] == pytest.approx(float(values["fcfs"]["avg_imbalance"]))


def test_paper_comparison_tolerances():
    values = {k: dict(v) for k, v in TABLE1.items()}
    runs = synthetic_runs("table1", values, TABLE1_UNITS)
    sel = lambda row, m: (runs["row"] == row) & (runs["seed"] == 42)  # noqa: E731
    runs.loc[sel("fcfs", None), "avg_imbalance"] = 37.06e8   # rounds to 37.1: not exact
    runs.loc[sel("jsq_tokens", None), "throughput"] = 6.154e3  # rounds to 6.15: exact
    runs.loc[sel("bfio_h40", None), "throughput"] = 11.0e3     # better: passes
    runs.loc[sel("bfio_h20", None), "energy_j"] = 22.0e6        # worse: fails
    runs.loc[sel("bfio_h60", None), "avg_imbalance"] = 1.0e8    # better: passes
    comp = paper_comparison(runs, "table1", 42).set_index(["row", "metric"])
    assert not comp.loc[("fcfs", "avg_imbalance"), "ok"]
    assert comp.loc[("fcfs", "avg_imbalance"), "check"] == "exact to printed digits"
    assert comp.loc[("jsq_tokens", "throughput"), "ok"]
    assert comp.loc[("bfio_h40", "throughput"), "ok"]
    assert comp.loc[("bfio_h40", "throughput"), "check"] == "equal or better"
    assert not comp.loc[("bfio_h20", "energy_j"), "ok"]
    assert comp.loc[("bfio_h60", "avg_imbalance"), "ok"]
    assert comp.loc[("bfio_h20", "energy_j"), "rel_diff"] == pytest.approx(22.0 / 21.3 - 1)
    # the comparison is named for what it is: equal / better / worse than the paper
    assert comp.loc[("fcfs", "avg_imbalance"), "vs_paper"] == "worse"       # 37.06 > 37.0 printed
    assert comp.loc[("jsq_tokens", "throughput"), "vs_paper"] == "equal"
    assert comp.loc[("bfio_h40", "throughput"), "vs_paper"] == "better"
    assert comp.loc[("bfio_h20", "energy_j"), "vs_paper"] == "worse"
    assert comp.loc[("bfio_h60", "avg_imbalance"), "vs_paper"] == "better"
    md = paper_markdown(comp.reset_index(), "table1", True, 42)
    assert "FAIL" not in md and "pass" not in md
    rel = 100 * (22.0 / 21.3 - 1)
    assert f"worse by {rel:.1f}% (unexpected: equal or better)" in md
    assert f"better by {100 * (11.0 / float(TABLE1['bfio_h40']['throughput']) - 1):.1f}% |" in md
    assert "| equal " in md


def test_vs_paper_cell_names_direction_and_difference():
    assert vs_paper_cell("equal", 0.0004, "exact to printed digits") == "equal"
    assert vs_paper_cell("better", -0.032, "equal or better") == "better by 3.2%"
    assert vs_paper_cell("better", 0.012, "exact to printed digits") == "better by 1.2% (unexpected: exact to printed digits)"
    assert vs_paper_cell("worse", 0.015, "equal or better") == "worse by 1.5% (unexpected: equal or better)"


def test_paper_comparison_missing_rows_and_markdown():
    runs = synthetic_runs("table2", {k: TABLE2[k] for k in ("fcfs", "jsq_tokens")}, TABLE2_UNITS)
    comp = paper_comparison(runs, "table2", 42)
    assert set(comp["row"]) == set(TABLE2)
    assert not comp[comp["row"] == "bfio_h20"]["ran"].any()
    md = paper_markdown(comp, "table2", is_paper_setting(runs, "table2"), 42)
    assert "not run" in md and "Table 2 (BurstGPT)" in md
    assert "do not use the paper's setting" in md  # synthetic runs used longbench/G=256
    assert "scaled-down" not in md  # the setting may differ either way (issue 31 item 5)
    assert "1e-2 s/tok" in md and "kJ" in md
    ok = synthetic_runs("table2", TABLE2, TABLE2_UNITS, trace="burstgpt", workers=16, requests=100000)
    assert is_paper_setting(ok, "table2")


def test_energy_reduction_paired_by_seed():
    rows = []
    for g in (16, 32):
        for seed in (42, 1):
            rows.append({"workers": g, "row": "fcfs", "seed": seed, "energy_j": 100.0})
            rows.append({"workers": g, "row": "bfio_h40", "seed": seed, "energy_j": 80.0 if seed == 42 else 70.0})
    out = energy_reduction(pd.DataFrame(rows), "fcfs", "bfio_h40", 42)
    assert list(out["workers"]) == [16, 32]
    assert out["reduction_pct"].tolist() == pytest.approx([20.0, 20.0])
    assert out["reduction_pct_mean"].tolist() == pytest.approx([25.0, 25.0])
    assert (out["n_seeds"] == 2).all()


def test_distinct_runs_and_writer(tmp_path):
    a = pd.DataFrame({"run": ["r1", "r2"], "experiment": "table1", "row": ["fcfs", "x"], "seed": [42, 42],
                      "energy_sync_j": [1.0, 2.0]})
    b = pd.DataFrame({"run": ["r1"], "experiment": "horizon_sweep", "row": ["fcfs"], "seed": [42],
                      "energy_sync_j": [1.0]})
    out = distinct_runs([a, b], columns=["energy_sync_j"])
    assert list(out["run"]) == ["r1", "r2"]
    assert out.set_index("run").loc["r1", "experiments"] == "table1,horizon_sweep"
    write_table(out, tmp_path / "t.csv", tmp_path / "t.md", title="T")
    assert pd.read_csv(tmp_path / "t.csv").shape == out.shape
    assert (tmp_path / "t.md").read_text().startswith("# T")


def test_paper_pivot_orders_rows_as_the_paper(tmp_path):
    # runs in any order: the comparison table is in the paper's order, and its CSV keeps it
    runs = synthetic_runs("table1", TABLE1, TABLE1_UNITS).sample(frac=1.0, random_state=3)
    comp = paper_comparison(runs, "table1", 42)
    comp.to_csv(tmp_path / "table1.csv", index=False)
    pivot = paper_pivot(pd.read_csv(tmp_path / "table1.csv", dtype={"ours_rounded": str}))
    horizons = sorted(int(r[6:]) for r in TABLE1 if r.startswith("bfio_h"))
    assert list(pivot.index) == ["FCFS", "JSQ"] + [f"BF-IO (H={h})" for h in horizons]
    assert list(pivot.columns) == ["Avg imbalance", "Throughput", "TPOT", "Energy"]
    assert pivot.loc["BF-IO (H=40)", "Throughput"] == TABLE1["bfio_h40"]["throughput"]
    with pytest.raises(ValueError, match="paper_pivot"):
        paper_pivot(comp[comp["metric"] == "avg_imbalance_pre"])


def test_truncated_runs_table_fails_naming_the_file(tmp_path):
    """Issue 26 item 4: a runs table that lacks runs the table needs is an error, not 'not run' cells."""
    from bfio.errors import BfioError
    from bfio.tables import check_runs_complete

    runs = synthetic_runs("table2", TABLE2, TABLE2_UNITS, trace="burstgpt", workers=16, requests=100000)
    rows = sorted(set(runs["row"]))
    seeds = sorted(set(runs["seed"].astype(int)))
    check_runs_complete(runs, "runs_table2.csv", rows=rows, workers=[16], seeds=seeds, table="table2")
    truncated = runs[runs["row"] != rows[-1]]
    with pytest.raises(BfioError, match=r"runs_table2\.csv.*missing.*--forcerun collect_runs"):
        check_runs_complete(truncated, "runs_table2.csv", rows=rows, workers=[16], seeds=seeds, table="table2")
    with pytest.raises(BfioError, match="columns"):
        check_runs_complete(runs.drop(columns=["seed"]), "runs_table2.csv", rows=rows, workers=[16], seeds=seeds)


def test_effective_window_is_stated_when_h_goes_beyond_it():
    """Issue 31 item 2: a row whose H exceeds the fast solver's cut-off says so."""
    from bfio.tables import effective_window_note, summary_markdown

    runs = synthetic_runs("table2", TABLE2, TABLE2_UNITS, trace="burstgpt", workers=16, requests=100000)
    bf = runs["row"].str.startswith("bfio_h")
    runs["horizon"] = np.where(bf, runs["row"].str.extract(r"bfio_h(\d+)")[0].astype(float), np.nan)
    runs["fast_solver_horizon"] = np.minimum(runs["horizon"], 13)
    note = effective_window_note(runs)
    assert "H_eff = 13" in note and "H=20" in note
    md = summary_markdown(summarize(runs, 42), "t", 42)
    assert "Effective lookahead" in md
    runs["fast_solver_horizon"] = runs["horizon"]  # no cut-off: nothing to say
    assert effective_window_note(runs) == ""


def test_order_and_checks_read_the_stored_columns_not_the_key():
    """Issue 28: the row order, the printed row a run is compared with and the check
    come from the ``horizon`` and ``objective`` columns a run stores; the key is not parsed."""
    from bfio.tables import REPORTED_ONLY, check_kind, stored_keys

    runs = synthetic_runs("table2", TABLE2, TABLE2_UNITS, trace="burstgpt", workers=16, requests=100000)
    lit = runs[runs["row"] == "bfio_h20"].assign(row="twenty_literal", objective="paper-literal")
    opaque = runs[runs["row"] == "bfio_h0"].assign(row="a_late_one", horizon=30)
    adm = runs[runs["row"] == "bfio_h0"].assign(row="bfio_h0_aging200", objective=None)  # a study row: no objective
    runs = pd.concat([runs, lit, opaque, adm], ignore_index=True)
    keys = stored_keys(runs)
    assert keys["twenty_literal"] == (20, "paper-literal") and keys["a_late_one"] == (30, "default")
    assert keys["fcfs"] is None and keys["bfio_h0_aging200"] is None
    s = summarize(runs, 42)
    assert list(s["row"]) == ["bfio_h0_aging200", "fcfs", "jsq_tokens", "bfio_h0", "bfio_h20", "twenty_literal",
                              "a_late_one"]
    assert list(s.columns) == list(summarize(synthetic_runs("table2", TABLE2, TABLE2_UNITS), 42).columns)
    assert "objective" not in s  # the summary tables keep their columns (results byte-identical)
    comp = paper_comparison(runs, "table2", 42).set_index(["row", "metric"])
    cell = comp.loc[("twenty_literal", "throughput")]  # compared with the printed bfio_h20, reported only
    assert cell["paper_printed"] == TABLE2["bfio_h20"]["throughput"] and cell["check"] == REPORTED_ONLY
    assert comp.loc[("bfio_h20", "throughput"), "check"] == "equal or better"
    assert comp.loc[("fcfs", "throughput"), "check"] == "exact to printed digits"
    assert comp.loc[("a_late_one", "throughput"), "paper_printed"] == ""  # H = 30: not printed
    assert (check_kind(None), check_kind("default"), check_kind("paper-literal")) == (
        "exact to printed digits", "equal or better", REPORTED_ONLY)


def test_runs_without_an_objective_column_read_as_the_default_objective():
    """A runs table written before runs stored ``objective``: a row with a horizon is BF-IO's default."""
    from bfio.tables import stored_keys

    runs = synthetic_runs("table1", TABLE1, TABLE1_UNITS).drop(columns=["objective"])
    assert stored_keys(runs) == {r: ((int(r[6:]), "default") if r.startswith("bfio_h") else None) for r in TABLE1}
    comp = paper_comparison(runs, "table1", 42)
    assert comp[comp["paper_printed"].astype(bool)]["ok"].all()
