"""Markdown summary table of every checked statement."""
import json
import sys

import pandas as pd

from bfio.theory.report import summary_rows, write_summary

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
inp = snakemake.input  # noqa: F821
tabs = {}
for t, c, f in zip(("thm1", "thm2", "thm3"), inp.cells, inp.fits):
    tabs[t] = {"cells": pd.read_csv(c), "fits": pd.read_csv(f)}
for t, g in zip(("thm2", "thm3"), inp.gaps):
    tabs[t]["gap_trends"] = pd.read_csv(g)
timings = {}
for p in inp.timing:
    timings.update(json.load(open(p)))
rows = summary_rows(tabs["thm1"], tabs["thm2"], tabs["thm3"], pd.read_csv(inp.edec), pd.read_csv(inp.esav),
                    pd.read_csv(inp.corollary))
rows.to_csv(snakemake.output.csv, index=False)  # noqa: F821
cfg = snakemake.params.cfg  # noqa: F821
write_summary(snakemake.output.md, rows, timings,  # noqa: F821
              header=f"Profile `{cfg['profile']}`, seed {cfg['seed']}, s_max {cfg['s_max']}. "
                     "See docs/theory.md for what each check does.")
print(rows.to_string())
