"""Every theory figure, figures/theory/*.{pdf,png} (rule theory_figures): Theorem 1's
IIR and Lemma 1's gaps, Theorems 2 and 3's IIR and gaps, Theorem 2's FCFS snapshot,
and Corollary 1's energy saving against G."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import draw_all

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
sm = snakemake  # noqa: F821
thms = ("thm1", "thm2", "thm3")
draw_all({t: pd.read_csv(sm.input[f"{t}_cells"]) for t in thms}, {t: pd.read_csv(sm.input[f"{t}_fits"]) for t in thms},
         pd.read_csv(sm.input.esav), pd.read_csv(sm.input.corollary), sm.params.series, Path(sm.output[0]).parent)
