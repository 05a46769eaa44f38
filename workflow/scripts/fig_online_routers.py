"""p99 end-to-end latency and throughput of the production routers against the
load-report interval, beside the reference row (rule fig_online_routers)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.online_routers import plot_online_routers

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_online_routers(pd.read_csv(sm.input[0]), load=float(sm.params.load)), sm.output.pdf, sm.output.png)
