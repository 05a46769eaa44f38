"""The calibrated step model (issue 44, docs/step_model.md): the fit against
held-out profile rows, the step-time kernels' invariants, the pinned profile
files, and the paper's step left as it was."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bfio.ground.errors import ConfigError, ProfileError
from bfio.step_model import MODELS, StepModel
from bfio.step_model import fit
from bfio.step_model.profiles import PROFILE_FILES, profile_path
from bfio.engine.step_time import lockstep_dt, lockstep_prefill_dt, rank_cost

REPO = Path(__file__).resolve().parents[1]
CASES = [("a100", "Llama-2-7b-hf"), ("h100", "Llama-2-70b-hf")]


def _rel(pred, y):
    return np.abs(pred - y) / y


@pytest.mark.parametrize("gpu,model", CASES)
def test_fit_reproduces_heldout_rows_within_reported_error(data_dir, gpu, model):
    """Predict the held-out rows afresh (rows, split and coefficients read here) and
    compare with the error the fit reports: the reported max bounds every row, the
    reported median is the rows' median."""
    ops = fit.fit_ops(gpu, model, data_dir)
    (Xd, yd), (Xp, yp) = fit.attention_rows(data_dir)
    rows = {"attn_decode": (Xd, yd), "attn_prefill": (Xp, yp),
            "mlp": fit.mlp_rows(gpu, model, MODELS[model].tp, data_dir),
            "dp_all_reduce": fit.all_reduce_rows(gpu, fit.SYNC_WORKERS, data_dir)}
    if MODELS[model].tp > 1:
        rows["tp_all_reduce"] = fit.all_reduce_rows(gpu, MODELS[model].tp, data_dir)
    assert set(rows) == set(ops)
    for op, (X, y) in rows.items():
        f = ops[op]
        held = fit.split(len(y))
        assert held.sum() == f.heldout_rows and (~held).sum() == f.train_rows
        assert 0.1 < held.mean() < 0.3  # about HOLDOUT of the rows
        err = _rel(X[held] @ np.asarray(f.coef), y[held])
        assert err.max() <= f.heldout_max_rel_err + 1e-12, op
        assert np.median(err) == pytest.approx(f.heldout_median_rel_err, rel=1e-9), op
        # the fit is a fit: on its own training rows the median relative error is small
        assert np.median(_rel(X[~held] @ np.asarray(f.coef), y[~held])) < 0.15, op
        assert min(f.coef) >= 0  # non-negative: the step time is monotone


def test_docs_hold_the_fitted_values(data_dir):
    """docs/step_model.md's tables are the fit recomputed from the profiles now."""
    text = (REPO / "docs" / "step_model.md").read_text()
    m = re.search(r"<!-- fit-tables:start -->\n(.*?)\n<!-- fit-tables:end -->", text, flags=re.S)
    assert m, "docs/step_model.md lacks its fit-tables markers"
    assert m.group(1) == fit.report_markdown(data_dir), \
        "docs/step_model.md: the fit tables differ from bfio.step_model.fit.report_markdown(); regenerate them"


def test_docs_list_the_pinned_files():
    text = (REPO / "docs" / "step_model.md").read_text()
    for name, spec in PROFILE_FILES.items():
        assert re.search(rf"\| `{re.escape(name)}` \| `{spec.sha256}` \|", text), name


def test_split_is_deterministic():
    assert np.array_equal(fit.split(1000), fit.split(1000))
    assert not np.array_equal(fit.split(1000), fit.split(1000, seed=fit.SPLIT_SEED + 1))


def _coef(data_dir, beta=None):
    return StepModel("calibrated", beta=beta).coefficients(data_dir).array()


def test_step_time_monotone_in_loads_counts_and_prefill(data_dir):
    coef = _coef(data_dir)
    rng = np.random.default_rng(0)
    for _ in range(200):
        G = int(rng.integers(1, 6))
        loads = rng.integers(0, 50_000, G).astype(np.int64)
        active = rng.integers(0, 72, G).astype(np.int64)
        base = lockstep_dt(coef, loads, active)
        g = int(rng.integers(G))
        more_l, more_n = loads.copy(), active.copy()
        more_l[g] += int(rng.integers(1, 5000))
        more_n[g] += 1
        assert lockstep_dt(coef, more_l, active) >= base
        assert lockstep_dt(coef, loads, more_n) >= base
    # strictly: the slowest rank's load and the largest batch set the step
    loads, active = np.array([1000, 9000], dtype=np.int64), np.array([4, 4], dtype=np.int64)
    assert lockstep_dt(coef, loads + np.array([0, 1000]), active) > lockstep_dt(coef, loads, active)
    assert lockstep_dt(coef, loads, active + np.array([0, 3])) > lockstep_dt(coef, loads, active)
    # prefill: more chunk tokens on a rank never shorten the step
    slot = np.array([[0, 1], [2, -1]], dtype=np.int64)
    left = np.array([0, 500, 0], dtype=np.int64)
    take = np.array([[0, 100], [0, 0]], dtype=np.int64)
    loads = np.array([2000, 3000], dtype=np.int64)
    prev = lockstep_prefill_dt(coef, slot, left, take, loads)
    for p in (200, 400, 500):
        take[0, 1] = p
        cur = lockstep_prefill_dt(coef, slot, left, take, loads)
        assert cur > prev
        prev = cur


