"""Full-scale reproduction of the paper's BF-IO rows (Tables 1 and 2, oracle
predictor, fast solver): every cell equal to the printed value at printed
precision, or better (``bfio.paper.at_least_as_good``)."""

import pytest

from bfio.paper import TABLE_SETTINGS, at_least_as_good, round_like
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workload import draw_workload

ROWS = [(table, H) for table in ("table1", "table2") for H in TABLE_SETTINGS[table]["horizons"]]
_WORKLOADS = {}


def workload(table):
    if table not in _WORKLOADS:
        st = TABLE_SETTINGS[table]
        t = load_trace(st["trace"])
        _WORKLOADS[table] = draw_workload(t.prefill, t.decode, st["requests"], st["seed"])
    return _WORKLOADS[table]


@pytest.mark.slow
@pytest.mark.parametrize("table, horizon", ROWS, ids=[f"{t}-H{h}" for t, h in ROWS])
def test_bfio_row_at_least_as_good_as_paper(table, horizon):
    st = TABLE_SETTINGS[table]
    r = simulate(workload(table), st["workers"], st["slots"], "bfio", seed=st["seed"],
                 policy_options={"horizon": horizon, "predictor": "oracle", "solver": "fast"})
    printed = st["values"][f"bfio_h{horizon}"]
    worse = []
    for metric, value in printed.items():
        scale = st["units"][metric][0]
        if not at_least_as_good(r.metrics[metric], value, scale, metric):
            worse.append(f"{metric}: ours {round_like(r.metrics[metric], value, scale)} vs paper {value}")
    assert not worse, f"{table} BF-IO(H={horizon}) worse than the paper: " + "; ".join(worse)
