"""The README's two commands on a machine that has only the repository (issue
17): the smoke config in a copy of the repository (``git ls-files``) with no
``../shared/data`` beside it. The traces come from a local HTTP server on the
loopback interface serving the trace directory (``BFIO_TRACE_BASE_URL``, a
mirror of its layout); the machines have no internet.

* ``download: auto`` (default): the traces are fetched, verified and used; a
  second run fetches nothing; the derived trace (no public source) is skipped
  with one line.
* a mirror sending a corrupted file, dropping the connection mid-file or never
  answering: the job fails with the URL and the reason in its log, and leaves
  no file behind.
* ``download: false``: the run stops before any job, naming every missing
  trace and the two ways to provide them.

Run alone with ``python -m pytest -m download``."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from trace_server import TraceServer, corrupted

from bfio.traces.download import BASE_URL_ENV
from bfio.pipeline.config import validate_config
from bfio.runs.experiments import experiment_runs
from bfio.runs.run import RunSpec
from bfio.traces.registry import KNOWN_TRACES

pytestmark = pytest.mark.download

REPO = Path(__file__).resolve().parents[1]
SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
#: the smoke config is a named run: its outputs live here under the checkout
SMOKE_RUN = Path("runs") / SMOKE["run_name"]
PUBLIC = [t for t in SMOKE["traces"] if KNOWN_TRACES[t].url]
DERIVED = [t for t in SMOKE["traces"] if not KNOWN_TRACES[t].url]


def clone(tmp_path: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored: the working
    tree under test) copied to ``tmp_path/repo``; nothing beside it."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"the repository's file list needs git ({e})")
    dest = tmp_path / "repo"
    for rel in filter(None, out.decode().split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert not (tmp_path / "shared").exists()
    return dest


def snakemake(repo: Path, *args, base_url: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("BFIO_DATA_DIR", BASE_URL_ENV)}
    env.update({"PYTHONPATH": str(repo / "src"), BASE_URL_ENV: base_url, "CI": "1", "MPLBACKEND": "Agg"})
    cmd = [sys.executable, "-m", "snakemake", "-c", "2", *args]
    return subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout, env=env)


def output(proc) -> str:
    return proc.stdout + proc.stderr


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.exists() else []


def test_fresh_clone_fetches_verifies_and_uses_the_traces_then_reuses_them(tmp_path, data_dir):
    repo = clone(tmp_path)
    out = repo / SMOKE_RUN
    cfg = validate_config(copy.deepcopy(SMOKE), REPO / "workflow" / "schemas" / "config.schema.yaml")
    run = next(r for r in experiment_runs(cfg, "table2") if r.row == "fcfs")  # one simulation on a fetched trace
    targets = ["results/tables/traces.csv", f"results/runs/{run.path}/summary.json"]
    with TraceServer(data_dir) as srv:
        first = snakemake(repo, *targets, "--configfile", "config/smoke.yaml", base_url=srv.url)
        assert first.returncode == 0, output(first)[-5000:]
        fetched = srv.requests
        # a second run (and the paper-scale DAG of `snakemake -c 2`) fetches nothing
        second = snakemake(repo, *targets, "--configfile", "config/smoke.yaml", base_url=srv.url)
        paper = snakemake(repo, "-n", base_url=srv.url)
        again = srv.requests
    assert fetched == {KNOWN_TRACES[t].relpath: 1 for t in PUBLIC}, fetched
    assert again == fetched
    assert second.returncode == 0 and "Nothing to be done" in output(second), output(second)[-3000:]
    assert paper.returncode == 0, output(paper)[-5000:]
    assert "rule download_trace" not in output(paper) and "rule theory_thm1" in output(paper)
    # the derived trace is skipped with one line saying which and why
    for proc in (first, paper):
        lines = [ln for ln in output(proc).splitlines() if "skipping trace" in ln]
        assert len(lines) == 1 and all(t in lines[0] for t in DERIVED), lines
        assert "without a public download source" in lines[0], lines
    downloads = repo / "resources" / "traces"
    assert files_under(downloads) == sorted(KNOWN_TRACES[t].relpath for t in PUBLIC)  # no temp files
    for t in PUBLIC:
        rel = KNOWN_TRACES[t].relpath
        assert (downloads / rel).read_bytes() == (data_dir / rel).read_bytes(), t
        stats = json.loads((out / "results" / "traces" / f"{t}.stats.json").read_text())
        assert stats["sha256"] == KNOWN_TRACES[t].sha256 and Path(repo, stats["source"]) == downloads / rel, stats
        assert "verified" in (out / "logs" / "download" / f"{rel}.log").read_text()
    for t in DERIVED:
        assert not (out / "results" / "traces" / f"{t}.stats.json").exists()
    table = (out / "results" / "tables" / "traces.csv").read_text().splitlines()
    assert len(table) == 1 + len(PUBLIC)
    summary = json.loads((out / "results" / "runs" / run.path / "summary.json").read_text())
    assert summary["run"] == run.path and summary["row"] == run.row and summary["steps"] > 0


def test_bad_mirror_fails_the_jobs_naming_url_and_reason_and_leaves_no_file(tmp_path, data_dir):
    repo = clone(tmp_path)
    out = repo / SMOKE_RUN
    modes = {KNOWN_TRACES["burstgpt"].relpath: "corrupt", KNOWN_TRACES["azure_code"].relpath: "drop",
             KNOWN_TRACES["arxiv"].relpath: "hang"}
    targets = [str(repo / "resources" / "traces" / rel) for rel in modes]  # download_dir is under the checkout
    with TraceServer(data_dir, modes=modes) as srv:
        proc = snakemake(repo, "-k", *targets, "--configfile", "config/smoke.yaml", "--config",
                         "download_timeout_s=0.5", "download_attempts=2", "download_backoff_s=0.1",
                         base_url=srv.url, timeout=300)
        requests = srv.requests
    assert proc.returncode != 0
    assert requests == {"paper-traces/burst_data_8000.json": 1,  # a wrong file is not retried
                        "azure-llm-2023/AzureLLMInferenceTrace_code.csv": 2,
                        "paper-traces/arxiv_data_8000.json": 2}, requests
    assert files_under(repo / "resources") == []  # nothing half-written, no temp file
    logs = {rel: (out / "logs" / "download" / f"{rel}.log").read_text() for rel in modes}
    burst = KNOWN_TRACES["burstgpt"]
    bad = hashlib.sha256(corrupted((data_dir / burst.relpath).read_bytes())).hexdigest()
    assert f"{srv.url}/{burst.relpath}" in logs[burst.relpath]
    assert burst.sha256 in logs[burst.relpath] and bad in logs[burst.relpath]
    assert "mid-file" in logs[KNOWN_TRACES["azure_code"].relpath] and "2 attempts" in logs[KNOWN_TRACES["azure_code"].relpath]
    assert "timeout" in logs[KNOWN_TRACES["arxiv"].relpath]


def test_offline_clone_stops_before_any_job_naming_every_missing_trace(tmp_path):
    repo = clone(tmp_path)
    with TraceServer(tmp_path) as srv:
        proc = snakemake(repo, "--configfile", "config/smoke.yaml", "--config", "download=false",
                         base_url=srv.url, timeout=300)
        assert srv.requests == {}
    text = output(proc)
    assert proc.returncode != 0
    assert f"{len(SMOKE['traces'])} traces the config uses are missing from data_dir" in text, text[-3000:]
    for t in SMOKE["traces"]:
        assert f"{t}: {KNOWN_TRACES[t].relpath}" in text, t
    assert "snakemake --config data_dir=/path/to/data" in text and "snakemake --config download=auto" in text
    # no job ran: nothing fetched, no log, no result
    assert not (repo / "resources").exists() and not (repo / "logs").exists()
    assert [p for p in files_under(repo / SMOKE_RUN) if not p.startswith(".snakemake")] == []
    assert files_under(repo / "results") == ["README.md"]
