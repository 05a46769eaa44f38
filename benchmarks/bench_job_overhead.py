"""The fixed cost of each pipeline job type: what a job pays besides its own work (issue 42).

Every Snakemake job is a new Python process. Before it reads a table or runs a
simulation it starts the interpreter and imports its script's modules; a job
that simulates also initializes numba (its CPU target, about a second) and
loads its kernels from numba's cache. This measures, for each workflow script
(a job type), in fresh processes (CPU seconds of the child, best of
``--repeat``):

- ``start``: the interpreter alone (``python -c pass``);
- ``imports``: the script's top-level imports (a study's table or figure job
  also imports its function's module, :mod:`bfio.studies.jobs`: the online
  study's, as a typical one);
- ``first run``, for the scripts that simulate: the imports, then one tiny
  simulation (BF-IO with its defaults, 4 workers, 48 requests), which pays
  numba's initialization and the cache loads of the default kernels.

With ``--dag FILE`` (the job counts Snakemake prints: ``snakemake -n > FILE``)
it multiplies each rule's count by its script's fixed cost: what the pipeline
spends besides its jobs' work. The numba cache must be warm (``bfio compile``).

    python benchmarks/bench_job_overhead.py
    snakemake -n -c 2 > /tmp/dag.txt; python benchmarks/bench_job_overhead.py --dag /tmp/dag.txt
    PYTHONPATH=/other/checkout/src python benchmarks/bench_job_overhead.py   # another version of the package
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
RULES = REPO / "workflow" / "rules"

#: The scripts whose jobs simulate (their fixed cost includes numba's start).
SIMULATING = {"simulate.py", "study_simulate.py", "study_prepare.py"}
#: A study job's function module (bfio.studies.jobs), one typical of each kind.
STUDY_FUNCTION = {"study_table.py": "bfio.studies.online_summary", "study_extra.py": "bfio.studies.starvation_summary",
                  "study_product.py": "bfio.studies.objective_scores", "study_figure.py": "bfio.figures.online_load"}
#: How a study job reaches its function: by its module alone (bfio.studies.jobs), or, in a
#: version of the package before it, through the registry (every study module).
STUDY_JOB = """
try:
    import bfio.studies.jobs
except ImportError:
    import bfio.studies.registry
    bfio.studies.registry.studies()
else:
    importlib.import_module({module!r})
"""
#: One tiny simulation with BF-IO's defaults: numba's start and the default kernels' cache loads.
FIRST_RUN = """
from bfio.simulator import simulate
from bfio.workloads.workload import draw_workload
import numpy as np
rng = np.random.default_rng(7)
w = draw_workload(rng.integers(16, 2000, 200).astype(np.int64), rng.integers(1, 60, 200).astype(np.int64), 48, seed=1)
simulate(w, 4, 3, "bfio", show_progress=False)
"""


def package_imports(script: Path) -> list[str]:
    """The modules a workflow script imports at its top level (``bfio`` and third-party alike)."""
    out = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def child_cpu(code: str, repeat: int) -> tuple[float, float]:
    """(CPU s, wall s) of ``python -c code`` in a fresh process, the best of ``repeat``."""
    best = (float("inf"), float("inf"))
    env = {**os.environ, "MPLBACKEND": "Agg"}
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"failed: {code[:200]}\n{proc.stderr[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (cpu, wall))
    return best


def script_costs(repeat: int) -> dict[str, dict]:
    start = child_cpu("pass", repeat)
    out = {}
    for script in sorted(SCRIPTS.glob("*.py")):
        code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in package_imports(script))
        if script.name in STUDY_FUNCTION:
            code += STUDY_JOB.format(module=STUDY_FUNCTION[script.name])
        row = {"start": start[0], "imports": child_cpu(code, repeat)[0]}
        if script.name in SIMULATING:
            row["first_run"] = child_cpu(code + FIRST_RUN, repeat)[0]
        row["fixed"] = row.get("first_run", row["imports"])
        out[script.name] = row
        print(f"{script.name:32s} start {row['start']:5.2f}  imports {row['imports']:5.2f}"
              + (f"  first run {row['first_run']:5.2f}" if "first_run" in row else ""), flush=True)
    return out


def rule_scripts() -> dict[str, str]:
    """Rule name -> its script file name, from the workflow's rule files (``use rule A as B``: A's script)."""
    scripts, uses, rule = {}, {}, None
    for smk in sorted(RULES.glob("*.smk")):
        for line in smk.read_text().splitlines():
            if m := re.match(r"\s*rule (\w+):", line):
                rule = m.group(1)
            elif m := re.match(r"\s*use rule (\w+) as (\w+)", line):
                uses[m.group(2)] = m.group(1)
                rule = m.group(2)
            elif rule and (m := re.search(r'"\.\./scripts/([\w{}.]+\.py)"', line)):
                name = m.group(1)
                if "{" in name:  # a wildcard in the script's name: any one of its files
                    pattern = re.compile(re.sub(r"\\\{[^}]*\\\}", ".*", re.escape(name)) + "$")
                    name = next(p.name for p in sorted(SCRIPTS.glob("*.py")) if pattern.match(p.name))
                scripts[rule] = name
    for new, old in uses.items():
        scripts.setdefault(new, scripts.get(old))
    return scripts


def dag_counts(path: Path) -> dict[str, int]:
    """The first ``Job stats`` table of ``snakemake -n``'s output: rule -> count."""
    counts, inside = {}, False
    for line in path.read_text().splitlines():
        if line.startswith("job ") and "count" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"(\w+)\s+(\d+)$", line.strip())
            if m and m.group(1) != "total":
                counts[m.group(1)] = int(m.group(2))
            elif counts:
                break
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dag", type=Path, help="snakemake -n output: multiply each rule's count by its fixed cost")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    costs = script_costs(args.repeat)
    report = {"python": sys.version.split()[0], "scripts": costs}
    if args.dag:
        scripts, total, jobs = rule_scripts(), 0.0, 0
        print(f"\n{'rule':32s} {'jobs':>5s} {'fixed s':>8s} {'total s':>8s}")
        for rule, n in sorted(dag_counts(args.dag).items()):
            script = scripts.get(rule)
            if script is None:  # a rule without a script (the target rule all)
                continue
            fixed = costs[script]["fixed"]
            total, jobs = total + n * fixed, jobs + n
            print(f"{rule:32s} {n:5d} {fixed:8.2f} {n * fixed:8.1f}")
        print(f"{'every job':32s} {jobs:5d} {'':8s} {total:8.1f}")
        report["dag"] = {"jobs": jobs, "fixed_cpu_s": total}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
