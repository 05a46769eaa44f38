"""One extra JSON output of a registered study's table (rule study_extra)."""
import pandas as pd

from bfio.progress import script_log
from bfio.results_io import write_json
from bfio.studies.registry import by_table

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    study = by_table(sm.wildcards.table)
    extra = {"inputs": list(sm.input.inputs)} if study.table_inputs is not None else {}
    extras = study.extras(runs, dict(sm.params.section), dict(sm.params.settings), **extra)
    write_json(extras[sm.wildcards.extra], sm.output[0])
    log.info("%s_%s written", sm.wildcards.table, sm.wildcards.extra)
