"""Extending the project (issue 28): a policy with one option is one file, run
from the command line and from the config; a study is one module plus its
config section, planned by the pipeline's generic rules. Both are plugins
(:mod:`bfio.ground.plugins`, ``$BFIO_PLUGINS``) written into a temporary directory,
so the project's own tree is never touched; every run is a subprocess, so the
registries of this test session stay as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"

# -- file 1 of a new policy: everything it is, its option declared once ----------------------
POLICY_MODULE = textwrap.dedent('''
    """Throwaway policy: the oldest waiting requests to the workers with the most
    free slots, at most ``per_call`` per worker and routing call."""
    import numpy as np

    from bfio.policies import register
    from bfio.policies.base import Policy
    from bfio.ground.options import Option


    @register
    class MostFree(Policy):
        name = "most_free"
        label = "Most free"
        options = (Option("per_call", int, 1, "requests one worker takes per routing call", minimum=1),)

        def route(self, state):
            free = np.asarray(state.free, dtype=np.int64).copy()
            out = np.full(state.pool.shape[0], -1, dtype=np.int64)
            for i in range(state.admissible):
                g = int(np.argmax(free))
                if free[g] == 0:
                    break
                out[i], free[g] = g, free[g] - 1
            taken = np.bincount(out[out >= 0], minlength=state.workers)
            over = np.flatnonzero(taken > self.option_values["per_call"])
            for g in over:  # keep the first per_call of each worker
                out[np.flatnonzero(out == g)[self.option_values["per_call"]:]] = -1
            return out
''')

# -- file 1 of a new study: its runs, its table, its figure, its config schema ---------------
STUDY_MODULE = textwrap.dedent('''
    """Throwaway study: FCFS against JSQ at a few worker counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from bfio.runs.run import RunSpec
    from bfio.runs.runner import run_batch
    from bfio.studies.registry import Study, register_study


    def simulate(name, setting, section, seeds, slots, frame, defaults, log):
        runs = [RunSpec.make(setting["trace"], setting["requests"], g, slots, row, seed, defaults=defaults)
                for g in section["workers"] for row in section["rows"] for seed in seeds]
        out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
        out.insert(0, "setting", name)
        return out


    def tabulate(runs, section, settings):
        table = runs.groupby(["setting", "workers", "row"], as_index=False)["avg_imbalance"].mean()
        return table, "# Throwaway\\n\\n" + table.to_markdown(index=False) + "\\n"


    def plot(table):
        fig, ax = plt.subplots()
        for row, sub in table.groupby("row"):
            ax.plot(sub["workers"], sub["avg_imbalance"], marker="o", label=row)
        ax.legend()
        return fig


    register_study(Study(
        name="throwaway", description="FCFS against JSQ by G", figure="throwaway", caption="Throwaway study.",
        simulate=simulate, tabulate=tabulate, plot=plot,
        schema={"type": "object", "additionalProperties": False, "default": {},
                "properties": {"description": {"type": "string"},
                               "workers": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                               "rows": {"type": "array", "items": {"type": "string"}},
                               "settings": {"type": "array", "default": [],
                                            "items": {"$ref": "#/definitions/study_setting"}}}}))
''')


def plugin_env(tmp_path: Path, module: str) -> dict:
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "CI": "1", "BFIO_PLUGINS": module, "PYTHONPATH": path}


def snakemake(tmp_path, env, *args):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "work"),
           "--workflow-profile", str(REPO / "profiles" / "default"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def smoke_config(tmp_path: Path, data_dir: Path, **extra) -> Path:
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["experiments"].update(extra.pop("experiments", {}))
    cfg.update(run_name="plugin", data_dir=str(data_dir), **extra)
    path = tmp_path / "plugin.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def policy_plugin(tmp_path):
    (tmp_path / "most_free.py").write_text(POLICY_MODULE)
    return plugin_env(tmp_path, "most_free")


def test_a_policy_in_one_file_runs_from_the_command_line(tmp_path, policy_plugin):
    small_trace = tmp_path / "t.csv"
    small_trace.write_text("input_length,output_length\n" + "".join(f"{10 + i},{1 + i % 7}\n" for i in range(50)))
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "bfio.cli", "simulate", "--trace", str(small_trace), "--requests", "40",
           "--workers", "3", "--slots", "2", "--policy", "most_free", "--per-call", "2", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=policy_plugin)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["policy_options"] == {"name": "most_free", "per_call": 2}  # describe(), from the declaration
    assert result["steps"] > 0
    helptext = subprocess.run(cmd[:4] + ["--help"], capture_output=True, text=True, env=policy_plugin).stdout
    assert "options of --policy most_free" in " ".join(helptext.split())
    bad = subprocess.run(cmd[:-4] + ["--per-call", "0"], capture_output=True, text=True, env=policy_plugin)
    assert bad.returncode == 2 and "--per-call" in bad.stderr and ">= 1" in bad.stderr
    other = subprocess.run(cmd[:-6] + ["--policy", "fcfs", "--per-call", "2"], capture_output=True, text=True,
                           env=policy_plugin)
    assert other.returncode != 0 and "--per-call: only valid with --policy most_free" in other.stderr


def test_a_policy_in_one_file_runs_from_the_config(tmp_path, policy_plugin, data_dir):
    exp = {"trace": "burstgpt", "requests": 60, "workers": [3], "slots": 4, "baselines": ["most_free"]}
    cfg = smoke_config(tmp_path, data_dir, experiments={"mine": exp}, policy_options={"most_free": {"per_call": 3}})
    target = "results/runs/burstgpt/n60-g3-b4/most_free/seed42/summary.json"
    proc = snakemake(tmp_path, policy_plugin, "-c", "1", target, "--configfile", str(cfg))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((tmp_path / "work" / target).read_text())
    assert summary["policy_options"] == {"name": "most_free", "per_call": 3}
    cfg = smoke_config(tmp_path, data_dir, experiments={"mine": exp}, policy_options={"most_free": {"per_call": 0}})
    proc = snakemake(tmp_path, policy_plugin, "-n", "--configfile", str(cfg))
    assert proc.returncode != 0 and "config key 'policy_options.most_free.per_call'" in proc.stdout + proc.stderr


def test_a_study_in_one_module_and_a_config_section_is_planned(tmp_path, data_dir):
    (tmp_path / "throwaway.py").write_text(STUDY_MODULE)
    env = plugin_env(tmp_path, "throwaway")
    section = {"description": "throwaway", "workers": [2, 4], "rows": ["fcfs", "jsq_tokens"],
               "settings": [{"name": "tiny", "trace": "burstgpt", "requests": 80, "workers": 2}]}
    cfg = smoke_config(tmp_path, data_dir, throwaway=section)
    proc = snakemake(tmp_path, env, "-n", "--configfile", str(cfg))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for path in ("results/studies/throwaway/runs_tiny.csv", "results/tables/throwaway.md",
                 "figures/throwaway.png"):
        assert path in out, path
    # the section is validated by the study's own schema
    cfg = smoke_config(tmp_path, data_dir, throwaway={**section, "workerz": [2]})
    proc = snakemake(tmp_path, env, "-n", "--configfile", str(cfg))
    assert proc.returncode != 0 and "config key 'throwaway.workerz'" in proc.stdout + proc.stderr
