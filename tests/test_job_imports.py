"""The pipeline's jobs that only read tables and draw start without numba, the
solvers or the simulator (issue 42): each such job is a new process, and those
imports cost it about half a second of its start.

Two checks, each in a fresh interpreter that imports modules one by one and
names the first that brings a heavy module in:

- every workflow script's package imports, except the scripts of the jobs that
  simulate or compute with the kernels (:data:`COMPUTING_SCRIPTS`);
- every function a study's table, extras, product or figure job imports by path
  (:mod:`bfio.studies.jobs`), for every registered study.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bfio.ground.errors import ConfigError
from bfio.studies.jobs import extras_job, figure_job, import_path, product_job, table_job
from bfio.studies.registry import generic_studies

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"

#: What a job that only reads and draws must not import: numba, the solvers, the
#: simulator, the kernels' module and the downloader.
HEAVY = ("numba", "bfio.ground.jit", "bfio.solvers", "bfio.sim", "bfio.simulator", "bfio.runs.runner", "bfio.engine.kernels",
         "bfio.traces.download")

#: The scripts of the jobs that simulate, download or compute with the kernels
#: (Monte Carlo checks, Theorem 4's decomposition): they may import them. The
#: compile job imports numba only when the cache lacks its kernels.
COMPUTING_SCRIPTS = {"download_trace.py", "energy_decomposition.py", "simulate.py",
                     "study_prepare.py", "study_simulate.py", "theory_energy.py", "theory_slot.py",
                     "theory_thm1.py"}

# Run in a fresh interpreter: import each module (or "module:function") in turn
# and report the first that brought a heavy module in.
PROBE = textwrap.dedent("""
    import importlib, json, sys
    heavy = {heavy!r}
    def loaded():
        return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
    for target in {targets!r}:
        module = target.partition(":")[0]
        importlib.import_module(module)
        if loaded():
            print(json.dumps({{"target": target, "heavy": loaded()[:5]}}))
            break
    else:
        print(json.dumps(None))
""")


def first_heavy(targets: list[str], heavy: tuple[str, ...] = HEAVY) -> dict | None:
    """The first of ``targets`` (modules or ``module:function`` paths) whose import,
    in a fresh interpreter and in this order, brings in one of ``heavy``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=heavy, targets=targets)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def package_imports(script: Path) -> list[str]:
    """The ``bfio`` modules a script imports at its top level."""
    out = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return [m for m in out if m == "bfio" or m.startswith("bfio.")]


def test_the_probe_finds_a_heavy_import():
    """The check can fail: a simulation script's imports bring the simulator in."""
    found = first_heavy(["bfio.runs.tables", *package_imports(SCRIPTS / "study_simulate.py")])
    assert found is not None and found["target"] != "bfio.runs.tables"
    assert "numba" in found["heavy"] or "bfio.ground.jit" in found["heavy"]


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py") if p.name not in COMPUTING_SCRIPTS))
def test_a_table_or_figure_script_imports_no_solver_simulator_or_numba(script):
    assert (SCRIPTS / script).is_file()
    found = first_heavy(package_imports(SCRIPTS / script))
    assert found is None, (f"workflow/scripts/{script}: importing {found['target']} brings in {found['heavy']}; "
                           "a job that only reads and draws should start without them (split the module, "
                           "or list the script in COMPUTING_SCRIPTS if its job computes with the kernels)")


def study_job_functions() -> list[str]:
    """Every function a study's table, extras, product or figure job imports by path."""
    paths = []
    for study in generic_studies().values():
        paths += [table_job(t.name)["tabulate"] for t in study.tables]
        paths += [extras_job(study.table)["extras"]] if study.extras is not None else []
        paths += [product_job(study.directory, p.file)["make"] for p in study.products if p.make is not None]
        paths += [figure_job(f.name)["plot"] for f in study.figures]
    return paths


def test_every_study_table_and_figure_function_imports_no_solver_simulator_or_numba():
    paths = study_job_functions()
    assert any(p.startswith("bfio.studies.online_summary:") for p in paths)  # the registry was read
    assert any(p.startswith("bfio.figures.") for p in paths)
    found = first_heavy(paths)
    assert found is None, (f"{found['target']}: its module brings in {found['heavy']}; a study's table and "
                           "figure functions live in modules without the simulator (its summary and figure "
                           "modules), since their jobs import them alone (bfio.studies.jobs)")


def test_a_job_function_is_named_by_a_path_that_imports_back():
    from bfio.studies.online_summary import online_table

    assert import_path(online_table, "x") == "bfio.studies.online_summary:online_table"
    assert import_path("pkg.mod:fn", "x") == "pkg.mod:fn"
    with pytest.raises(ConfigError, match="study 's', table 't'.*not a module-level function"):
        import_path(lambda runs, section, settings: None, "study 's', table 't'")


def test_the_experiments_path_helpers_do_not_download():
    """bfio.runs.experiments (the workflow's path helpers) no longer pulls bfio.traces.download."""
    assert first_heavy(["bfio.runs.experiments"], heavy=("bfio.traces.download",)) is None
    assert first_heavy(["bfio.traces.download"], heavy=("bfio.traces.download",)) is not None


LABELS = textwrap.dedent("""
    import json, sys
    from bfio.policies import is_registered, policy_label
    from bfio.policies.names import ROUTER_NAMES
    from bfio.studies.online_summary import policy_label as row_label
    labels = [policy_label(n) for n in ROUTER_NAMES] + [
        row_label("sglang_total_tokens_r10", "instant", 10, "sglang_total_tokens"),
        row_label("bfio_h20", "central"), row_label("no_such_router", "instant")]
    known = [is_registered(n) for n in ("fcfs", "vllm_dp", "no_such_router")]
    heavy = {heavy!r}
    print(json.dumps({{"labels": labels, "known": known,
                      "heavy": sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))}}))
""")


def test_a_table_labels_its_rows_without_the_policy_modules():
    """Built-in rows, variant rows and unknown rows are labelled (and told registered or not)
    without importing the policy modules, which bring numba and the solvers (issue 42: a third
    of a table job's start); with no plugin configured."""
    env = {k: v for k, v in os.environ.items() if k != "BFIO_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", LABELS.format(heavy=HEAVY)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["heavy"] == [], out["heavy"]
    assert out["known"] == [True, True, False]
    assert out["labels"][-3:] == ["SGLang total tokens, reports every 10 steps (instant)", "BF-IO (H=20) (central)",
                                  "no_such_router (instant)"]