def test_one_rank_without_padding_is_that_ranks_cost(data_dir):
    coef = _coef(data_dir, beta=0.0)
    coef[6] = 0.0  # comm
    loads, active = np.array([12_345], dtype=np.int64), np.array([17], dtype=np.int64)
    want = rank_cost(coef, 12_345, 17, 0)
    assert lockstep_dt(coef, loads, active) == want
    c = StepModel("calibrated").coefficients(data_dir)
    assert want == pytest.approx(c.alpha + c.a_kv * 12_345 + c.a_n * 17, rel=1e-12)
    # with prefill: the decoding requests count in n_g, the chunk in P_g
    slot = np.array([[0, 1, 2]], dtype=np.int64)
    left, take = np.array([0, 0, 300], dtype=np.int64), np.array([[0, 0, 256]], dtype=np.int64)
    got = lockstep_prefill_dt(coef, slot, left, take, loads)
    assert got == pytest.approx(c.alpha + c.a_kv * 12_345 + c.a_n * 2 + c.a_p * 256 + c.a_p2 * 256 ** 2, rel=1e-12)


def _workload(n=300):
    from bfio.workloads.workload import draw_workload

    rng = np.random.default_rng(3)
    return draw_workload(rng.integers(10, 3000, n).astype(np.int64), rng.integers(1, 200, n).astype(np.int64),
                         n, 1)


def test_simulated_dt_is_the_calibrated_formula(data_dir, monkeypatch):
    """One rank, decode only: every step's dt is alpha + a_kv L + (a_n + beta) n + comm
    on the step's gating load and active count (the per-step series)."""
    from bfio.simulator import simulate

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    sm = StepModel("calibrated", gpu="h100", model="CodeLlama-34b-Instruct-hf")
    r = simulate(_workload(), 1, 16, "fcfs", step_model=sm)
    c = sm.coefficients(data_dir)
    s = r.series
    want = c.alpha + c.a_kv * s["max_load_pre"] + (c.a_n + c.beta) * s["active"] + c.comm
    np.testing.assert_allclose(s["dt"], want, rtol=1e-12)
    assert r.config["step_model"]["coefficients"] == c.to_dict()


def test_calibrated_runs_are_deterministic_and_beta_matters(data_dir, monkeypatch):
    from bfio.engine.prefill import PrefillModel
    from bfio.simulator import simulate

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    w = _workload()
    for prefill in (None, PrefillModel()):
        a = simulate(w, 3, 8, "fcfs", step_model=StepModel("calibrated"), prefill=prefill)
        b = simulate(w, 3, 8, "fcfs", step_model=StepModel("calibrated"), prefill=prefill)
        assert a.series.equals(b.series) and a.requests.equals(b.requests)
        big = simulate(w, 3, 8, "fcfs", step_model=StepModel("calibrated", beta=5.4e-4), prefill=prefill)
        assert big.metrics["makespan_s"] > a.metrics["makespan_s"]


def test_paper_step_model_is_the_default(data_dir):
    from bfio.simulator import simulate

    w = _workload()
    a = simulate(w, 3, 8, "fcfs")
    b = simulate(w, 3, 8, "fcfs", step_model="paper")
    assert a.series.equals(b.series) and "step_model" not in a.config
    assert a.series["dt"].iloc[0] == a.config["overhead_s"] + a.config["token_latency_s"] * a.series["max_load_pre"].iloc[0]


