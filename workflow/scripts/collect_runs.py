"""Collect an experiment's run summaries into one CSV (rule collect_runs)."""
from bfio.ground.progress import script_log
from bfio.ground.results_io import collect_runs

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    collect_runs(list(sm.input), experiment=sm.wildcards.experiment).to_csv(sm.output[0], index=False)
