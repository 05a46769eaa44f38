"""Scores of the choose grid and the recommended objective (rule objective_recommend)."""
import pandas as pd

from bfio.progress import script_log
from bfio.results_io import write_json
from bfio.studies.objective_study import recommend

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input], ignore_index=True)
    rec = recommend(runs, float(sm.params.max_throughput_cost_pct))
    runs.to_csv(sm.output.runs, index=False)
    write_json(rec, sm.output.recommendation)
    log.info("recommended %s", rec)
