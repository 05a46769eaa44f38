"""Geometric MLE fit of every trace's decode lengths (rule decode_geometric_fit)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures.decode_geometric import fit_table
from bfio.runs.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    decodes = {name: pd.read_parquet(path)["decode_tokens"].to_numpy()
               for name, path in zip(sm.params.traces, sm.input)}
    write_table(fit_table(decodes), sm.output.csv, sm.output.md,
                title="Decode lengths vs a geometric law on {1,2,...}: MLE p = 1/mean, KS and TV distances")
