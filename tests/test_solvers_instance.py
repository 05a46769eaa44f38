"""Instance JSON round trip, validation errors, the ``bfio solve`` CLI, and
the predicted-load kernel against a direct computation."""

import json

import numpy as np
import pytest

from bfio.cli import main
from bfio.solvers import SolverError, solve
from bfio.solvers.random_instances import random_instance
from bfio.solvers.instance import Instance, InstanceError, load_instance, save_instance
from bfio.lookahead.profiles import predicted_loads


def test_round_trip_and_cli(tmp_path, capsys):
    inst = random_instance(np.random.default_rng(1), workers=4, waiting=10, horizon=5, admission="free")
    path = save_instance(inst, tmp_path / "i.json")
    back = load_instance(path)
    assert np.array_equal(back.base, inst.base) and np.array_equal(back.sizes, inst.sizes)
    for solver in ("fast", "highs"):
        assert main(["solve", "--instance", str(path), "--solver", solver, "--json", "-"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert {"objective", "assignment", "proven_optimal", "wall_s"} <= set(out)
        assert out["objective"] == inst.objective(np.array(out["assignment"]))


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("free"), "free"),
    (lambda d: d.update(free=[1, -1]), "free"),
    (lambda d: d.update(base_loads=[[1, 2]]), "base_loads"),
    (lambda d: d["waiting"].update(prefill=[0]), "waiting.prefill"),
    (lambda d: d.update(admission="sometimes"), "admission"),
])
def test_malformed_instances_name_the_field(tmp_path, mutate, field, capsys):
    d = {"format": "bfio-instance/1", "workers": 2, "horizon": 1, "free": [1, 1],
         "base_loads": [[5, 6], [3, 0]], "waiting": {"prefill": [2, 3], "age": [1, 0]}}
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InstanceError, match=field.replace(".", r"\.")):
        load_instance(p)
    assert main(["solve", "--instance", str(p), "--json", "-"]) == 2
    assert str(p) in capsys.readouterr().err


def test_not_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(InstanceError, match="not valid JSON"):
        load_instance(p)


def test_objective_definition():
    inst = Instance(base=[[10, 11], [0, 0]], free=[1, 2], sizes=[4, 7], ages=[1, 0])
    a = np.array([1, -1])  # request 0 to worker 1: loads h=0: 10, 4; h=1: 11, 5
    assert inst.objective(a) == (2 * 10 - 14) + (2 * 11 - 16)


def test_predicted_loads_match_direct():
    rng = np.random.default_rng(3)
    G, B, N, H = 5, 4, 30, 7
    slot = np.full((G, B), -1)
    ids = rng.permutation(N)[: G * B - 3]
    slot.flat[: ids.size] = ids
    s = rng.integers(1, 100, N)
    tau = rng.integers(0, 5, N)
    est = tau + rng.integers(1, 12, N)
    got = predicted_loads(slot, s, tau, est, H)
    want = np.zeros((G, H + 1), dtype=np.int64)
    for g in range(G):
        for i in slot[g][slot[g] >= 0]:
            for h in range(H + 1):
                if h < max(1, est[i] - tau[i]):
                    want[g, h] += s[i] + tau[i] + h
    assert np.array_equal(got, want)


def test_gurobi_size_limit_fails_or_falls_back():
    pytest.importorskip("gurobipy")
    rng = np.random.default_rng(0)
    inst = random_instance(rng, workers=8, waiting=0, horizon=20, admission="free")
    inst = Instance(base=np.repeat(inst.base, 40, axis=0), free=np.full(8 * 40, 2), sizes=rng.integers(1, 50, 300),
                    ages=np.zeros(300, dtype=int))
    with pytest.raises(SolverError, match="restricted|license|gurobi"):
        solve(inst, "gurobi", time_limit_s=5)
    sol = solve(inst, "gurobi", time_limit_s=5, on_error="fallback")
    assert sol.fallback_from == "gurobi"
    inst.check(sol.assign)


def test_lifetimes_round_trip_and_exact_backends_solve(tmp_path):
    import numpy as np
    import pytest as _pytest

    from bfio.ground.errors import ConfigError
    from bfio.policies.bfio import BFIO
    from bfio.solvers import solve
    from bfio.solvers.instance import Instance, load_instance, save_instance

    inst = Instance(base=[[5, 6, 0], [9, 0, 0]], free=[1, 1], sizes=[2, 3], ages=[4, 0], lifetimes=[1, 5])
    assert inst.lifetimes.tolist() == [1, 3]  # clipped to H + 1
    back = load_instance(save_instance(inst, tmp_path / "i.json"))
    assert back.lifetimes.tolist() == [1, 3]
    a = np.array([0, 1])
    assert back.objective(a) == inst.objective(a)
    assert inst.loads(a).tolist() == [[7, 6, 0], [12, 4, 5]]
    from bfio.solvers.brute import brute_force

    J, _ = brute_force(back)
    assert solve(back, "highs").objective == J  # exact backends solve lifetimes (issue 11)
    with _pytest.raises(ConfigError, match="new_requests"):
        BFIO(new_requests="maybe")
    # the exact backends solve per-request lifetimes, so the policy accepts them with any solver
    assert BFIO(new_requests="predicted", solver="highs").describe()["new_requests"] == "predicted"
