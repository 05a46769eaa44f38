"""Theorem 4's energy decomposition on every distinct run (rule energy_decomposition;
the check itself is bfio.theory.energy.check_runs)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.runs.tables import distinct_runs, write_table
from bfio.theory.energy import check_runs

NEEDED = ["energy_sync_j", "energy_correction_j", "energy_correction_bound_j", "imbalance_total", "work_total",
          "token_latency_s", "p_idle_w", "p_max_w", "gamma"]

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = distinct_runs((pd.read_csv(p) for p in sm.input), columns=NEEDED)
    result = check_runs(runs)
    write_table(result, sm.output.csv, sm.output.md,
                title="Theorem 4 energy decomposition E = kappa P_max W + kappa P_idle ImbTot + X, "
                      "0 <= X <= kappa D_gamma ImbTot, on every simulated run (whole run, gating loads)")
    log.info("%d runs, %d pass", len(result), int(result["pass"].sum()))
