"""The SLURM profile: its per-rule settings (always checked) and, marked
``cluster``, the smoke config run through ``snakemake --profile profiles/slurm``
on a real SLURM cluster with tables byte for byte equal to a local run's.

The cluster test is skipped unless ``sinfo`` answers (a single-node cluster on
this machine: ``workflow/cluster/start.sh``). Run it alone with
``python -m pytest -m cluster tests/test_cluster.py``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "profiles"


def _profile(name):
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def _rules():
    names = set()
    for smk in [REPO / "Snakefile", *(REPO / "workflow" / "rules").glob("*.smk")]:
        text = smk.read_text()
        # indented too: rules defined under an ``if`` (e.g. simulate_extra_seeds)
        names |= set(re.findall(r"^\s*rule (\w+):", text, flags=re.M))
        names |= set(re.findall(r"^\s*use rule \w+ as (\w+)", text, flags=re.M))
    return names - {"all"}


def test_profiles_declare_threads_and_resources_for_every_rule():
    """`snakemake --profile profiles/slurm` also loads profiles/default (the
    workflow profile), whose keys win: the per-rule settings must be the same
    in both, and cover every rule (for -c N locally and for SLURM)."""
    default, slurm = _profile("default"), _profile("slurm")
    for key in ("set-threads", "set-resources"):
        assert default[key] == slurm[key], f"{key} differs between profiles/default and profiles/slurm"
    rules = _rules()
    assert rules <= set(slurm["set-threads"]), sorted(rules - set(slurm["set-threads"]))
    assert rules <= set(slurm["set-resources"]), sorted(rules - set(slurm["set-resources"]))
    assert not set(slurm["set-resources"]) - rules, "set-resources names a rule that does not exist"
    for rule, res in slurm["set-resources"].items():
        assert res["mem_mb"] > 0 and res["runtime"] > 0, rule
    # only keys valid everywhere in the workflow profile: no executor settings
    assert not {"executor", "default-resources", "groups", "group-components"} & set(default)


def test_slurm_groups_are_closed_downstream():
    """A job outside group `post` never consumes a `post` job's output (else a
    merged group job could wait on a job that waits on it)."""
    slurm = _profile("slurm")
    groups = slurm["groups"]
    assert set(groups) <= _rules()
    assert set(slurm["group-components"]) == set(groups.values())
    # the rules feeding the un-grouped study jobs are never in "post"
    for rule in ("study_product", "study_prepare", "study_simulate", "theory_thm1", "theory_slot", "theory_energy"):
        assert groups.get(rule) != "post", rule


def _sinfo_answers() -> bool:
    if not shutil.which("sinfo"):
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except (subprocess.TimeoutExpired, OSError):
        return False
    return out.returncode == 0 and any(s.strip("*~#") in ("idle", "mixed", "allocated") for s in out.stdout.split())


def _copy_repo(dest: Path) -> Path:
    """The checkout's files as they are (tracked and untracked, not ignored:
    no results/, figures/, logs/ outputs)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        if (REPO / rel).is_file():  # (ls-files also lists deleted, uncommitted files)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    return dest


def _run(copy: Path, args, data_dir: Path, timeout: int):
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "BFIO_DATA_DIR": str(data_dir), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "snakemake", *args, "--configfile", "config/smoke.yaml",
           "--config", f"data_dir={data_dir}"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return time.monotonic() - start, proc.stderr


# Measured timings (seconds of wall clock spent routing, solving, simulating)
# differ between any two runs, local or not: the per-run tables runs_*.csv
# carry them as columns. Everything else must be equal byte for byte.
TIMING_COLUMN = re.compile(r"(^|_)wall_s$|^route_s_|^solver_s_")


def compare_tables(ours: Path, theirs: Path) -> list[str]:
    """Names of the results/tables/*.csv that differ: byte for byte, except
    runs_*.csv, whose text must be equal once the timing columns are dropped."""
    import pandas as pd

    names = sorted(p.name for p in ours.glob("*.csv"))
    if not names or names != sorted(p.name for p in theirs.glob("*.csv")):
        return ["<different sets of tables>"]
    differ = []
    for name in names:
        a, b = (ours / name).read_bytes(), (theirs / name).read_bytes()
        if a == b:
            continue
        if name.startswith("runs_"):
            fa, fb = (pd.read_csv(d / name, dtype=str, keep_default_na=False) for d in (ours, theirs))
            keep = [c for c in fa.columns if not TIMING_COLUMN.search(c)]
            if list(fa.columns) == list(fb.columns) and fa[keep].equals(fb[keep]):
                continue
        differ.append(name)
    return differ


@pytest.mark.cluster
@pytest.mark.skipif(not _sinfo_answers(), reason="no SLURM cluster answers sinfo (workflow/cluster/start.sh)")
def test_smoke_under_slurm_equals_local(tmp_path_factory, data_dir):
    base = Path(os.environ["BFIO_CLUSTER_WORKDIR"]) if os.environ.get("BFIO_CLUSTER_WORKDIR") \
        else tmp_path_factory.mktemp("cluster")
    local, slurm = _copy_repo(base / "local"), _copy_repo(base / "slurm")
    t_slurm, log = _run(slurm, ["--profile", "profiles/slurm"], data_dir, timeout=3600)
    assert re.search(r"SLURM run ID|Job \d+ has been submitted with SLURM jobid", log), log[-3000:]
    t_local, _ = _run(local, ["-c", "2"], data_dir, timeout=3600)
    smoke_run = Path("runs") / yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())["run_name"]
    differ = compare_tables(slurm / smoke_run / "results" / "tables", local / smoke_run / "results" / "tables")
    assert not differ, f"tables differ between the SLURM and the local run: {differ}"
    print(f"smoke wall time: SLURM {t_slurm:.0f} s, local {t_local:.0f} s")
