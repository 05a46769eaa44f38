"""The theory grids on the smoke profile: every pass column holds, and the
checks fail for a deliberately broken BF-IO (FCFS labelled as BF-IO)."""
import numpy as np
import pytest

from bfio.theory import config, run
from bfio.theory.assign import fcfs_round_loads
from bfio.theory.distributions import uniform
from bfio.theory.drift import make_drift
from bfio.theory.estimates import steady_state_estimates
from bfio.theory.predictions import geometric_snapshot, snapshot_moments
from bfio.theory.slot_model import POLICY_FCFS, run_slot_model

SMOKE = config.resolve({"profile": "smoke"})


def _pass_cols(df):
    return [c for c in df.columns if c.endswith("_pass")]


@pytest.fixture(scope="module")
def thm1():
    return run.run_homogeneous(SMOKE)


@pytest.fixture(scope="module")
def thm2():
    return run.run_slots(SMOKE, "geometric")


def test_thm1_passes(thm1):
    c = thm1["cells"]
    assert c[_pass_cols(c)].all().all()
    assert thm1["fits"].query("role == 'check'")["shape_pass"].all()
    assert thm1["energy_decomposition"]["pass"].all()
    assert thm1["energy_saving"]["bound_le_saving"].all()


def test_thm1_fails_for_fcfs_labelled_bf():
    bad = run.run_homogeneous(SMOKE, bf_assign=fcfs_round_loads)
    c = bad["cells"]
    assert not c["lemma1_pass"].all()
    assert not bad["fits"].query("role == 'check' and y == 'iir'")["shape_pass"].all()


def test_thm2_passes(thm2):
    c = thm2["cells"]
    assert c[_pass_cols(c)].all().all()
    assert thm2["energy_decomposition"]["pass"].all()
    assert thm2["energy_saving"]["bound_le_saving"].all()


def test_thm2_fails_for_fcfs_labelled_bf():
    cfg = config.resolve({"profile": "smoke", "geometric": {"B": [32], "G": [16, 64], "p": [0.1],
                                                            "distributions": ["uniform"]}})
    bad = run.run_slots(cfg, "geometric", bf_policy=POLICY_FCFS)
    c = bad["cells"]
    assert not c["bf_certified_pass"].all()
    assert np.allclose(c["iir"], 1.0)


def test_snapshot_formula_matches_general_expression():
    law = uniform(50)
    drift = make_drift({"kind": "one"}, 16)
    for p in (0.05, 0.2, 0.5):
        m, v = snapshot_moments(law, p, drift, (2000, 2010))
        cm, cv = geometric_snapshot(law, p)
        assert m == pytest.approx(cm, rel=1e-9) and v == pytest.approx(cv, rel=1e-6)


def test_snapshot_check_is_statistical_and_can_fail():
    """The measured snapshot mean sits within its SE-derived tolerance of the
    formula, and a wrong formula (p replaced by 1.2 p) is rejected."""
    from bfio.theory.checks import equal_within, quantile

    law = uniform(100)
    drift = make_drift({"kind": "one"}, 16)
    run_ = run_slot_model(law, 16, 32, 0.1, drift, seed=5, n_batches=20, batch_mult=10)
    e = steady_state_estimates(run_)
    q = quantile(0.01, 2, df=19)
    m, v = geometric_snapshot(law, 0.1)
    assert equal_within(e["snap_mean"], e["snap_mean_se"], m, q)
    assert equal_within(e["snap_var"], e["snap_var_se"], v, q)
    mw, vw = geometric_snapshot(law, 0.12)
    assert not equal_within(e["snap_mean"], e["snap_mean_se"], mw, q)
    assert not equal_within(e["snap_var"], e["snap_var_se"], vw, q)


def test_same_active_sets_and_W():
    law = uniform(20)
    run_ = run_slot_model(law, 4, 8, 0.2, make_drift({"kind": "one"}, 16), seed=1, n_batches=4, batch_mult=5)
    assert run_.same_active
    assert run_.loads["fcfs"].sum() == pytest.approx(run_.loads["bf"].sum())


def test_config_profiles_and_schema():
    from pathlib import Path

    import yaml
    from jsonschema import Draft202012Validator

    schema = yaml.safe_load(open(Path(__file__).resolve().parents[1] / "workflow/schemas/theory.schema.yaml"))
    v = Draft202012Validator(schema)
    assert not list(v.iter_errors({}))
    assert not list(v.iter_errors({"profile": "smoke"}))
    assert list(v.iter_errors({"profile": "huge"}))
    assert list(v.iter_errors({"homogeneous": {"G": [1]}}))
    full, smoke = config.resolve({}), config.resolve({"profile": "smoke"})
    assert full["homogeneous"]["G"][-1] == 256 and max(full["homogeneous"]["B"]) == 128
    assert len(smoke["homogeneous"]["G"]) < len(full["homogeneous"]["G"])
    assert config.resolve({"profile": "smoke", "seed": 3})["seed"] == 3
