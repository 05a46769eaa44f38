"""Full-scale reproduction of the paper's BF-IO rows (Tables 1 and 2, oracle
predictor, fast solver, free admission as the tables used) with the project's
default objective (``bfio.solvers.objective``): every cell equal to the printed
value at printed precision, or better (``bfio.runs.paper.at_least_as_good``); and the
plateau over H that the discount is for."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from bfio.pipeline.config import validate_config
from bfio.runs.experiments import experiment_seeds
from bfio.runs.paper import PAPER_BFIO_OPTIONS, TABLE_SETTINGS, at_least_as_good, round_like
from bfio.runs.paper_tables import AUTHORS_SIMULATOR
from bfio.lookahead.run_keys import row_key
from bfio.pipeline.plateau import plateau, within_plateau
from bfio.runs.run import RunSpec
from bfio.runs.runner import simulate_run
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

# Cells the spec (../shared/spec/semantics.md, "BF-IO") reports out of reach of the print
# even for the authors' released simulator on the same workload (bfio.runs.paper_tables.AUTHORS_SIMULATOR):
# compare with that simulator's value as well (a cell passes if it is at least as good as either).
REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "config.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
ROWS = [(table, H) for table in ("table1", "table2") for H in TABLE_SETTINGS[table]["horizons"]]
_WORKLOADS = {}
_RUNS = {}


def workload(table):
    if table not in _WORKLOADS:
        st = TABLE_SETTINGS[table]
        t = load_trace(st["trace"])
        _WORKLOADS[table] = draw_workload(t.prefill, t.decode, st["requests"], st["seed"])
    return _WORKLOADS[table]


def run(table, horizon, objective="default"):
    key = (table, horizon, objective)
    if key not in _RUNS:
        st = TABLE_SETTINGS[table]
        _RUNS[key] = simulate(workload(table), st["workers"], st["slots"], "bfio", seed=st["seed"],
                              policy_options={**PAPER_BFIO_OPTIONS, "horizon": horizon, "objective": objective})
    return _RUNS[key]


@pytest.mark.slow
@pytest.mark.parametrize("table, horizon", ROWS)
def test_bfio_row_at_least_as_good_as_paper(table, horizon):
    st = TABLE_SETTINGS[table]
    r = run(table, horizon)
    printed = st["values"][row_key("bfio", horizon)]
    alt = AUTHORS_SIMULATOR[table].get(row_key("bfio", horizon), {})
    worse = []
    for metric, value in printed.items():
        scale = st["units"][metric][0]
        ours = r.metrics[metric]
        if at_least_as_good(ours, value, scale, metric):
            continue
        if metric in alt and at_least_as_good(ours, alt[metric], scale, metric):
            continue
        worse.append(f"{metric}: ours {round_like(ours, value, scale)} vs paper {value}"
                     + (f" (authors' simulator {alt[metric]})" if metric in alt else ""))
    assert not worse, f"{table} BF-IO(H={horizon}) worse than the paper: " + "; ".join(worse)


# Measured: at seed 42 alone the imbalance half of the plateau misses on Table 1 (H >= 13 is
# one routing, the discount's reach: 1.62e8, 12.9% above H = 10's 1.44e8). One run is too
# noisy for a 5% criterion: over the horizon sweep's 20 seeds (42, 1..19) the per-seed
# difference H = 40 vs H = 10 ranges from -10.3% to +13.6% (sd 7.0%; seed 42 the second
# largest), mean +1.5% [95% CI -1.8%, +4.8%] (results/tables/horizon_plateau.md); the
# criterion over seeds is test_default_objective_plateaus_over_seeds below.
# Strict: if the single run starts passing, remove this.
PLATEAU_MISSES = {"table1": "seed 42 alone: H=40..100 imbalance 1.62e8 is 13% above H=10's 1.44e8"}


@pytest.mark.slow
@pytest.mark.parametrize("table", [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=PLATEAU_MISSES[t]) if t in PLATEAU_MISSES else ())
    for t in ("table1", "table2")])
def test_default_objective_plateaus_over_the_horizon(table):
    """Each of H = 40..100 within 5% of the best H on imbalance and within 1% on
    throughput (the issue's plateau), where the paper-literal objective degrades."""
    horizons = [0, 10, 20, 40, 60, 100]
    m = {H: run(table, H).metrics for H in horizons}
    best_imb = min(v["avg_imbalance"] for v in m.values())
    best_thr = max(v["throughput"] for v in m.values())
    for H in (40, 60, 100):
        imb_pct = 100 * (m[H]["avg_imbalance"] / best_imb - 1)
        thr_pct = 100 * (m[H]["throughput"] / best_thr - 1)
        assert within_plateau(imb_pct, thr_pct), (H, imb_pct, thr_pct)
    # the printed IO, for contrast: it does not plateau (worse at H = 100 than at H = 20)
    lit = {H: run(table, H, "paper-literal").metrics["avg_imbalance"] for H in (20, 100)}
    assert lit[100] > lit[20]


@pytest.mark.slow
@pytest.mark.parametrize("table", ["table1", "table2"])
def test_default_objective_plateaus_over_seeds(table):
    """The plateau criterion (bfio.pipeline.plateau) on the mean over the horizon sweep's seeds
    (config/config.yaml: ``seeds`` plus ``horizon_sweep.extra_seeds``), paired by seed
    against the H with the best mean; each seed draws its own workload, as the pipeline's
    runs do (bfio.runs.runner.build_workload)."""
    cfg = validate_config(yaml.safe_load(CONFIG.read_text()), SCHEMA)
    seeds = experiment_seeds(cfg, "horizon_sweep")
    st = TABLE_SETTINGS[table]
    frame = load_trace(st["trace"]).to_frame()
    recs = []
    for H in (0, 10, 40, 100):
        for seed in seeds:
            spec = RunSpec(st["trace"], st["requests"], st["workers"], st["slots"], row_key("bfio", H), seed)
            m = simulate_run(spec.with_bfio_defaults(PAPER_BFIO_OPTIONS), frame).metrics
            recs.append({"row": spec.row, "horizon": H, "objective": "default", "workers": spec.workers, "seed": seed,
                         "avg_imbalance": m["avg_imbalance"], "throughput": m["throughput"]})
    out = plateau(pd.DataFrame(recs), ref_seed=seeds[0])
    long = out[(out["objective"] == "default") & out["long"]]
    assert len(long) == 2 and long["met_mean"].all(), long.to_string()
