"""Decode-length histograms with the fitted geometric law, and the report caption
quoting the fit (rule fig_decode_geometric)."""
from pathlib import Path

import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.decode_geometric import caption_text, plot_decode_geometric

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    decodes = {name: pd.read_parquet(path)["decode_tokens"].to_numpy()
               for name, path in zip(sm.params.traces, sm.input.traces)}
    fits = pd.read_csv(sm.input.fit)
    save(plot_decode_geometric(decodes, fits), sm.output.pdf, sm.output.png)
    Path(sm.output.caption).write_text(caption_text(Path(sm.input.caption_template).read_text(), fits))
