"""Bring your own trace (README "Bring your own trace"): the README's example
(CLI on CSV / JSONL / Parquet, the config entry and the pipeline run), config
validation of ``extra_traces`` and the errors naming key, file, row and field."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bfio.ground.errors import ChecksumError, ConfigError, TraceError
from bfio.pipeline.config import named_run, trace_specs, validate_config
from bfio.runs.experiments import prepare_trace

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CLI = [sys.executable, "-m", "bfio.cli"]


def readme_section() -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(r"^## Bring your own trace\n(.*?)(?=^## )", text, flags=re.S | re.M)
    assert m, "README has no 'Bring your own trace' section"
    return m.group(1)


def readme_csv() -> str:
    """The CSV the README's example writes (its heredoc)."""
    m = re.search(r"cat > my_trace\.csv <<'EOF'\n(.*?)\nEOF\n", readme_section(), flags=re.S)
    assert m, "README example does not create my_trace.csv with a heredoc"
    return m.group(1) + "\n"


def readme_config() -> dict:
    m = re.search(r"```yaml\n(.*?)```", readme_section(), flags=re.S)
    assert m, "README example has no yaml config block"
    return yaml.safe_load(m.group(1))


def readme_cli_calls() -> list[list[str]]:
    """The ``bfio simulate`` calls of the README example, as argument lists."""
    block = re.search(r"```bash\n(.*?)```", readme_section(), flags=re.S).group(1)
    joined = block.replace("\\\n", " ")
    return [line.split()[1:] for line in joined.splitlines() if line.strip().startswith("bfio simulate")]


@pytest.fixture()
def my_trace(tmp_path):
    path = tmp_path / "my_trace.csv"
    path.write_text(readme_csv())
    return path


def run_cli(args, cwd):
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    return proc


# --------------------------------------------------------------------------- CLI


def test_readme_cli_calls_run(my_trace):
    calls = readme_cli_calls()
    assert len(calls) >= 2 and any("--arrival-col" in c for c in calls)
    for args in calls:
        proc = run_cli(args, my_trace.parent)
        assert proc.returncode == 0, proc.stderr
    out = run_cli(calls[0], my_trace.parent).stdout
    result = json.loads(out)
    assert result["requests"] == 2000 and np.isfinite(result["avg_imbalance"])


def _write(frame: pd.DataFrame, path: Path):
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_cli_reads_every_format_with_named_columns(tmp_path, my_trace, ext):
    frame = pd.read_csv(my_trace)
    path = tmp_path / f"t.{ext}"
    _write(frame, path)
    proc = run_cli(["simulate", "--trace", str(path), "--prefill-col", "prompt_tokens", "--decode-col",
                    "output_tokens", "--arrival-col", "arrival_s", "--requests", "300", "--workers", "4",
                    "--policy", "jsq_tokens", "--json", "-"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["requests"] == 300 and result["workers"] == 4
    assert np.isfinite(result["throughput"]) and result["throughput"] > 0


def test_cli_bad_row_names_file_row_and_field(tmp_path, my_trace):
    frame = pd.read_csv(my_trace)
    frame.loc[3, "output_tokens"] = -7
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    proc = run_cli(["simulate", "--trace", str(bad), "--prefill-col", "prompt_tokens", "--decode-col",
                    "output_tokens", "--requests", "10", "--workers", "2"], tmp_path)
    assert proc.returncode != 0
    err = proc.stderr + proc.stdout
    assert "bad.csv" in err and "row 3" in err and "output_tokens" in err


# --------------------------------------------------------------------------- config


def test_readme_config_validates_and_defines_the_trace(my_trace):
    cfg = validate_config(readme_config(), SCHEMA)
    spec = trace_specs(cfg)["mytrace"]
    assert (spec.prefill_col, spec.decode_col, spec.arrival_col) == ("prompt_tokens", "output_tokens", "arrival_s")
    # the README's pinned digest is the digest of the README's CSV
    assert spec.sha256 == hashlib.sha256(my_trace.read_bytes()).hexdigest()


def _base():
    return {"traces": ["mytrace"], "figures": {"distributions": []},
            "extra_traces": {"mytrace": {"path": "x.csv", "prefill_col": "p", "decode_col": "d"}}}


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c["extra_traces"]["mytrace"].pop("decode_col"), "extra_traces.mytrace.decode_col"),
    (lambda c: c["extra_traces"]["mytrace"].update(sha256="abc"), "extra_traces.mytrace.sha256"),
    (lambda c: c["extra_traces"]["mytrace"].update(colour="red"), "extra_traces.mytrace.colour"),
    (lambda c: c["extra_traces"].update(longbench={"path": "x", "prefill_col": "p", "decode_col": "d"}),
     "extra_traces.longbench"),
    (lambda c: c.update(traces=["mytrace", "othertrace"]), "traces.1"),
    (lambda c: c.update(generality={"traces": ["nosuch"]}), "generality.traces.0"),
    (lambda c: c.update(generality={"traces": ["mytrace"], "targets": ["bfio_h7"]}), "generality.targets"),
    (lambda c: c.update(experiments={"e": {"trace": "nosuch", "requests": 5, "workers": [2],
                                           "baselines": ["fcfs"]}}), "experiments.e.trace"),
])
def test_bad_extra_trace_config_names_the_key(mutate, key):
    cfg = _base()
    mutate(cfg)
    with pytest.raises(ConfigError) as e:
        validate_config(cfg, SCHEMA)
    assert f"'{key}'" in str(e.value)


