"""Latency quantiles of the trace-replay settings, per policy (rule fig_online_replay)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.online_replay import plot_online_replay

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_online_replay(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
