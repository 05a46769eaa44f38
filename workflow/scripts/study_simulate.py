"""Every row x seed of one setting of a registered study (rule study_simulate)."""
from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.studies.registry import by_directory
from bfio.studies.report import setting_slots

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    study = by_directory(sm.wildcards.study)
    setting = dict(sm.params.setting)
    runs = study.simulate(sm.wildcards.setting, setting, dict(sm.params.section), list(sm.params.seeds),
                          setting_slots(setting, {"slots": sm.params.slots}), read_trace_table(sm.input.trace),
                          {k: dict(v) for k, v in sm.params.defaults.items()}, log)
    runs.to_csv(sm.output[0], index=False)
    log.info("%s: %d runs, %.1f s of simulation", study.name, len(runs), runs["sim_wall_s"].sum())
