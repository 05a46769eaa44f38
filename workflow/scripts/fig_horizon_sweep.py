"""Metrics against the lookahead H (rule fig_horizon_sweep)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.horizon_sweep import plot_horizon_sweep

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_horizon_sweep(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
