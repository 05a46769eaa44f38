"""Run every seed of one cell (rules simulate and simulate_recorded)."""
from bfio.runs.experiments import declared_runs, run_one
from bfio.ground.progress import script_log
from bfio.runs.run import RunSpec

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    loads = sm.output.get("loads")
    declared = declared_runs(sm.config)  # run path -> the run the config declares there (a lookup)
    for seed, summary_path, series_path in zip(sm.params.seeds, sm.output.summary, sm.output.series):
        spec = RunSpec.from_path(f"{sm.wildcards.cell}/seed{seed}", declared)
        summary = run_one(spec, sm.input.trace, summary_path, series_path,
                          loads_path=loads[0] if loads and seed == sm.params.recorded_seed else None,
                          defaults=dict(sm.params.defaults))
        log.info("%s: avg_imbalance %.6g, throughput %.6g, tpot %.6g, energy_j %.6g", spec.path,
                 summary["avg_imbalance"], summary["throughput"], summary["tpot"], summary["energy_j"])
