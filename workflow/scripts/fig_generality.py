"""BF-IO vs FCFS on every trace (rule fig_generality)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.generality import plot_generality

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_generality(pd.read_csv(sm.input[0]), target=sm.params.targets[0]), sm.output.pdf, sm.output.png)
