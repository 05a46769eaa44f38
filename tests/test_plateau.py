"""The plateau table over H (bfio.pipeline.plateau): best H per objective, per-seed paired
percentages against it, the criterion's verdicts, and errors that name the input."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.ground.errors import ConfigError
from bfio.pipeline.plateau import (IMBALANCE_TOLERANCE_PCT, THROUGHPUT_TOLERANCE_PCT, plateau, plateau_markdown,
                          plateau_verdict, within_plateau)
from bfio.lookahead.run_keys import paper_row_spec

SEEDS = (42, 1, 2, 3)


def runs_of(values: dict, workers: int = 8) -> pd.DataFrame:
    """``values[row] = (imbalances per seed, throughputs per seed)`` -> a run table
    with the ``horizon`` and ``objective`` columns a run stores (bfio.runs.experiments.run_one)."""
    def stored(row):
        spec = paper_row_spec(row)
        return {"horizon": spec.horizon if spec else None, "objective": spec.objective if spec else None}

    return pd.DataFrame([{"row": row, **stored(row), "workers": workers, "seed": s, "avg_imbalance": imb[i],
                          "throughput": thr[i]} for row, (imb, thr) in values.items() for i, s in enumerate(SEEDS)])


def test_percentages_are_paired_by_seed_against_the_best_mean():
    imb10 = np.array([100.0, 120.0, 90.0, 110.0])
    imb40 = np.array([110.0, 118.0, 94.0, 112.0])
    thr = np.array([10.0, 11.0, 9.0, 10.0])
    runs = runs_of({"bfio_h0": (imb10 * 3, thr * 0.9), "bfio_h10": (imb10, thr), "bfio_h40": (imb40, thr * 0.995),
                    "bfio_h100": (imb40, thr * 0.995), "fcfs": (imb10 * 9, thr * 0.5),
                    "bfio_h40_literal": (imb40 * 2, thr * 0.9)})
    t = plateau(runs, ref_seed=42)
    d = t[t["objective"] == "default"].set_index("horizon")
    assert list(d.index) == [0, 10, 40, 100]  # H order; baselines and other objectives left out
    assert (d["avg_imbalance_best_row"] == "bfio_h10").all() and (d["throughput_best_row"] == "bfio_h10").all()
    expect = 100 * (imb40 / imb10 - 1)
    assert d.loc[40, "avg_imbalance_pct_mean"] == pytest.approx(expect.mean())
    assert d.loc[40, "avg_imbalance_ref_pct"] == pytest.approx(10.0)  # seed 42: 110 vs 100
    assert d.loc[40, "throughput_pct_mean"] == pytest.approx(-0.5)
    assert d.loc[40, "avg_imbalance_pct_ci_lo"] < expect.mean() < d.loc[40, "avg_imbalance_pct_ci_hi"]
    assert int(d.loc[40, "n_seeds"]) == len(SEEDS)
    # seed 42 misses (10% > 5%), the mean (3.6%) meets it; short windows carry no verdict
    assert not d.loc[40, "met_ref"] and d.loc[40, "met_mean"] and d.loc[40, "long"] and not d.loc[10, "long"]
    lit = t[t["objective"] == "paper-literal"].set_index("horizon")
    assert list(lit.index) == [0, 40]  # H = 0 is the same program for both objectives
    assert lit.loc[40, "avg_imbalance_best_row"] == "bfio_h40_literal"  # 2 imb40 < 3 imb10
    md = plateau_markdown(t, "synthetic", 42)
    assert "issue " not in md  # a reader cannot look issues up: the criterion cites docs/
    assert "## default, G = 8" in md and "## paper-literal, G = 8" in md and "**no**" in md


def test_ties_go_to_the_shorter_window():
    same = (np.full(4, 50.0), np.full(4, 5.0))
    t = plateau(runs_of({"bfio_h100": same, "bfio_h20": same, "bfio_h40": same}), ref_seed=42)
    assert set(t["avg_imbalance_best_row"]) == {"bfio_h20"} and set(t["avg_imbalance_ref_best_row"]) == {"bfio_h20"}
    assert t["met_mean"].all() and set(t.loc[t["long"], "ci_verdict"]) == {"met"}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1, 1e9), st.floats(1, 1e6)), min_size=3 * len(SEEDS), max_size=3 * len(SEEDS)))
def test_the_reference_seed_best_is_the_extreme(values):
    v = np.array(values).reshape(3, len(SEEDS), 2)
    runs = runs_of({f"bfio_h{H}": (v[i, :, 0], v[i, :, 1]) for i, H in enumerate((0, 10, 40))})
    t = plateau(runs, ref_seed=42)
    assert (t["avg_imbalance_ref_pct"] >= 0).all() and (t["throughput_ref_pct"] <= 0).all()
    assert (t.loc[t["row"] == t["avg_imbalance_ref_best_row"], "avg_imbalance_ref_pct"] == 0).all()


@pytest.mark.parametrize("imb, thr, verdict", [
    ((-1.0, 4.9), (-0.9, 2.0), "met"),
    ((5.1, 9.0), (-0.5, 0.5), "missed"),
    ((0.0, 1.0), (-3.0, -1.1), "missed"),
    ((-2.0, 12.0), (-0.5, 0.5), "undecided"),
    ((0.0, 1.0), (-1.5, 0.5), "undecided"),
    ((float("nan"), float("nan")), (0.0, 0.0), "undecided"),
])
def test_interval_verdicts(imb, thr, verdict):
    assert plateau_verdict(imb, thr) == verdict


def test_the_point_criterion_is_inclusive():
    assert within_plateau(IMBALANCE_TOLERANCE_PCT, -THROUGHPUT_TOLERANCE_PCT)
    assert not within_plateau(IMBALANCE_TOLERANCE_PCT + 1e-9, 0.0)
    assert not within_plateau(0.0, -THROUGHPUT_TOLERANCE_PCT - 1e-9)


def test_errors_name_the_input():
    with pytest.raises(ConfigError, match=r"runs_x\.csv: missing columns \['throughput'\]"):
        plateau(pd.DataFrame({"row": ["bfio_h0"], "horizon": [0], "objective": ["default"], "workers": [8],
                              "seed": [42], "avg_imbalance": [1.0]}), 42,
                source="runs_x.csv")
    only_fcfs = runs_of({"fcfs": (np.ones(4), np.ones(4)), "bfio_h40": (np.ones(4), np.ones(4))})
    with pytest.raises(ConfigError, match="runs_y.csv: no objective has BF-IO rows at two or more horizons"):
        plateau(only_fcfs, 42, source="runs_y.csv")
