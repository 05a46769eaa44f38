"""Full-scale reproduction of the FCFS and JSQ rows of the paper's Table 1
(LongBench, N=80,000, seed 42, G=256, B=72) and Table 2 (BurstGPT, N=100,000,
seed 42, G=16, B=72): every cell must equal the printed value to every
printed digit (``../shared/spec/semantics.md``)."""

import pytest

from bfio.runs.paper import TABLE_SETTINGS, matches_printed, round_like
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

CASES = [(table, policy) for table in ("table1", "table2") for policy in ("fcfs", "jsq_tokens")]


@pytest.mark.slow
@pytest.mark.parametrize("table, policy", CASES)
def test_baseline_rows_match_paper_to_printed_digits(table, policy, data_dir):
    cfg = TABLE_SETTINGS[table]
    trace = load_trace(cfg["trace"], data_dir=data_dir)
    w = draw_workload(trace.prefill, trace.decode, cfg["requests"], cfg["seed"])
    m = simulate(w, cfg["workers"], cfg["slots"], policy, seed=cfg["seed"]).metrics
    printed = cfg["values"][policy]
    mismatches = {
        metric: (round_like(m[metric], value, cfg["units"][metric][0]), value)
        for metric, value in printed.items()
        if not matches_printed(m[metric], value, cfg["units"][metric][0])
    }
    assert not mismatches, f"{table} {policy}: (ours, paper) {mismatches}"
