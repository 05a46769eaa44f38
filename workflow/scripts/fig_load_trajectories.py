"""Per-worker load trajectories of sampled workers (rule fig_load_trajectories)."""
import numpy as np
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.load_trajectories import plot_load_trajectories

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    panels = []
    for row, loads_path, series_path in zip(sm.params.rows, sm.input.loads, sm.input.series):
        series = pd.read_parquet(series_path)
        loads = np.load(loads_path)
        t_start = (series["clock"] - series["dt"]).to_numpy()[: loads.shape[0]]
        panels.append((row, loads, t_start))
    fig = plot_load_trajectories(panels, sample=sm.params.sample_workers, seed=sm.params.sample_seed,
                                 title=sm.params.title, setting=dict(sm.params.setting))
    save(fig, sm.output.pdf, sm.output.png)
