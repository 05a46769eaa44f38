"""The first look (``snakemake -c 2 --configfile config/smoke.yaml``) on a fresh clone, cold and warm,
with the CPU time of every job and the bound the job count sets (issue 42).

A fresh clone of this checkout's ``HEAD`` (or of ``--repo``'s) in a temporary directory, its package on
``PYTHONPATH`` and numba's cache in an empty directory of its own (``NUMBA_CACHE_DIR``: the default
cache, ``~/.cache/bfio/numba``, may hold the kernels and ready files of earlier checkouts), runs the
first look twice:

1. ``cold``: the first run, whose ``compile_kernels`` jobs compile every kernel;
2. ``warm``: ``runs/smoke/`` deleted, the same command again (numba's cache now full).

Every Python process of a run (Snakemake and each job's script) writes its own CPU seconds at exit
(a ``sitecustomize`` on ``PYTHONPATH``, nothing in the package), so the report has, per rule, the jobs,
their CPU seconds and the cheapest job's, and which jobs compiled a ``bfio`` kernel (numba's compiler ran,
not a load from its cache): after the ``compile_kernels`` jobs, none should. The **floor** of a run is the sum over rules of
``jobs x cheapest job``: what the run would cost if every job cost no more than its rule's cheapest
(a process start, its imports, numba's start in the jobs that simulate, a figure's draw and save).
Divided by the cores, it bounds the wall time from below for this DAG: a target under it needs fewer
jobs or cheaper jobs of each rule, not faster simulation.

    python benchmarks/bench_first_look.py                  # cold and warm, 2 cores
    python benchmarks/bench_first_look.py --warm-only      # one warm run (compiles first, untimed)
    python benchmarks/bench_first_look.py --json out.json
    python benchmarks/bench_first_look.py --repo /tmp/other-checkout   # another commit, e.g. a baseline
    python benchmarks/bench_first_look.py --full --json full.json      # the paper-scale pipeline, warm

With ``--full`` it times the README's main command instead (``snakemake -c 2`` on the default config,
every output under ``results/`` and ``figures/`` of the clone) once, warm: every kernel is compiled first
(``bfio compile --all``, untimed). Its report adds the **simulations' own time**: the CPU of the jobs that
simulate (rules ``simulate``, ``study_simulate``, ``study_prepare``, the Monte Carlo checks) less each
job's start (its rule's cheapest job), and so the bound a target for the whole pipeline meets: at least
that CPU over the cores, however cheap every other job becomes. An hour or more on 2 cores.

Reads the traces from ``$BFIO_DATA_DIR`` (the config key ``data_dir``); about 5 minutes on 2 cores. Run it on a quiet
machine: the wall times are what it is for.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Written into the run's PYTHONPATH: every Python process appends (script, CPU s, whether it compiled a
#: kernel, and then a job's log, which names the job) at exit.
SITECUSTOMIZE = '''
import atexit, os, resource, sys
def _bench_first_look_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    jit = sys.modules.get("bfio.ground.jit")
    note = getattr(jit, "_NOTE", None)
    compiled = int(bool(getattr(note, "printed", False)))
    job = getattr(sys.modules.get("__main__"), "snakemake", None)  # a job's script: its log names the job
    job_log = str(job.log[0]) if compiled and job is not None and len(job.log) else ""
    with open(os.environ["BENCH_FIRST_LOOK_LOG"], "a") as f:
        f.write(f"{script}\\t{r.ru_utime + r.ru_stime:.3f}\\t{compiled}\\t{job_log}\\n")
atexit.register(_bench_first_look_cpu)
'''


def job_name(script: str) -> str:
    """A job's rule-like name from its script file: Snakemake runs ``.snakemake/scripts/tmpXXXX.<name>.py``."""
    parts = script.split(".")
    return parts[-2] if script.startswith("tmp") and len(parts) >= 3 else script


#: The rules whose jobs simulate (or run the Monte Carlo checks): their CPU beyond a job's start is the
#: pipeline's own work, which no cut in job count or start removes.
SIMULATING = ("simulate", "study_simulate", "study_prepare", "theory_slot", "theory_thm1")

#: The first look's command, and the README's main command (``--full``).
SMOKE = ("--configfile", "config/smoke.yaml")
FULL: tuple[str, ...] = ()


def run_env(clone: Path, log: Path, numba_cache: Path) -> dict:
    """The environment of every process of a timed run: the clone's package, the CPU logger, numba's cache."""
    return {**os.environ, "PYTHONPATH": f"{clone / 'src'}{os.pathsep}{log.parent}",
            "BENCH_FIRST_LOOK_LOG": str(log), "MPLBACKEND": "Agg", "NUMBA_CACHE_DIR": str(numba_cache)}


