"""Every run of one or more cells (rules simulate, simulate_recorded, simulate_extra_seeds, simulate_cells_*)."""
from bfio.ground.progress import script_log
from bfio.runs.experiments import CellRuns, run_cells

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    run_cells([CellRuns(cell, tuple(seeds), recorded) for cell, seeds, recorded in sm.params.cells],
              list(sm.input.trace), list(sm.output.summary), list(sm.output.series), list(sm.output.get("loads", [])),
              sm.config, dict(sm.params.defaults), log)
