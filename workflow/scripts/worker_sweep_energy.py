"""Energy of baseline vs target and the reduction % per G (rule worker_sweep_energy)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.runs.tables import energy_reduction, write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    table = energy_reduction(pd.read_csv(sm.input[0]), sm.params.baseline, sm.params.target, sm.params.ref_seed)
    write_table(table, sm.output.csv, sm.output.md,
                title=f"Energy (J, paper convention) vs G: {sm.params.baseline} vs {sm.params.target}; "
                      f"reduction in % (value at seed {sm.params.ref_seed}, mean and 95% CI over seeds)")
