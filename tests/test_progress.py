"""Progress of long runs: a pipeline job's log says how far it is (done / total,
elapsed, ETA); a terminal shows a bar, CI stays quiet."""

from __future__ import annotations

import logging
import re
import sys

import numpy as np
import pandas as pd
import pytest

from bfio.runs.experiments import run_one
from bfio.ground.progress import format_eta, log_progress, progress, progress_enabled, progress_line, script_log
from bfio.runs.run import RunSpec
from bfio.runs.runner import run_batch

LINE = re.compile(r"(\d+)/(\d+) \((\d+)%\), elapsed [\d.]+ (s|min|h), ETA ([\d.]+ (s|min|h)|\?)")


def _frame(rows=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"prefill_tokens": rng.integers(1, 400, rows), "decode_tokens": rng.integers(1, 60, rows)})


def test_progress_line_and_eta():
    line = progress_line("simulate fcfs", 25, 100, 10.0)
    assert line == "simulate fcfs: 25/100 (25%), elapsed 10 s, ETA 30 s"
    assert "ETA ?" in progress_line("x", 0, 10, 1.0)
    assert format_eta(150) == "2.5 min" and format_eta(7200) == "2.0 h"


def test_log_progress_rate_limits_and_always_logs_completion(caplog):
    logger = logging.getLogger("bfio.test.progress")
    with caplog.at_level(logging.INFO, logger=logger.name):
        # a run shorter than every_s logs nothing
        with log_progress(logger, every_s=1e9):
            bar = progress(total=10, desc="work", enabled=False)
            for _ in range(10):
                bar.update(1)
            bar.close()
        assert not caplog.records
        # a long run: a line every every_s and a closing line
        clock = iter([0.0, 0.5, 40.0, 41.0, 90.0, 95.0])
        import bfio.ground.progress as mod
        real = mod.time.perf_counter
        mod.time.perf_counter = lambda: next(clock)
        try:
            with log_progress(logger, every_s=30):
                bar = progress(total=5, desc="long", enabled=False)
                for _ in range(5):
                    bar.update(1)
        finally:
            mod.time.perf_counter = real
        lines = [r.getMessage() for r in caplog.records]
        assert [int(LINE.search(m).group(1)) for m in lines] == [2, 4, 5], lines
        assert lines[0] == "long: 2/5 (40%), elapsed 40 s, ETA 60 s"
        caplog.clear()
        with log_progress(logger, every_s=0):
            bar = progress(total=4, desc="work", enabled=False)
            for _ in range(4):
                bar.update(1)
        done = [int(LINE.search(r.getMessage()).group(1)) for r in caplog.records]
        assert done == [1, 2, 3, 4]
    # outside log_progress: nothing is logged
    caplog.clear()
    bar = progress(total=3, desc="quiet", enabled=False)
    bar.update(3)
    assert not caplog.records
    with pytest.raises(ValueError, match="every_s"):
        with log_progress(logger, every_s=-1):
            pass


def test_bar_on_a_terminal_quiet_on_ci(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert progress_enabled()
    monkeypatch.setenv("CI", "1")
    assert not progress_enabled()


def test_simulation_job_logs_progress(tmp_path):
    """A pipeline simulation job (scripts/simulate.py: run_one inside script_log)
    writes done/total with an ETA to its log file."""
    trace = tmp_path / "t.parquet"
    _frame().to_parquet(trace, index=False)
    spec = RunSpec("synthetic", 300, 4, 8, "fcfs", 1)
    log_file = tmp_path / "job.log"
    import bfio.ground.progress
    every = bfio.ground.progress.PROGRESS_LOG_EVERY_S
    bfio.ground.progress.PROGRESS_LOG_EVERY_S = 0.0   # a line at every update, as for a run longer than 30 s
    try:
        with script_log(log_file):
            run_one(spec, trace, tmp_path / "s.json", tmp_path / "series.parquet")
    finally:
        bfio.ground.progress.PROGRESS_LOG_EVERY_S = every
    text = log_file.read_text()
    found = [m for m in LINE.finditer(text)]
    assert found, text
    assert any(m.group(1) == m.group(2) == "300" for m in found), text


def test_study_batch_logs_runs_done_of_total(tmp_path):
    runs = [RunSpec.make("synthetic", 200, 4, 8, row, seed) for row in ("fcfs", "jsq_tokens") for seed in (1, 2)]
    log_file = tmp_path / "job.log"
    with script_log(log_file) as log:
        run_batch(runs, {"synthetic": _frame()}, show_progress=False, log=log)
    counts = re.findall(r"runs: (\d+)/(\d+) \(\d+%\), elapsed .*?, ETA", log_file.read_text())
    assert counts == [(str(k), "4") for k in range(1, 5)]


def test_a_pipeline_job_exits_without_the_last_collection(tmp_path):
    """script_log (every pipeline script) freezes the garbage collector at exit,
    after the script's own exit work, and the job's log is complete."""
    import subprocess
    import sys

    log_file = tmp_path / "job.log"
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
            "from bfio.ground.progress import script_log\n"
            f"with script_log({str(log_file)!r}) as log:\n"
            "    log.info('work done')\n"
            "print('frozen before exit:', gc.get_freeze_count() > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["frozen before exit: False", "frozen at exit: True"]
    assert "work done" in log_file.read_text() and "done in" in log_file.read_text()
