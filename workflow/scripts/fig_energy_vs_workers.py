"""Energy against G with the reduction % on a second axis (rule fig_energy_vs_workers)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.energy_vs_workers import plot_energy_vs_workers

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_energy_vs_workers(pd.read_csv(sm.input[0]), setting=dict(sm.params.setting)), sm.output.pdf,
         sm.output.png)
