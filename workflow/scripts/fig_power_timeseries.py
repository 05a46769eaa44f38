"""Mean power over time with total energy in the legend (rule fig_power_timeseries)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.ground.results_io import read_summary
from bfio.figures import save
from bfio.figures.power_timeseries import plot_power_timeseries

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    curves = []
    for row, series_path, summary_path in zip(sm.params.rows, sm.input.series, sm.input.summaries):
        series = pd.read_parquet(series_path)
        s = read_summary(summary_path)
        window = s["window_steps"]
        window_end = float(series["clock"].iloc[window - 1]) if window >= 1 else None
        curves.append((row, series["clock"].to_numpy(), series["power_mean_post"].to_numpy(),
                       s["energy_j"], window_end))
    fig = plot_power_timeseries(curves, title=sm.params.title, setting=dict(sm.params.setting))
    save(fig, sm.output.pdf, sm.output.png)
