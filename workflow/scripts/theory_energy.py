"""Merge the energy tables of every theory model; Corollary 1 table."""
import sys

import pandas as pd

from bfio.theory.energy import corollary_table

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
dec = pd.concat([pd.read_csv(p) for p in snakemake.input.edec], ignore_index=True)  # noqa: F821
sav = pd.concat([pd.read_csv(p) for p in snakemake.input.esav], ignore_index=True)  # noqa: F821
dec.to_csv(snakemake.output.edec, index=False)  # noqa: F821
sav.to_csv(snakemake.output.esav, index=False)  # noqa: F821
corollary_table(snakemake.params.cfg["energy"]["power"]).to_csv(snakemake.output.corollary, index=False)  # noqa: F821
print(f"decomposition rows {len(dec)} pass {dec['pass'].all()}; saving rows {len(sav)} pass {sav['bound_le_saving'].all()}")