def test_independent_ranks(data_dir, monkeypatch):
    """``barrier: independent``: with one rank the same schedule as the lockstep
    step less the DP collective; with more, each request still generates exactly
    its tokens, each a step of at least ``alpha`` of its own rank; runs repeat
    bit for bit; with the prefill model it runs (its own tests elsewhere)."""
    from bfio.engine.prefill import PrefillModel
    from bfio.simulator import simulate

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    w = _workload()
    c = StepModel("calibrated").coefficients(data_dir)
    lock = simulate(w, 1, 8, "fcfs", step_model=StepModel("calibrated"))
    ind = simulate(w, 1, 8, "fcfs", step_model=StepModel("calibrated", barrier="independent"))
    np.testing.assert_allclose(ind.series["dt"], lock.series["dt"] - c.comm, rtol=1e-12)
    for col in ("worker", "start_step", "finish_step"):
        assert ind.requests[col].equals(lock.requests[col])
    for policy in ("fcfs", "jsq_tokens"):
        a = simulate(w, 3, 4, policy, step_model=StepModel("calibrated", barrier="independent"))
        b = simulate(w, 3, 4, policy, step_model=StepModel("calibrated", barrier="independent"))
        assert a.series.equals(b.series) and a.requests.equals(b.requests)
        r = a.requests
        assert ((r["finish_s"] - r["start_s"]) >= r["decode"] * c.alpha * (1 - 1e-12)).all()
        assert a.series["active"].sum() == w.decode.sum()  # every token generated once
        assert (a.series["dt"] > 0).all()
        assert a.metrics["makespan_s"] < simulate(w, 3, 4, policy, step_model=StepModel("calibrated")
                                                  ).metrics["makespan_s"]  # no barrier: no waiting for the slowest
    # with the prefill model: bfio.sim.engine.IndependentPrefillEngine (tests/test_independent_prefill.py)
    r = simulate(w, 2, 4, "fcfs", step_model=StepModel("calibrated", barrier="independent"), prefill=PrefillModel())
    assert r.requests["ttft_s"].notna().all()


def test_step_model_checks():
    with pytest.raises(ConfigError, match="step_model.beta: only valid with step_model 'calibrated'"):
        StepModel(beta=0.0)
    with pytest.raises(ConfigError, match="beta"):
        StepModel("calibrated", beta=-1.0)
    with pytest.raises(ConfigError, match="model"):
        StepModel("calibrated", model="gpt-5")


def _copy_profiles(data_dir, tmp_path):
    dest = tmp_path / "vidur-profiles"
    dest.mkdir()
    for name in PROFILE_FILES:
        shutil.copyfile(Path(data_dir) / "vidur-profiles" / name, dest / name)
    return dest


def test_missing_profile_names_the_file(data_dir, tmp_path):
    dest = _copy_profiles(data_dir, tmp_path)
    (dest / "h100_Llama-2-7b-hf_mlp.csv").unlink()
    with pytest.raises(ProfileError, match=r"h100_Llama-2-7b-hf_mlp\.csv: missing"):
        fit.fit_ops("h100", "Llama-2-7b-hf", tmp_path)
    with pytest.raises(ProfileError, match=r"h100_Llama-2-7b-hf_mlp\.csv: missing"):
        StepModel("calibrated", gpu="h100").coefficients(tmp_path)


def test_mismatched_profile_names_the_file(data_dir, tmp_path):
    dest = _copy_profiles(data_dir, tmp_path)
    path = dest / "a100_attention_e8192_q64_kv8_tp2.csv"
    data = bytearray(path.read_bytes())
    data[-2] = ord("9") if data[-2] != ord("9") else ord("8")  # same size, other content
    path.write_bytes(bytes(data))
    with pytest.raises(ProfileError, match=r"a100_attention_e8192_q64_kv8_tp2\.csv: sha256 is .* expected"):
        profile_path("a100_attention_e8192_q64_kv8_tp2.csv", tmp_path)
    (dest / "a100_dgx_all_reduce.csv").write_text("size\n1\n")
    with pytest.raises(ProfileError, match=r"a100_dgx_all_reduce\.csv: size is"):
        profile_path("a100_dgx_all_reduce.csv", tmp_path)
    # the pinned copies verify
    assert profile_path("a100_Llama-2-7b-hf_mlp.csv", tmp_path).is_file()


def test_cli_flags(data_dir, tmp_path):
    import json
    import subprocess
    import sys

    base = [sys.executable, "-m", "bfio.cli", "simulate", "--trace", "burstgpt", "--requests", "200", "--workers",
            "2", "--slots", "8", "--data-dir", str(data_dir), "--no-timings"]
    env = {**__import__("os").environ, "BFIO_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO / "src")}
    bad = subprocess.run(base + ["--beta", "0.1"], capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and "--beta: only valid with --step-model calibrated" in bad.stderr
    ok = subprocess.run(base + ["--step-model", "calibrated", "--barrier", "independent", "--prefill-chunk-tokens",
                                "512"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr  # independent ranks with prefill: no longer refused
    out = tmp_path / "r.json"
    ok = subprocess.run(base + ["--step-model", "calibrated", "--model", "Llama-2-70b-hf", "--beta", "0",
                                "--json", str(out)], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(out.read_text())
    assert summary["step_model"]["model"] == "Llama-2-70b-hf" and summary["step_model"]["coefficients"]["beta"] == 0.0
