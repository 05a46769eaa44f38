"""Issue 31 item 5: ``--solver gurobi`` printed nothing for minutes. Every exact
backend (highs here; gurobi alike) now reports its solves (count, mean time)
every ``CALL_PROGRESS_EVERY_S`` seconds: on stderr, quiet when ``CI`` is set, or
in a pipeline job's log."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import bfio.ground.progress as progress_mod
from bfio.ground.progress import CallProgress, log_progress
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

LINE = re.compile(r"BF-IO exact solver (\w+) \(H=(\d+), time limit [\d.]+ s/solve\): (\d+) solves?, "
                  r"mean [\d.e+-]+ s/solve \(max [\d.e+-]+ s\), step \d+, elapsed [\d.]+ (s|min|h); "
                  r"proven optimal (\d+)/(\d+)")


def tiny_workload(n=24, seed=0):
    rng = np.random.default_rng(seed)
    return Workload(prefill=rng.integers(50, 3000, n), decode=rng.integers(1, 8, n))


def run(solver="highs"):
    return simulate(tiny_workload(), 2, 2, "bfio", policy_options={"horizon": 2, "solver": solver,
                                                                     "admission": "free"})


@pytest.fixture(scope="module")
def warm():
    """One untimed run first: on a cold numba cache (a fresh clone) the first solve's
    time includes compiling the kernels, which the counts below must not depend on."""
    run("highs")


@pytest.fixture
def every_call(warm, monkeypatch):
    """A line at every solve (the interval patched to 0), outside CI."""
    monkeypatch.setattr(progress_mod, "CALL_PROGRESS_EVERY_S", 0.0)
    monkeypatch.delenv("CI", raising=False)


def test_exact_solver_run_prints_progress_lines_to_stderr(every_call, capsys):
    result = run("highs")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("BF-IO exact solver")]
    assert lines, "an exact-solver run printed no progress line"
    parsed = [LINE.fullmatch(ln) for ln in lines]
    assert all(parsed), lines[:3]
    counts = [int(m.group(3)) for m in parsed]
    assert counts == list(range(1, len(counts) + 1))  # every solve counted, in order
    assert counts[-1] == result.metrics["solver_calls"]
    assert {m.group(1) for m in parsed} == {"highs"} and {m.group(2) for m in parsed} == {"2"}
    assert all(int(m.group(5)) == int(m.group(6)) == int(m.group(3)) for m in parsed)  # highs proves each


def test_quiet_in_ci_and_with_the_fast_solver(every_call, monkeypatch, capsys):
    monkeypatch.setenv("CI", "true")
    run("highs")
    assert "exact solver" not in capsys.readouterr().err
    monkeypatch.delenv("CI")
    run("fast")  # milliseconds per call: nothing to report
    assert "exact solver" not in capsys.readouterr().err


def test_rate_limited_by_the_interval(monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(progress_mod, "CALL_PROGRESS_EVERY_S", 1e9)
    run("highs")
    assert "exact solver" not in capsys.readouterr().err
    clock = iter([0.0, 10.0, 31.0, 40.0, 62.0])
    monkeypatch.setattr(progress_mod.time, "perf_counter", lambda: next(clock))
    p = CallProgress("solves", every_s=30.0, unit="solve")  # starts at 0 s
    written = [p.record(2.0, step=k) for k in range(4)]        # at 10, 31, 40, 62 s
    assert [w is not None for w in written] == [False, True, False, True]
    assert written[1] == "solves: 2 solves, mean 2 s/solve (max 2 s), step 1, elapsed 31 s"
    assert p.lines == 2 and "solves:" in capsys.readouterr().err


def test_in_a_pipeline_job_the_lines_go_to_its_log(every_call, monkeypatch, caplog, capsys):
    monkeypatch.setenv("CI", "true")  # the job's log is written whatever CI says, as the bars' lines are
    logger = logging.getLogger("bfio.test.exact")
    with caplog.at_level(logging.INFO, logger=logger.name), log_progress(logger, every_s=30):
        run("highs")
    assert any(LINE.fullmatch(r.getMessage()) for r in caplog.records), [r.getMessage() for r in caplog.records][:3]
    assert "exact solver" not in capsys.readouterr().err
