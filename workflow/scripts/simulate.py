"""Run one simulation (rules simulate and simulate_recorded)."""
from bfio.experiments import run_one
from bfio.progress import script_log
from bfio.run import RunSpec

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    spec = RunSpec.from_path(sm.wildcards.run)
    loads = sm.output.get("loads")
    summary = run_one(spec, sm.input.trace, sm.output.summary, sm.output.series, loads_path=loads,
                      bfio_options=dict(sm.params.bfio))
    log.info("avg_imbalance %.6g, throughput %.6g, tpot %.6g, energy_j %.6g", summary["avg_imbalance"],
             summary["throughput"], summary["tpot"], summary["energy_j"])
