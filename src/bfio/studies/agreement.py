"""Do the fast solver and the exact backends agree? (functions for the pipeline)

Random instances to feed :func:`gap_table` come from
:func:`bfio.solvers.random_instances.random_instance`.

- :func:`capture_instances`: instances of real routing calls of a simulation.
- :func:`gap_table` / :func:`gap_summary`: re-solve instances with every backend
  and tabulate the fast solver's gap to the proven optimum (median, p95, max).
- :func:`simulation_agreement`: whole simulations with ``highs`` and ``fast``
  side by side (metric differences and per-call solver times).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.solvers import solve
from bfio.solvers.instance import Instance
from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

METRICS = ("avg_imbalance", "throughput", "tpot", "energy_j")


def capture_instances(trace: str, workers: int, slots: int, requests: int, horizon: int, *, seed: int = 42,
                      every: int = 1, limit: int | None = None, admission: str = "free") -> list[Instance]:
    """Run BF-IO (fast solver, oracle) and keep the Eq. (IO) instance of every
    ``every``-th routing call (at most ``limit``)."""
    t = load_trace(trace)
    w = draw_workload(t.prefill, t.decode, requests, seed)
    policy = make_policy("bfio", seed=seed, horizon=horizon, admission=admission)
    kept: list[Instance] = []
    count = [0]

    def sink(inst):
        if count[0] % every == 0 and (limit is None or len(kept) < limit) and inst.admissible > 0:
            inst.meta.update({"trace": trace, "workers": workers, "slots": slots, "requests": requests})
            kept.append(inst)
        count[0] += 1

    policy.capture_instances(sink)
    simulate(w, workers, slots, policy, seed=seed)
    return kept


def gap_table(instances, solvers=("highs", "gurobi"), time_limit_s: float = 30.0,
              placement: str = "greedy") -> pd.DataFrame:
    """One row per instance: objective of ``fast`` (with ``placement``) and of each
    exact backend, whether it is proven optimal, and the fast solver's relative gap
    ``(J_fast - J*) / max(J*, 1)`` to the best proven optimum."""
    rows = []
    for k, inst in enumerate(instances):
        fast = solve(inst, "fast", placement=placement)
        row = {"instance": k, "workers": inst.workers, "horizon": inst.horizon, "waiting": inst.waiting,
               "admissible": inst.admissible, "admission": inst.admission, "step": inst.meta.get("step"),
               "trace": inst.meta.get("trace", "random"), "fast_objective": fast.objective,
               "fast_s": fast.wall_s}
        best = None
        for name in solvers:
            try:
                sol = solve(inst, name, time_limit_s=time_limit_s, warm_start=fast)
            except Exception as e:  # unavailable backend: recorded, not fatal
                row[f"{name}_error"] = str(e)
                continue
            row.update({f"{name}_objective": sol.objective, f"{name}_optimal": sol.proven_optimal,
                        f"{name}_gap": sol.gap, f"{name}_s": sol.wall_s})
            if sol.proven_optimal:
                best = sol.objective if best is None else min(best, sol.objective)
        row["optimum"] = best
        row["fast_gap"] = (np.nan if best is None else (fast.objective - best) / max(best, 1))
        rows.append(row)
    return pd.DataFrame(rows)


def gap_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Median, p95 and max of the fast solver's gap (as fractions), by group."""
    t = table.dropna(subset=["fast_gap"])
    groups = t.groupby(["trace", "horizon"]) if "trace" in t else [("all", t)]
    rows = []
    for key, g in list(groups) + [(("all", "all"), t)]:
        gap = g["fast_gap"].to_numpy(float)
        rows.append({"trace": key[0], "horizon": key[1], "instances": len(gap),
                     "optimal_share": float(np.mean(gap <= 0)) if len(gap) else np.nan,
                     "gap_median": float(np.median(gap)) if len(gap) else np.nan,
                     "gap_p95": float(np.percentile(gap, 95)) if len(gap) else np.nan,
                     "gap_max": float(np.max(gap)) if len(gap) else np.nan})
    return pd.DataFrame(rows)


def simulation_agreement(traces=("longbench", "burstgpt"), workers: int = 8, slots: int = 8,
                         requests: int = 2000, horizons=(0, 20), seed: int = 42, solvers=("fast", "highs"),
                         time_limit_s: float = 10.0) -> pd.DataFrame:
    """Whole BF-IO simulations per (trace, H, solver): the paper metrics, wait
    and per-call solver times, plus each metric's relative difference to the
    first solver (``*_rel_diff``)."""
    rows = []
    for trace in traces:
        t = load_trace(trace)
        w = draw_workload(t.prefill, t.decode, requests, seed)
        for H in horizons:
            ref = None
            for solver in solvers:
                r = simulate(w, workers, slots, "bfio", seed=seed,
                             policy_options={"horizon": H, "solver": solver, "time_limit_s": time_limit_s})
                m = r.metrics
                row = {"trace": trace, "workers": workers, "slots": slots, "requests": requests, "horizon": H,
                       "solver": solver, **{k: m[k] for k in METRICS},
                       "solver_s_p50": m.get("solver_s_p50"), "solver_s_p99": m.get("solver_s_p99"),
                       "solver_calls": m.get("solver_calls"),
                       "proven_optimal_frac": m.get("solver_proven_optimal_frac"),
                       "wait_steps_p99": m.get("wait_steps_p99"), "wall_s": r.wall_s}
                if ref is None:
                    ref = row
                for k in METRICS:
                    row[f"{k}_rel_diff"] = (row[k] - ref[k]) / ref[k] if ref[k] else np.nan
                rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["capture_instances", "gap_table", "gap_summary", "simulation_agreement"]
