"""One extra JSON output of a registered study's table (rule study_extra). The extras
function comes as an import path (params.job, bfio.studies.jobs.extras_job)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.studies.declared_rows import declare_config_rows
from bfio.ground.results_io import write_json
from bfio.studies.registry import load_function

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    declare_config_rows(sm.config)  # rows named by label: looked up, not parsed (issue 43)
    job = dict(sm.params.job)
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    extra = {"inputs": list(sm.input.inputs)} if job["inputs"] else {}
    extras = load_function(job["extras"])(runs, dict(sm.params.section), dict(sm.params.settings), **extra)
    write_json(extras[sm.wildcards.extra], sm.output[0])
    log.info("%s_%s written", sm.wildcards.table, sm.wildcards.extra)