def test_extra_trace_name_must_be_a_lowercase_identifier():
    cfg = _base()
    cfg["extra_traces"]["My-Trace"] = cfg["extra_traces"].pop("mytrace")
    with pytest.raises(ConfigError, match="extra_traces"):
        validate_config(cfg, SCHEMA)


def test_prepare_extra_trace_checksum_and_rows(tmp_path, my_trace):
    cfg = validate_config(readme_config(), SCHEMA)
    spec = trace_specs(cfg)["mytrace"]
    stats = prepare_trace("mytrace", my_trace, tmp_path / "t.parquet", tmp_path / "t.json", spec=spec)
    frame = pd.read_parquet(tmp_path / "t.parquet")
    assert stats["rows"] == len(frame) == len(pd.read_csv(my_trace))
    assert list(frame.columns) == ["prefill_tokens", "decode_tokens", "arrival_s"]
    # a changed file no longer matches the pinned digest
    changed = tmp_path / "changed.csv"
    changed.write_text(my_trace.read_text().replace("812,64", "812,65"))
    with pytest.raises(ChecksumError) as e:
        prepare_trace("mytrace", changed, tmp_path / "c.parquet", tmp_path / "c.json", spec=spec)
    assert "changed.csv" in str(e.value) and "extra_traces.mytrace.sha256" in str(e.value)
    # without a pinned digest the file is accepted, and a bad row names file, row and field
    cfg2 = copy.deepcopy(cfg)
    cfg2["extra_traces"]["mytrace"]["sha256"] = None
    spec2 = trace_specs(cfg2)["mytrace"]
    bad = tmp_path / "bad.csv"
    bad.write_text(my_trace.read_text().replace("430,128", "430,1.5"))
    with pytest.raises(TraceError) as e:
        prepare_trace("mytrace", bad, tmp_path / "b.parquet", tmp_path / "b.json", spec=spec2)
    assert "bad.csv" in str(e.value) and "row 3" in str(e.value) and "output_tokens" in str(e.value)


def test_named_run_replaces_the_default_config_and_makes_paths_absolute(tmp_path):
    default = {"traces": ["longbench"], "experiments": {"table1": {"trace": "longbench"}}, "seeds": [42]}
    user = readme_config()
    cfg = copy.deepcopy(default)
    workdir = named_run(cfg, user, cwd=tmp_path)
    assert workdir == str(tmp_path / "runs" / user["run_name"])
    assert "table1" not in cfg["experiments"] and cfg["traces"] == ["mytrace"]
    assert cfg["extra_traces"]["mytrace"]["path"] == str(tmp_path / "my_trace.csv")
    assert Path(cfg["data_dir"]).is_absolute()
    assert user["extra_traces"]["mytrace"]["path"] == "my_trace.csv"   # the user's dict is not modified
    # no run_name: the --configfile is merged into the default config
    cfg = copy.deepcopy(default)
    assert named_run(cfg, {"seeds": [1]}, cwd=tmp_path) is None and cfg == default


@pytest.mark.parametrize("name", ["My Trace", "1st", "", 7, "a/b"])
def test_named_run_bad_name_names_the_key(tmp_path, name):
    with pytest.raises(ConfigError, match="'run_name'"):
        named_run({}, {"run_name": name}, cwd=tmp_path)


def test_run_name_only_in_the_default_config_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="'run_name'.*--configfile"):
        named_run({"run_name": "x"}, {}, cwd=tmp_path)


# --------------------------------------------------------------------------- pipeline


def snakemake(workdir, *args, check=True):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           "--workflow-profile", str(REPO / "profiles" / "default"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "1"})
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def readme_targets() -> list[str]:
    block = [b for b in re.findall(r"```bash\n(.*?)```", readme_section(), flags=re.S) if "snakemake" in b][0]
    words = block.replace("\\\n", " ").split()
    return [w for w in words if w.startswith(("results/", "figures/"))]


