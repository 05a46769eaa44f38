"""Every row x seed of one setting of a registered study (rule study_simulate)."""
import json

from bfio.runs.experiments import read_trace_table
from bfio.runs.runner import run_batch
from bfio.ground.progress import script_log
from bfio.studies.registry import by_directory
from bfio.studies.report import read_product, setting_slots

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    study = by_directory(sm.wildcards.study)
    name = sm.params.name
    setting = dict(sm.params.setting)
    extra = {}
    if study.needs is not None:  # the runs (or products) this setting reads, by setting name (or product file)
        extra["prior"] = {n: read_product(p) for n, p in zip(study.needs(name, setting), sm.input.prior)}
    if study.prepare is not None:  # the preparatory stage's result
        with open(sm.input.prepared) as f:
            extra["prepared"] = json.load(f)
    runs = study.run_setting(run_batch, name, setting, dict(sm.params.section), list(sm.params.seeds),
                             setting_slots(setting, {"slots": sm.params.slots}), read_trace_table(sm.input.trace),
                             {k: dict(v) for k, v in sm.params.defaults.items()}, log, **extra)
    runs.to_csv(sm.output[0], index=False)
    log.info("%s: %d runs, %.1f s of simulation", study.name, len(runs), runs["sim_wall_s"].sum())
