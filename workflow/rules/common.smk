# Shared helpers: config validation (with defaults), run lists expanded from
# the config, input functions. All logic lives in the bfio package (experiments, config, traces.sources).
import threading

from bfio.runs.run import CELL_WILDCARD, policy_defaults
from bfio.pipeline.config import trace_specs, validate_config
from bfio.runs.experiments import (
    all_runs,
    experiment_rows,
    experiment_runs,
    experiment_seeds,
    extra_seeds,
    figure_runs,
    reference_seed,
    simulation_jobs,
    SIMULATION_SOURCES,
    trajectory_runs,
)
from bfio.runs.fingerprint import code_fingerprint
from bfio.ground.kernel_cache import KERNEL_GROUPS
from bfio.traces.sources import (
    download_mode,
    known_trace_path,
    missing_trace_message,
    missing_traces_message,
    skip_unavailable_traces,
    unavailable_traces,
)
from bfio.traces.registry import KNOWN_TRACES
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

validate_config(config, Path(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
# Traces (config key download, docs/pipeline.md "Traces"): with download auto
# (default) or true, a trace absent from data_dir and without a public source
# (derived locally) is dropped with everything using it, in one log line; with
# download false, the traces the config cannot place stop the DAG (trace_source).
_SKIPPED = skip_unavailable_traces(config)
if _SKIPPED:
    logger.warning(_SKIPPED)
MISSING_TRACES = unavailable_traces(config)
# Policy name -> options every row of it starts from (config keys bfio, policy_options).
POLICY_DEFAULTS = policy_defaults(config)

EXPERIMENTS = list(config["experiments"])
PAPER_TABLES = {
    name: exp["paper_table"]
    for name, exp in config["experiments"].items()
    if exp.get("paper_table")
}
TRAJECTORY_RUNS = trajectory_runs(config)
POWER_RUNS = figure_runs(config, "power")
RECORDED_RUNS = sorted({r.path for runs in TRAJECTORY_RUNS.values() for r in runs})
# One simulation job per cell (a run without its seed) runs every seed of it:
# the runs share a trace table and the job pays imports and numba loading once.
SEEDS = [int(s) for s in config["seeds"]]
# Seeds beyond them that some experiments run (experiments.<name>.extra_seeds): one more
# job per cell that needs them (rule simulate_extra_seeds).
EXTRA_SEEDS = extra_seeds(config)
RECORDED_CELLS = sorted({r.cell for runs in TRAJECTORY_RUNS.values() for r in runs})
RECORDED_SEED = reference_seed(config)
# Cells a simulation job runs (config key cells_per_job; 1: the rules above, one cell a job).
CELLS_PER_JOB = int(config["cells_per_job"])
SIMULATION_JOBS = simulation_jobs(config) if CELLS_PER_JOB > 1 else []
FIG = config["figures"]
HSWEEP = FIG["horizon_sweep"] if FIG["horizon_sweep"] in config["experiments"] else None
GSWEEP = FIG["worker_sweep"] if FIG["worker_sweep"] in config["experiments"] else None
FIG_FORMATS = ["pdf", "png"]
# Fingerprints of the package code behind each kind of job (params => rerun
# when that code changes; figure code never touches simulations).
SIM_CODE = code_fingerprint(SIMULATION_SOURCES)
TABLE_CODE = code_fingerprint(["runs/tables.py", "runs/paper.py", "lookahead/run_keys.py"])


def figure_code(module):
    return code_fingerprint(["figures/style.py", f"figures/{module}.py"])

DOWNLOAD_DIR = str(Path(config["download_dir"]))  # the form known_trace_path returns
TRACE_BY_RELPATH = {t.relpath: t for t in KNOWN_TRACES.values()}
# Known traces plus the config's extra_traces (README "Bring your own trace").
TRACE_SPECS = trace_specs(config)
EXTRA_TRACES = [t for t in TRACE_SPECS if t not in KNOWN_TRACES]


wildcard_constraints:
    cell=CELL_WILDCARD,
    trace="|".join(TRACE_SPECS),
    experiment="|".join(EXPERIMENTS) if EXPERIMENTS else "NO_EXPERIMENT",
    ext="pdf|png",


def kernels_compiled(group):
    """Input of a job that runs ``group``'s numba kernels (bfio.ground.kernel_cache.KERNEL_GROUPS):
    the marker of rule compile_kernels (kernels.smk), ancient so that a rerun of
    the compile job never reruns the jobs that wait for it."""
    return ancient(f"logs/kernels/{group}.compiled")


def trace_source(wildcards):
    """The trace file: an extra trace's configured path; a known trace from
    data_dir, or from download_dir (rule download_trace fetches it there),
    following the config key download (bfio.traces.sources.known_trace_path)."""
    if wildcards.trace in EXTRA_TRACES:
        path = Path(config["extra_traces"][wildcards.trace]["path"])
        if not path.exists():
            raise WorkflowError(
                f"config key 'extra_traces.{wildcards.trace}.path': file {path} does not exist "
                f"(absolute: {path.resolve()}); relative paths start at the working directory."
            )
        return str(path)
    path = known_trace_path(wildcards.trace, config)
    if path is not None:
        return str(path)
    if wildcards.trace in MISSING_TRACES:
        # download: false; every missing trace at once, before any job runs
        raise WorkflowError(missing_traces_message(MISSING_TRACES, config))
    raise WorkflowError(
        missing_trace_message(wildcards.trace, config["data_dir"], config["download_dir"])
    )


def theory_trace_dir(theory):
    """(directory, files) for the theory checks' trace-based prefill laws
    (workflow/rules/theory.smk), which read every trace by name from one
    directory: theory's data_dir when the traces are there; else, when
    download_trace can provide all of them, download_dir and the files to
    fetch first (the rules' inputs)."""
    used = set()
    for section in ("homogeneous", "geometric", "drift"):
        used |= set((theory.get(section) or {}).get("distributions") or [])
    series = ((theory.get("energy") or {}).get("series") or {}).get("distribution")
    used |= {series} if series else set()
    dists = theory.get("distributions") or {}
    names = sorted(
        {dists[d]["trace"] for d in used if d in dists and dists[d].get("kind") == "trace"}
        & set(KNOWN_TRACES)
    )
    data_dir = theory.get("data_dir")
    in_data_dir = all((Path(data_dir) / KNOWN_TRACES[n].relpath).exists() for n in names)
    if data_dir is None or (in_data_dir and download_mode(config) != "always"):
        return data_dir, []
    files = [known_trace_path(n, config) for n in names]
    if all(f is not None and Path(f).is_relative_to(DOWNLOAD_DIR) for f in files):
        return DOWNLOAD_DIR, [str(f) for f in files]
    return data_dir, []  # the theory job names the missing file


def cell_trace_table(cell):
    """The trace table a cell's runs read."""
    return f"results/traces/{cell.split('/', 1)[0]}.parquet"


def cell_outputs(name, seeds=SEEDS):
    """``results/runs/{cell}/seed<s>/<name>`` for every seed (a rule's output list)."""
    return expand("results/runs/{{cell}}/seed{seed}/{name}", seed=seeds, name=name)


def experiment_summaries(wildcards):
    return expand(
        "results/runs/{run}/summary.json",
        run=[r.path for r in experiment_runs(config, wildcards.experiment)],
    )


def runs_of(experiment, key="trajectories"):
    runs = TRAJECTORY_RUNS if key == "trajectories" else POWER_RUNS
    return [r.path for r in runs[experiment]]


def paper_table_experiment(wildcards):
    for name, table in PAPER_TABLES.items():
        if table == wildcards.table:
            return f"results/tables/runs_{name}.csv"
    raise WorkflowError(f"no experiment has paper_table: {wildcards.table}")


def paper_table_expected(wildcards):
    """The runs a paper table needs: its experiment's rows, G values and seeds."""
    for name, table in PAPER_TABLES.items():
        if table == wildcards.table:
            exp = config["experiments"][name]
            return {"rows": experiment_rows(exp), "workers": [int(g) for g in exp["workers"]],
                    "seeds": experiment_seeds(config, name)}
    raise WorkflowError(f"no experiment has paper_table: {wildcards.table}")


def figure_setting(what):
    """The setting a figure's title names: a recorded run's trace, G, N, B and
    seed, or an experiment's trace, N and B (its G on the figure's axis)."""
    if what is None:
        return {}
    if isinstance(what, str):
        exp = config["experiments"][what]
        return {"trace": exp["trace"], "requests": int(exp["requests"]),
                "slots": int(exp.get("slots", config["slots"]))}
    return {"trace": what.trace, "workers": what.workers, "requests": what.requests, "slots": what.slots,
            "seed": what.seed}


def figure_targets():
    out = expand("figures/distributions_{trace}.{ext}", trace=FIG["distributions"], ext=FIG_FORMATS)
    out += expand("figures/decode_geometric.{ext}", ext=FIG_FORMATS)
    out += expand(
        "figures/load_trajectories_{experiment}.{ext}", experiment=TRAJECTORY_RUNS, ext=FIG_FORMATS
    )
    out += expand(
        "figures/power_timeseries_{experiment}.{ext}", experiment=POWER_RUNS, ext=FIG_FORMATS
    )
    if HSWEEP:
        out += expand("figures/horizon_sweep.{ext}", ext=FIG_FORMATS)
    if GSWEEP:
        out += expand("figures/worker_sweep.{ext}", ext=FIG_FORMATS)
        out += expand("figures/energy_vs_workers.{ext}", ext=FIG_FORMATS)
    return out


def table_targets():
    out = expand("results/traces/{trace}.stats.json", trace=config["traces"])
    out += expand("results/tables/traces.{fmt}", fmt=["csv", "md"])
    out += expand("results/tables/decode_geometric_fit.{fmt}", fmt=["csv", "md"])
    out += expand("results/tables/{experiment}_summary.{fmt}", experiment=EXPERIMENTS, fmt=["csv", "md"])
    out += expand("results/tables/{table}.{fmt}", table=sorted(set(PAPER_TABLES.values())), fmt=["csv", "md"])
    if HSWEEP:
        out += expand("results/tables/horizon_plateau.{fmt}", fmt=["csv", "md"])
    if GSWEEP:
        out += expand("results/tables/worker_sweep_energy.{fmt}", fmt=["csv", "md"])
    if ENERGY_CHECK:
        out += expand("results/tables/energy_decomposition.{fmt}", fmt=["csv", "md"])
    return out


def all_targets():
    return table_targets() + figure_targets()


def _energy_check_available():
    try:
        from bfio.theory.energy import check_runs  # noqa: F401
    except ImportError:
        return False
    return True


ENERGY_CHECK = _energy_check_available()


def cancel_rate_limit_timers():
    """Cancel the timers Snakemake's job rate limiter still has armed (one per
    scheduling event, each re-armed every timespan; profiles/default): they are
    threads Python waits for at exit, so the run would end up to a timespan
    (60 s) after its last job."""
    for timer in threading.enumerate():
        if isinstance(timer, threading.Timer):
            timer.cancel()
