"""Objective study figure (rule fig_objective_study)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.objective_study import plot_objective_study

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_objective_study(pd.read_csv(sm.input.choose), pd.read_csv(sm.input.table)), sm.output.pdf,
         sm.output.png)
