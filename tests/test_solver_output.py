"""Solver output never reaches stdout when stdout carries JSON (issue 12, item 1),
HiGHS refuses models it cannot solve within its limit (item 2), and solver
fallbacks are reported on stderr.

The CLI runs in a subprocess: the HiGHS banner is written by C code to file
descriptor 1, which in-process capture (``capsys``) does not see.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bfio.solvers import SolverError, solve, warn_fallbacks
from bfio.solvers.random_instances import random_instance
from bfio.solvers.brute import brute_force
from bfio.solvers.instance import Instance, save_instance

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _bfio(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "bfio.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.parametrize("discounted", [False, True])
def test_bfio_solve_highs_prints_only_json(tmp_path, discounted):
    rng = np.random.default_rng(4)
    inst = random_instance(rng, workers=3, waiting=5, horizon=4, admission="free",
                           discount=0.7 if discounted else None, lifetimes="random" if discounted else None)
    path = save_instance(inst, tmp_path / "call.json")
    p = _bfio("solve", "--instance", str(path), "--solver", "highs")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)  # the whole of stdout is one JSON document
    assert "HiGHS" not in p.stdout
    J, _ = brute_force(inst)
    assert out["proven_optimal"] and abs(out["objective"] - J) <= 1e-9 * max(1.0, abs(J))
    assert out["discount"] == inst.discount
    assert out["objective"] == pytest.approx(inst.objective(np.array(out["assignment"])), rel=1e-12)


def test_bfio_simulate_highs_json_to_stdout():
    p = _bfio("simulate", "--trace", "longbench", "--requests", "12", "--workers", "2", "--slots", "3",
              "--policy", "bfio", "--horizon", "2", "--solver", "highs", "--json", "-", timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert "HiGHS" not in p.stdout
    assert isinstance(out, dict)


def test_highs_refuses_a_model_too_large_and_fallback_works():
    from bfio.solvers import highs as highs_mod

    G, n = 40, highs_mod.MAX_BINARIES // 40 + 1  # just above the bound
    inst = Instance(base=np.zeros((G, 3), dtype=np.int64), free=np.full(G, 2), sizes=np.arange(1, n + 1),
                    ages=np.zeros(n, dtype=np.int64))
    with pytest.raises(SolverError, match=r"highs.*too large.*binaries.*--solver fast"):
        solve(inst, "highs", time_limit_s=5)
    sol = solve(inst, "highs", time_limit_s=5, on_error="fallback")
    assert sol.fallback_from == "highs" and sol.solver == "fast"
    inst.check(sol.assign)


def test_guarded_highs_matches_in_process(monkeypatch):
    """The forked, deadline-guarded run gives the same optimum as the in-process one."""
    from bfio.solvers import highs as highs_mod

    rng = np.random.default_rng(9)
    inst = random_instance(rng, workers=4, waiting=6, horizon=5, discount=0.9, lifetimes="random")
    ref = highs_mod.solve_highs(inst, time_limit_s=30)
    monkeypatch.setattr(highs_mod, "GUARD_BINARIES", 0)
    calls = []
    orig = highs_mod._run_highs_guarded
    monkeypatch.setattr(highs_mod, "_run_highs_guarded", lambda *a: calls.append(1) or orig(*a))
    got = highs_mod.solve_highs(inst, time_limit_s=30)
    assert calls and got.proven_optimal and got.objective == pytest.approx(ref.objective, rel=1e-12)


def test_warn_fallbacks_reports_count_on_stderr(capsys):
    assert warn_fallbacks(0, 58, "gurobi") is None
    assert capsys.readouterr().err == ""
    msg = warn_fallbacks(40, 58, "gurobi")
    err = capsys.readouterr().err
    assert "40 of 58" in err and "gurobi" in err and msg in err
