"""The pipeline's paper experiments: the config's lists expanded into
simulation runs (:class:`bfio.runs.run.RunSpec`), canonical trace tables
(:mod:`bfio.traces.canonical`, re-exported here), and one run simulated with
its outputs written.

A run is identified by ``(trace, requests, workers, slots, row, seed)`` where
``row`` is the paper's row key (``fcfs``, ``jsq_tokens``, ``bfio_h40``, see
:func:`bfio.lookahead.run_keys.row_key`). Its outputs live under
``results/runs/<RunSpec.path>/``; experiments that contain the same run (Table 1
and the H sweep share G=256, N=80,000 LongBench runs) share its job. The
Snakemake workflow (``Snakefile``, ``workflow/rules``) is a thin layer over
this module, :mod:`bfio.pipeline.config` (validation), :mod:`bfio.traces.sources` (where
traces come from) and :mod:`bfio.ground.results_io` (outputs on disk).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from bfio.runs.fingerprint import code_fingerprint  # noqa: F401  (the workflow's rerun triggers)
from bfio.lookahead.run_keys import RowSpec
from bfio.ground.results_io import atomic_path, write_json
from bfio.runs.run import RunSpec, baselines
from bfio.traces.canonical import prepare_trace, read_trace_table, trace_stats  # noqa: F401  (re-exported)


def __getattr__(name: str):
    # ``BASELINES`` reads the registry on every access (a policy registered
    # after this module was imported is a baseline too)
    if name == "BASELINES":
        return baselines()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Metrics aggregated in tables: paper convention first, then the pre-step twins.
METRICS = ("avg_imbalance", "throughput", "tpot", "energy_j", "avg_imbalance_pre", "energy_j_pre")

log = logging.getLogger("bfio.pipeline")


# --------------------------------------------------------------------------- runs

def experiment_row_specs(exp: dict) -> list[RowSpec]:
    """The rows an experiment declares: its baselines, BF-IO per horizon, then
    BF-IO with the paper-literal objective per ``literal_horizons``."""
    return ([RowSpec(b) for b in exp.get("baselines", [])] + [RowSpec("bfio", int(h)) for h in exp.get("horizons", [])]
            + [RowSpec("bfio", int(h), "paper-literal") for h in exp.get("literal_horizons", [])])


def experiment_rows(exp: dict) -> list[str]:
    """Row keys of an experiment (:func:`experiment_row_specs`): ``fcfs``, ``bfio_h<H>``,
    ``bfio_h<H>_literal``."""
    return [spec.key for spec in experiment_row_specs(exp)]


def experiment_seeds(config: dict, name: str) -> list[int]:
    """The seeds of experiment ``name``: the top-level ``seeds``, then its ``extra_seeds``."""
    return [int(s) for s in config["seeds"]] + [int(s) for s in config["experiments"][name].get("extra_seeds", [])]


def extra_seeds(config: dict) -> list[int]:
    """Every experiment's ``extra_seeds`` (first appearance order): the seeds beyond the
    top-level ``seeds`` that some cells run (the pipeline's ``simulate_extra_seeds`` jobs)."""
    out: list[int] = []
    for exp in config["experiments"].values():
        out += [int(s) for s in exp.get("extra_seeds", []) if int(s) not in out]
    return out


def experiment_runs(config: dict, name: str) -> list[RunSpec]:
    """Every run of experiment ``name``: rows x workers x seeds (config order)."""
    exp = config["experiments"][name]
    slots = int(exp.get("slots", config.get("slots", 72)))
    return [RunSpec(exp["trace"], int(exp["requests"]), int(g), slots, spec.key, seed, row_spec=spec)
            for spec in experiment_row_specs(exp) for g in exp["workers"] for seed in experiment_seeds(config, name)]


def all_runs(config: dict) -> list[RunSpec]:
    """Distinct runs over all experiments (shared runs appear once), sorted."""
    return sorted({r for name in config["experiments"] for r in experiment_runs(config, name)})


def declared_runs(config: dict) -> dict[str, RunSpec]:
    """Run path -> run, for every run the experiments declare: what a pipeline job
    given a path simulates (:meth:`bfio.runs.run.RunSpec.from_path`, a lookup)."""
    return {r.path: r for r in all_runs(config)}


def reference_seed(config: dict) -> int:
    return int(config["seeds"][0])


def trajectory_runs(config: dict) -> dict[str, list[RunSpec]]:
    """experiment -> runs (reference seed, first G) whose load matrices are recorded."""
    return figure_runs(config, "trajectories")


def figure_runs(config: dict, key: str) -> dict[str, list[RunSpec]]:
    """experiment -> runs (reference seed, first G) named by the ``figures`` mapping ``key``."""
    out = {}
    for name, rows in config.get("figures", {}).get(key, {}).items():
        if name not in config["experiments"]:
            continue
        exp = config["experiments"][name]
        slots = int(exp.get("slots", config.get("slots", 72)))
        declared = {spec.key: spec for spec in experiment_row_specs(exp)}  # the experiment's rows, by key
        out[name] = [RunSpec(exp["trace"], int(exp["requests"]), int(exp["workers"][0]), slots, row,
                             reference_seed(config), row_spec=declared.get(row)) for row in rows]
    return out


@dataclass(frozen=True)
class CellRuns:
    """The runs of one cell (a run path without its seed, :attr:`RunSpec.cell`) that one
    pipeline job simulates in one process: ``seeds`` in order, and the seed whose
    ``(steps, G)`` load matrix is recorded (``None``: none)."""

    cell: str
    seeds: tuple[int, ...]
    recorded_seed: int | None = None

    @property
    def trace(self) -> str:
        return self.cell.split("/", 1)[0]

    def run(self, seed: int) -> str:
        """The path of the cell's run with ``seed`` (:attr:`RunSpec.path`)."""
        return f"{self.cell}/seed{seed}"

    def runs(self) -> list[str]:
        """The run paths, in ``seeds`` order (the order of the job's outputs)."""
        return [self.run(s) for s in self.seeds]


def simulation_jobs(config: dict) -> list[tuple[CellRuns, ...]]:
    """Every experiment cell's runs, ``config['cells_per_job']`` cells to a job
    (sorted by cell; the last job may hold fewer). A cell runs the top-level
    ``seeds`` (and records the reference seed's loads when a trajectory figure
    shows it); a cell some experiment runs with ``extra_seeds`` runs them in a
    second :class:`CellRuns` (rule ``simulate_extra_seeds``'s job when one cell is
    a job). With ``cells_per_job: 1`` (the default) each job is the one cell of
    rules ``simulate``/``simulate_recorded``/``simulate_extra_seeds``; more cells a
    job pay the job's start (imports, numba's cache: about 1 s) once for all of
    them: the first look's small cells (issue 42)."""
    per_job = int(config.get("cells_per_job", 1))
    seeds = tuple(int(s) for s in config["seeds"])
    extra = tuple(extra_seeds(config))
    recorded = {r.cell for runs in trajectory_runs(config).values() for r in runs}
    runs = all_runs(config)
    units = [CellRuns(c, seeds, reference_seed(config) if c in recorded else None)
             for c in sorted({r.cell for r in runs})]
    units += [CellRuns(c, extra) for c in sorted({r.cell for r in runs if r.seed in extra})]
    return [tuple(units[i:i + per_job]) for i in range(0, len(units), per_job)]


# --------------------------------------------------------------------------- code

#: Package sources a simulation's result depends on (see :func:`code_fingerprint`).
SIMULATION_SOURCES = ("ground/constants.py", "engine/kernels.py", "engine/step_time.py", "ground/metrics.py", "ground/power.py", "simulator.py", "workloads/workload.py",
                      "predictors", "policies", "solvers", "runs/run.py", "runs/runner.py", "lookahead/run_keys.py")


# --------------------------------------------------------------------------- running

def run_one(spec: RunSpec, trace_table, summary_path, series_path, loads_path=None,
            bfio_options: dict | None = None, defaults: dict | None = None) -> dict:
    """Draw the workload of ``spec``, simulate it and write its summary (JSON),
    per-step series (parquet) and, if ``loads_path`` is given, the ``(steps, G)``
    gating-load matrix (``.npy``). Options: the config's per-policy ``defaults``
    (:func:`bfio.runs.run.policy_defaults`; ``bfio_options``: BF-IO's alone).
    Returns the summary."""
    from bfio.runs.runner import simulate_run  # here: the workflow imports this module when it starts

    spec = spec.with_bfio_defaults(bfio_options, defaults)
    frame = read_trace_table(trace_table)
    t0 = time.perf_counter()
    result = simulate_run(spec, frame, record_loads=loads_path is not None)
    summary = {**result.summary(), "run": spec.path, "trace": spec.trace, "row": spec.row,
               "horizon": spec.horizon, "objective": spec.objective,
               "policy_name": spec.policy, "sim_wall_s": time.perf_counter() - t0}
    for w in result.warnings:
        log.warning("run %s: %s", spec.path, w)
    series = result.series.reset_index()
    with atomic_path(series_path) as tmp:
        series.to_parquet(tmp, index=False)
    if loads_path is not None:
        with atomic_path(loads_path) as tmp, open(tmp, "wb") as f:
            np.save(f, result.loads if result.loads is not None else np.zeros((0, spec.workers)))
    write_json(summary, summary_path)  # last: the summary marks a complete run
    log.info("run %s: %d steps, %.2f s", spec.path, result.steps, result.wall_s)
    return summary


def run_cells(job: list[CellRuns], traces: list[str], summaries: list[str], series: list[str],
              loads: list[str], config: dict, defaults: dict, log: logging.Logger) -> None:
    """Simulate one pipeline job (:func:`simulation_jobs`): every run of every cell, in order, with
    :func:`run_one`. ``traces`` has one trace table per cell; ``summaries`` and ``series`` one path
    per run (cells, then seeds, in order); ``loads`` one per cell that records a seed."""
    if len(traces) != len(job) or len(loads) != sum(u.recorded_seed is not None for u in job):
        raise ValueError(f"a simulation job of {len(job)} cells was given {len(traces)} trace tables "
                         f"and {len(loads)} load matrices")
    runs = [(unit, trace, seed) for unit, trace in zip(job, traces) for seed in unit.seeds]
    if len(runs) != len(summaries) or len(runs) != len(series):
        raise ValueError(f"a simulation job of {len(runs)} runs was given {len(summaries)} summary "
                         f"and {len(series)} series paths")
    declared = declared_runs(config)  # run path -> the run the config declares there (a lookup)
    recorded = iter(loads)
    for (unit, trace, seed), summary_path, series_path in zip(runs, summaries, series):
        spec = RunSpec.from_path(unit.run(seed), declared)
        summary = run_one(spec, trace, summary_path, series_path,
                          loads_path=next(recorded) if seed == unit.recorded_seed else None, defaults=defaults)
        log.info("%s: avg_imbalance %.6g, throughput %.6g, tpot %.6g, energy_j %.6g", spec.path,
                 summary["avg_imbalance"], summary["throughput"], summary["tpot"], summary["energy_j"])


__all__ = ["code_fingerprint", "SIMULATION_SOURCES", "experiment_rows", "experiment_seeds", "extra_seeds",
           "experiment_runs", "all_runs", "declared_runs", "experiment_row_specs",
           "trajectory_runs", "figure_runs", "reference_seed", "prepare_trace", "trace_stats",
           "read_trace_table", "run_one", "METRICS", "CellRuns", "simulation_jobs", "run_cells"]
