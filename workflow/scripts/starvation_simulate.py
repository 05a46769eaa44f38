"""Every horizon x admission x seed of one setting (rule starvation_simulate)."""
from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.studies.report import setting_slots
from bfio.studies.starvation import run_starvation

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    setting = dict(sm.params.setting)
    runs = run_starvation(sm.wildcards.setting, setting, dict(sm.params.study), list(sm.params.seeds),
                          setting_slots(setting, {"slots": sm.params.slots}), read_trace_table(sm.input.trace),
                          bfio_defaults=dict(sm.params.bfio), log=log)
    runs.to_csv(sm.output[0], index=False)
    log.info("%d runs, %.1f s of simulation", len(runs), runs["sim_wall_s"].sum())
