"""Theorem 4 decomposition, saving bound and Corollary 1 (bfio.theory.energy)."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from bfio.ground.power import energy_limit
from bfio.theory import energy as E

PS = [E.DEFAULT_POWER]


@settings(max_examples=50, deadline=None)
@given(K=st.integers(1, 20), G=st.integers(1, 16), seed=st.integers(0, 2**31),
       gamma=st.floats(0.05, 0.95))
def test_decomposition_exact_and_bounded(K, G, seed, gamma):
    rng = np.random.default_rng(seed)
    L = rng.integers(0, 1000, size=(K, G)).astype(float)
    L[rng.random((K, G)) < 0.1] = 0.0
    d = E.decomposition(L, 1e-7, 100.0, 400.0, gamma)
    assert E.decomposition_pass(d)
    assert d["correction_direct"] >= -1e-12 * max(d["energy"], 1)


def test_decomposition_check_fails_when_broken():
    L = np.array([[10.0, 5.0, 1.0], [3.0, 9.0, 9.0]])
    d = E.decomposition(L, 1e-7, 100.0, 400.0, 0.7)
    bad = dict(d, correction_bound=0.5 * d["correction_direct"])
    assert not E.decomposition_pass(bad)
    bad = dict(d, residual=1e-3 * d["energy"])
    assert not E.decomposition_pass(bad)


def test_saving_bound_holds_on_random_pairs():
    rng = np.random.default_rng(3)
    for _ in range(200):
        K, G = rng.integers(1, 10), rng.integers(2, 10)
        base = rng.integers(1, 500, size=(K, G)).astype(float)
        # same total per step, different split (same W)
        sums = base.sum(axis=1, keepdims=True)
        w = rng.dirichlet(np.ones(G) * 20, size=K)
        bal = w * sums
        d0 = E.decomposition(base, 1e-7, 100, 400, 0.7)
        d1 = E.decomposition(bal, 1e-7, 100, 400, 0.7)
        r = E.saving_row(d0, d1, 100, 400, 0.7)
        assert r["work_equal"] and r["bound_le_saving"]


def test_corollary_limit_and_table():
    assert energy_limit(100, 400, 0.7) == pytest.approx(100 / 190)
    t = E.corollary_table([{"name": "A100", "p_idle": 100, "p_max": 400, "gamma": 0.7},
                           {"name": "x", "p_idle": 50, "p_max": 500, "gamma": 0.5}])
    assert t.loc[0, "limit"] == pytest.approx(0.5263157894736842)
    assert t.loc[1, "limit"] == pytest.approx(50 / 275)
    # the bound tends to the limit only if eta_sum -> infinity
    assert E.eta_needed(0.9, 100, 400, 0.7) == pytest.approx(400 / (190 / 0.9 - 190))


def _run_frame():
    from bfio import simulate
    from bfio.workloads.workload import Workload

    rng = np.random.default_rng(0)
    wl = Workload(rng.integers(1, 2000, 300), rng.geometric(0.05, 300))
    rows = []
    for pol in ("fcfs", "jsq_tokens"):
        m = simulate(wl, workers=4, slots=8, policy=pol).metrics
        rows.append({"policy": pol, "trace": "synthetic", **{k: m[k] for k in (
            "energy_sync_j", "energy_correction_j", "energy_correction_bound_j", "imbalance_total",
            "work_total", "avg_imbalance")}})
    return pd.DataFrame(rows)


def test_check_runs_on_simulator_runs():
    f = _run_frame()
    out = E.check_runs(f)
    assert out["pass"].all() and "policy" in out
    broken = f.copy()
    broken.loc[0, "energy_correction_bound_j"] *= 0.5
    assert not E.check_runs(broken)["pass"].iloc[0]
    sav = E.saving_vs_baseline(f, baseline="fcfs", group_cols=["trace"])
    assert len(sav) == 1 and bool(sav["work_equal"].iloc[0])
    assert "alpha_paper" in sav
