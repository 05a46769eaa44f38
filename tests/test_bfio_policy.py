"""The ``bfio`` policy in the simulator: option validation, determinism,
predictors, admission rules, exact backends on small runs, and the CLI."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from bfio.cli import main
from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.predictors import make_predictor
from bfio.simulator import simulate
from bfio.solvers.brute import brute_force
from bfio.workloads.workload import Workload


def small_workload(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return Workload(prefill=rng.integers(50, 5000, n), decode=rng.integers(1, 40, n))


@pytest.mark.parametrize("opts, key", [
    ({"horizon": -1}, "horizon"), ({"horizon": 1.5}, "horizon"), ({"predictor": "magic"}, "predictor"),
    ({"solver": "cplex"}, "solver"), ({"admission": "x"}, "admission"), ({"admission": "aging:0"}, "admission"),
    ({"on_solver_error": "retry"}, "on_solver_error"), ({"time_limit_s": 0}, "time_limit_s"),
    ({"predictor": "noisy", "noise_low": -0.1}, "noise_low"), ({"color": 1}, "color"),
])
def test_bad_options_name_the_option(opts, key):
    with pytest.raises((ConfigError, TypeError), match=key):
        make_policy("bfio", **opts)


@pytest.mark.parametrize("admission", ["free", "fifo", "aging:3"])
@pytest.mark.parametrize("predictor", ["oracle", "noisy", "none"])
def test_simulation_runs_and_is_deterministic(admission, predictor):
    w = small_workload()
    opts = {"horizon": 5, "predictor": predictor, "admission": admission}
    a = simulate(w, 4, 6, "bfio", seed=7, policy_options=opts)
    b = simulate(w, 4, 6, "bfio", seed=7, policy_options=opts)
    assert a.metrics["avg_imbalance"] == b.metrics["avg_imbalance"]
    assert a.requests["worker"].equals(b.requests["worker"])
    for k in ("wait_steps_p50", "wait_steps_p99", "wait_steps_max", "wait_s_p99", "solver_s_p50", "solver_s_p99"):
        assert k in a.metrics


def test_aging_bounds_the_wait():
    w = small_workload(600, seed=1)
    free = simulate(w, 4, 6, "bfio", policy_options={"horizon": 5, "admission": "free"})
    aged = simulate(w, 4, 6, "bfio", policy_options={"horizon": 5, "admission": "aging:5"})
    assert aged.metrics["wait_steps_max"] <= free.metrics["wait_steps_max"]


def starving_workload(n=2000, seed=3):
    """Small requests plus two huge prompts that Eq. (IO) with free admission
    keeps postponing (admitting them unbalances the two workers)."""
    rng = np.random.default_rng(seed)
    prefill = rng.integers(50, 500, n)
    prefill[[5, 17]] = [200_000, 150_000]
    return Workload(prefill=prefill, decode=rng.integers(1, 20, n))


def test_default_admission_bounds_the_starvation_free_admission_allows():
    """The library default (issue 40: ``drain:N`` with the fast solver) places a request
    that waited N steps once a slot frees after 2N steps at the latest; ``free`` lets it
    wait longer. An exact
    backend, which cannot drain, defaults to ``aging:200``."""
    from bfio.lookahead.admission import DEFAULT_ADMISSION, DEFAULT_EXACT_ADMISSION
    from bfio.lookahead.admission import parse_admission

    mode, n_steps = parse_admission(DEFAULT_ADMISSION)
    assert mode == "drain"
    w = starving_workload()
    free = simulate(w, 2, 4, "bfio", policy_options={"horizon": 5, "admission": "free"})
    default = simulate(w, 2, 4, "bfio", policy_options={"horizon": 5})
    assert free.metrics["wait_steps_max"] > 2 * n_steps  # the workload does starve under free
    # past its deadline 2N a request takes the first free slot (tests/test_drain_admission.py)
    assert default.metrics["wait_steps_max"] <= 2 * n_steps + int(np.max(w.decode))
    assert make_policy("bfio").describe()["admission"] == DEFAULT_ADMISSION
    assert make_policy("bfio", solver="highs").describe()["admission"] == DEFAULT_EXACT_ADMISSION
    assert parse_admission(DEFAULT_EXACT_ADMISSION)[0] == "aging"


def test_default_admission_is_the_starvation_studys_proposal():
    """The default is the admission the starvation study judges as the proposed
    default (its table says whether it meets issue 40's rule)."""
    from bfio.lookahead.admission import DEFAULT_ADMISSION, DEFAULT_EXACT_ADMISSION

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    assert DEFAULT_ADMISSION in cfg["starvation"]["admissions"]
    assert DEFAULT_EXACT_ADMISSION in cfg["starvation"]["admissions"]
    assert cfg["starvation"]["proposed_default"] == DEFAULT_ADMISSION


def test_default_horizon_reaches_the_default_objectives_window():
    """Issue 40: ``--policy bfio`` looks ahead by default, at least as far as the
    default discount weighs (the fast solver's effective window)."""
    from bfio.lookahead.discount import OBJECTIVES, effective_horizon

    policy = make_policy("bfio")
    reach = effective_horizon(10**6, OBJECTIVES["default"]["discount"])
    assert policy.horizon >= reach > 0
    assert policy.describe()["horizon"] == policy.horizon
    assert policy.describe().get("placement", "greedy") == "auto"


def test_noisy_predictor_model():
    o = np.arange(1, 2001)
    est = make_predictor("noisy", 0.3, 0.1, seed=5).decode_estimate(o)
    assert np.all(est >= 1)
    assert np.all(est >= np.floor(o * 0.7) - 1) and np.all(est <= np.ceil(o * 1.1) + 1)
    assert np.array_equal(est, make_predictor("noisy", 0.3, 0.1, seed=5).decode_estimate(o))
    assert np.array_equal(make_predictor("oracle").decode_estimate(o), o)


class Recorder:
    def __init__(self):
        self.items = []

    def __call__(self, inst):
        self.items.append(inst)


def test_every_routing_call_solves_the_io_exactly_with_highs():
    w = small_workload(120, seed=2)
    pol = make_policy("bfio", horizon=3, solver="highs")
    rec = Recorder()
    pol.capture_instances(rec)
    r = simulate(w, 3, 2, pol)
    assert r.metrics["solver_proven_optimal_frac"] == 1.0
    small = [i for i in rec.items if (int((i.free > 0).sum()) + 1) ** i.waiting <= 50_000]
    assert small
    for inst in small[:20]:
        J, _ = brute_force(inst)
        assert J == __import__("bfio.solvers", fromlist=["solve"]).solve(inst, "highs").objective


def test_cli_simulate_bfio(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    rows = "\n".join(f"{a},{b}" for a, b in zip(rng.integers(10, 900, 200), rng.integers(1, 30, 200)))
    trace.write_text("input_length,output_length\n" + rows + "\n")
    code = main(["simulate", "--trace", str(trace), "--requests", "200", "--workers", "4", "--slots", "4",
                 "--policy", "bfio", "--horizon", "5", "--solver", "fast", "--predictor", "oracle",
                 "--admission", "free", "--json", "-"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("avg_imbalance", "throughput", "tpot", "energy_j", "wait_steps_p99", "solver_s_p50", "solver_s_p99"):
        assert k in out


@pytest.mark.parametrize("new_requests", ["predicted", "persist"])
def test_new_request_lifetimes_are_kept_per_estimate_and_follow_a_new_one(new_requests):
    """The lifetimes over the workload are kept between calls (issue 40), but only
    for the same estimate array, window and size: another estimate, window or
    workload gives its own, and the kept array cannot be written to."""
    p = make_policy("bfio", horizon=10, new_requests=new_requests)
    p.reset(2, 4)
    e1 = np.array([0, 3, 7, 1], dtype=np.int64)
    e2 = np.array([5, 0, 2, 9], dtype=np.int64)

    def expect(est, window, n):
        return np.maximum(1, est) if new_requests == "predicted" else np.full(n, window + 1)

    a = p._call_view.new_lifetimes(e1, 10, 4)
    assert p._call_view.new_lifetimes(e1, 10, 4) is a
    np.testing.assert_array_equal(a, expect(e1, 10, 4))
    np.testing.assert_array_equal(p._call_view.new_lifetimes(e2, 10, 4), expect(e2, 10, 4))
    np.testing.assert_array_equal(p._call_view.new_lifetimes(e2, 4, 4), expect(e2, 4, 4))
    np.testing.assert_array_equal(p._call_view.new_lifetimes(e2[:3], 4, 3), expect(e2[:3], 4, 3))
    with pytest.raises(ValueError):
        p._call_view.new_lifetimes(e2, 4, 4)[0] = 99


def test_oracle_estimate_is_a_read_only_view():
    """The oracle's estimate is the decode lengths without a copy (issue 40: one array of
    N values a run), read-only, and the caller's array stays as it was (writeable)."""
    o = np.arange(1, 2001, dtype=np.int64)
    est = make_predictor("oracle").decode_estimate(o)
    assert np.array_equal(est, o) and np.shares_memory(est, o)
    with pytest.raises(ValueError):
        est[0] = 5
    assert o.flags.writeable and o[0] == 1
    small = np.arange(1, 11, dtype=np.int32)  # another type: a converted, still read-only array
    est = make_predictor("oracle").decode_estimate(small)
    assert est.dtype == np.int64 and np.array_equal(est, small) and not est.flags.writeable
    policy = make_policy("bfio")
    w = Workload(np.full(40, 100), np.arange(1, 41))
    simulate(w, 2, 4, policy, show_progress=False)
    assert not policy._call_view.decode_estimate(w).flags.writeable