def run_once(clone: Path, cores: int, log: Path, numba_cache: Path, config: tuple[str, ...] = SMOKE) -> dict:
    """One run of the pipeline (``config``: its config arguments) in ``clone`` with numba's cache in
    ``numba_cache``: wall seconds, per job name the CPU seconds of each process, and the jobs that
    compiled a kernel."""
    env = run_env(clone, log, numba_cache)
    log.write_text("")
    t0 = time.perf_counter()
    proc = subprocess.run(["snakemake", "-c", str(cores), *config, "--quiet",
                           "--config", f"data_dir={os.environ['BFIO_DATA_DIR']}", "--", "all"],
                          cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the pipeline failed in {clone}:\n{proc.stderr[-3000:]}")
    jobs: dict[str, list[float]] = defaultdict(list)
    compiled: dict[str, int] = defaultdict(int)
    compiling: list[str] = []  # the log of each job, but the compile jobs, that compiled a kernel
    for line in log.read_text().splitlines():
        script, cpu, did_compile, job_log = line.split("\t")
        jobs[job_name(script)].append(float(cpu))
        compiled[job_name(script)] += int(did_compile)
        if job_log and job_name(script) != "compile_kernels":
            compiling.append(job_log)
    return {"wall_s": wall, "jobs": dict(jobs), "compiled": dict(compiled), "compiling_jobs": compiling}


def summarize(run: dict, cores: int) -> dict:
    """Per rule: jobs, CPU seconds, the cheapest job's; the run's CPU, floor and floor / cores."""
    rows = {}
    for name, cpus in run["jobs"].items():
        rows[name] = {"jobs": len(cpus), "cpu_s": sum(cpus), "cheapest_s": min(cpus),
                      "compiled": run["compiled"].get(name, 0)}
    cpu = sum(r["cpu_s"] for r in rows.values())
    floor = sum(r["jobs"] * r["cheapest_s"] for r in rows.values())
    own = sum(r["cpu_s"] - r["jobs"] * r["cheapest_s"] for name, r in rows.items() if name in SIMULATING)
    return {"wall_s": run["wall_s"], "cpu_s": cpu, "floor_cpu_s": floor, "floor_wall_s": floor / cores,
            "simulation_own_cpu_s": own, "simulation_own_wall_s": own / cores,
            "jobs": sum(r["jobs"] for r in rows.values()) - rows.get("snakemake", {"jobs": 0})["jobs"],
            "rules": rows, "compiling_jobs": run["compiling_jobs"]}


def print_summary(label: str, s: dict) -> None:
    print(f"\n{label}: wall {s['wall_s']:.0f} s, CPU {s['cpu_s']:.0f} s over {s['jobs']} jobs; "
          f"floor {s['floor_cpu_s']:.0f} s of CPU, {s['floor_wall_s']:.0f} s of wall at the cores given; "
          f"the simulations' own CPU {s['simulation_own_cpu_s']:.0f} s, {s['simulation_own_wall_s']:.0f} s of wall")
    print(f"{'rule (script)':28s} {'jobs':>5s} {'CPU s':>7s} {'cheapest':>9s} {'CPU/job':>8s} {'compiled':>9s}")
    for name, r in sorted(s["rules"].items(), key=lambda kv: -kv[1]["cpu_s"]):
        print(f"{name:28s} {r['jobs']:5d} {r['cpu_s']:7.1f} {r['cheapest_s']:9.2f} {r['cpu_s'] / r['jobs']:8.2f} "
              f"{r['compiled']:9d}")
    for job_log in s["compiling_jobs"]:  # after the compile jobs none should; its log names the kernel
        print(f"compiled a kernel after the compile jobs: the job whose log is {job_log}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--warm-only", action="store_true", help="time only the warm run (the cold one still runs first)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--repo", type=Path, default=REPO,
                    help="the checkout whose HEAD is cloned (default: this one's)")
    ap.add_argument("--full", action="store_true",
                    help="time the README's main command (paper scale) once, warm, instead of the first look")
    args = ap.parse_args(argv)
    if not os.environ.get("BFIO_DATA_DIR"):
        raise SystemExit("set BFIO_DATA_DIR to the traces' directory (the pipeline's data_dir)")
    report = {"cores": args.cores, "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.repo, text=True,
                                                           capture_output=True).stdout.strip()}
    with tempfile.TemporaryDirectory(prefix="bfio_first_look_") as tmp:
        clone, site = Path(tmp) / "clone", Path(tmp) / "site"
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        numba_cache = Path(tmp) / "numba"  # empty: the cold run compiles every kernel
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        log = site / "cpu.tsv"
        if args.full:
            untimed = Path(tmp) / "untimed"  # no CPU logger on this path: the compile is not timed
            untimed.mkdir()
            subprocess.run([sys.executable, "-m", "bfio.cli", "compile", "--all"], cwd=clone, check=True,
                           env=run_env(clone, untimed / "cpu.tsv", numba_cache), stdout=subprocess.DEVNULL)
            report["full"] = summarize(run_once(clone, args.cores, log, numba_cache, FULL), args.cores)
            print_summary("full pipeline, warm", report["full"])
        for label in () if args.full else ("cold", "warm"):
            s = summarize(run_once(clone, args.cores, log, numba_cache), args.cores)
            if label == "warm" or not args.warm_only:
                print_summary(label, s)
                report[label] = s
            shutil.rmtree(clone / "runs" / "smoke")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
