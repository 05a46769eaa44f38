"""The choose grid of the objective study on one trace (rule objective_choose)."""
from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.studies.objective_study import choose_variants, run_objective_runs

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    choose = dict(sm.params.choose)
    runs = run_objective_runs(sm.wildcards.trace, read_trace_table(sm.input.trace), int(choose["workers"]),
                              int(sm.params.slots), float(choose["requests_per_slot"]), choose_variants(choose),
                              list(choose["seeds"]), bfio_defaults=dict(sm.params.bfio), log=log)
    runs.to_csv(sm.output[0], index=False)
    log.info("%d runs, %.1f s of simulation", len(runs), runs["sim_wall_s"].sum())
