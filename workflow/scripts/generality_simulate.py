"""Every case x row x seed of one generality job: (trace, G, backlog | replay)
(rule generality_simulate)."""
import pandas as pd

from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.studies.generality import run_generality

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    backlog = pd.read_csv(sm.input.backlog) if sm.wildcards.arrival == "replay" else None
    runs = run_generality(sm.wildcards.trace, int(sm.wildcards.workers), sm.wildcards.arrival,
                          dict(sm.params.study), list(sm.params.seeds), int(sm.params.slots),
                          read_trace_table(sm.input.trace), backlog_runs=backlog,
                          bfio_defaults=dict(sm.params.bfio), log=log)
    runs.to_csv(sm.output[0], index=False)
    log.info("%d runs, %.1f s of simulation", len(runs), runs["sim_wall_s"].sum())
