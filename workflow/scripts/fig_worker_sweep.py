"""Imbalance and throughput against G (rule fig_worker_sweep)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.worker_sweep import plot_worker_sweep

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_worker_sweep(pd.read_csv(sm.input[0]), rows=sm.params.rows), sm.output.pdf, sm.output.png)
