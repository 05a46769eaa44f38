"""The recommended objective and paper-literal on one trace and G (rule objective_confirm)."""
import json

from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.studies.objective_study import confirm_variants, run_objective_runs

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    confirm = dict(sm.params.confirm)
    with open(sm.input.recommendation) as f:
        chosen = json.load(f)
    runs = run_objective_runs(sm.wildcards.trace, read_trace_table(sm.input.trace), int(sm.wildcards.workers),
                              int(sm.params.slots), float(confirm["requests_per_slot"]),
                              confirm_variants(confirm, chosen), list(sm.params.seeds),
                              bfio_defaults=dict(sm.params.bfio), log=log)
    runs.to_csv(sm.output[0], index=False)
    log.info("%d runs, %.1f s of simulation", len(runs), runs["sim_wall_s"].sum())
