"""The plateau over H of the horizon sweep, at the reference seed and paired over seeds (rule horizon_plateau)."""
import pandas as pd

from bfio.pipeline.plateau import plateau, plateau_markdown
from bfio.ground.progress import script_log
from bfio.runs.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    table = plateau(pd.read_csv(sm.input[0]), sm.params.ref_seed, source=sm.input[0])
    write_table(table, sm.output.csv, sm.output.md,
                markdown=plateau_markdown(table, sm.params.title, sm.params.ref_seed))