def test_readme_pipeline_example_runs(tmp_path, my_trace):
    """The README's config and targets, in a fresh working directory holding my_trace.csv."""
    cfg_path = tmp_path / "my_trace.yaml"
    cfg_path.write_text(yaml.safe_dump(readme_config()))
    targets = readme_targets()
    assert "results/tables/generality.md" in targets
    snakemake(tmp_path, "-c", "2", *targets, "--configfile", str(cfg_path))
    # an explicit --directory (-d) holds a named run's outputs (without it: runs/<run_name>/)
    out = tmp_path
    assert not (tmp_path / "runs").exists()
    summary = pd.read_csv(out / "results" / "tables" / "mytrace_demo_summary.csv")
    assert set(summary["row"]) == {"fcfs", "jsq_tokens", "bfio_h0", "bfio_h20"}
    assert np.isfinite(summary["avg_imbalance_mean"]).all()
    gen = pd.read_csv(out / "results" / "tables" / "generality.csv")
    assert set(gen["trace"]) == {"mytrace"}
    # arrival_col given: backlog and replay cases
    assert "backlog" in set(gen["case"]) and any(c.startswith("replay") for c in gen["case"])
    assert np.isfinite(gen["imb_ratio_bfio_h40"]).all()
    stats = json.loads((out / "results" / "traces" / "mytrace.stats.json").read_text())
    assert stats["sha256"] == readme_config()["extra_traces"]["mytrace"]["sha256"]
    for t in targets:
        assert (out / t).stat().st_size > 0, t


def test_pipeline_missing_extra_trace_file_names_the_key(tmp_path):
    cfg = readme_config()
    cfg["extra_traces"]["mytrace"]["path"] = "nowhere/none.csv"
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "results/traces/mytrace.stats.json", "--configfile", str(cfg_path),
                     check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "extra_traces.mytrace.path" in out and "none.csv" in out


def test_pipeline_checksum_mismatch_stops_naming_the_file(tmp_path, my_trace):
    cfg = readme_config()
    cfg["extra_traces"]["mytrace"]["sha256"] = "0" * 64
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-c", "1", "results/traces/mytrace.stats.json", "--configfile", str(cfg_path),
                     check=False)
    assert proc.returncode != 0
    log = (tmp_path / "logs" / "traces" / "mytrace.log").read_text()
    assert "ChecksumError" in log and "my_trace.csv" in log and "0" * 64 in log


# --------------------------------------------------------------------------- from the repository root


def _clone(dest: Path) -> Path:
    """The checkout's files (tracked and new, not ignored: no results) copied to ``dest``,
    i.e. what a user has after ``git clone`` plus the working tree's edits."""
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                               capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the checkout is not a git work tree")
    import shutil
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


def _snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under the default run's output directories."""
    out = {}
    for d in ("results", "figures", "logs"):
        for p in sorted((root / d).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def readme_bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", readme_section(), flags=re.S)


def readme_config_file_name() -> str:
    """The file name the README gives its yaml config ('A standalone config `my_trace.yaml`:')."""
    m = re.search(r"`([\w.-]+\.ya?ml)`:\s*\n+```yaml\n", readme_section())
    assert m, "README does not name the file of its yaml config"
    return m.group(1)


def test_readme_pipeline_commands_verbatim_from_repository_root(tmp_path):
    """The README's Bring-your-own-trace commands, exactly as written, run from the
    root of a clone that already holds the default run's outputs: they work
    (dry run, then the cheapest real target) and leave the default outputs untouched."""
    root = _clone(tmp_path / "bfio")
    # the default run's outputs (sentinels: any write, even a new file, is seen)
    for rel in ("results/tables/generality.md", "results/tables/generality.csv", "results/tables/table1.md",
                "results/traces/longbench.stats.json", "figures/distributions_longbench.png",
                "logs/tables/generality.log"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"default run output {rel}\n")
    before = _snapshot(root)
    env = {**os.environ, "CI": "1", "PYTHONPATH": str(root / "src")}

    def sh(script, check=True):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=root, env=env,
                              capture_output=True, text=True, timeout=900)
        if check:
            assert proc.returncode == 0, f"{script}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        return proc

    blocks = readme_bash_blocks()
    creating = [b for b in blocks if "cat > my_trace.csv" in b]
    pipeline = [b for b in blocks if re.search(r"^snakemake ", b, flags=re.M)]
    assert len(creating) == 1 and len(pipeline) == 1, "README's example: one block creating the CSV, one snakemake call"
    sh(creating[0])                       # creates my_trace.csv (and runs the bfio simulate examples)
    m = re.search(r"```yaml\n(.*?)```", readme_section(), flags=re.S)
    (root / readme_config_file_name()).write_text(m.group(1))

    command = pipeline[0].strip()
    # 1. dry run of the command as written
    dry = sh(re.sub(r"^snakemake ", "snakemake -n ", command))
    assert "prepare_extra_trace" in dry.stdout + dry.stderr
    # 2. the cheapest of its targets, for real, with the command's own options
    import shlex
    words = shlex.split(command.replace("\\\n", " "))
    targets = [w for w in words if w.startswith(("results/", "figures/"))]
    cheapest = [t for t in targets if t.startswith("figures/distributions_")]
    assert cheapest, targets
    sh(shlex.join([w for w in words if w not in targets][:3] + cheapest + [w for w in words if w not in targets][3:]))

    run_dir = root / "runs" / readme_config()["run_name"]
    assert (run_dir / cheapest[0]).stat().st_size > 0
    assert (run_dir / "results" / "traces" / "mytrace.stats.json").exists()
    after = _snapshot(root)
    assert after == before, "the README example wrote into the default run's outputs: " + ", ".join(
        sorted(set(after.items()) ^ set(before.items()))[:10].__str__())
