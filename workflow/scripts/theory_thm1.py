"""Theorem 1 grid (bfio.theory.run.run_homogeneous) -> CSV tables."""
import json
import sys
import time

from bfio.theory.run import run_homogeneous

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
t0 = time.perf_counter()
res = run_homogeneous(snakemake.params.cfg)  # noqa: F821
res["cells"].to_csv(snakemake.output.cells, index=False)  # noqa: F821
res["fits"].to_csv(snakemake.output.fits, index=False)  # noqa: F821
res["energy_decomposition"].to_csv(snakemake.output.edec, index=False)  # noqa: F821
res["energy_saving"].to_csv(snakemake.output.esav, index=False)  # noqa: F821
wall = time.perf_counter() - t0
json.dump({"thm1": wall}, open(snakemake.output.timing, "w"))  # noqa: F821
print(f"theorem 1: {len(res['cells'])} cells in {wall:.1f} s")
