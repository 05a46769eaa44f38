"""The preparatory stage of one setting of a registered study (rule study_prepare),
e.g. the online study's saturation runs."""
from bfio.runs.experiments import read_trace_table
from bfio.ground.progress import script_log
from bfio.ground.results_io import write_json
from bfio.studies.registry import by_directory
from bfio.studies.report import setting_slots

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    study = by_directory(sm.wildcards.study)
    setting = dict(sm.params.setting)
    name = sm.params.name
    result = study.prepare(name, setting, dict(sm.params.section), list(sm.params.seeds),
                           setting_slots(setting, {"slots": sm.params.slots}), read_trace_table(sm.input.trace),
                           {k: dict(v) for k, v in sm.params.defaults.items()}, log)
    write_json(result, sm.output[0])
