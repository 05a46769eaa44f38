"""Full-scale reproduction of the paper's BF-IO rows (Tables 1 and 2, oracle
predictor, fast solver): every cell equal to the printed value at printed
precision, or better (``bfio.paper.at_least_as_good``)."""

import pytest

from bfio.paper import PAPER_BFIO_OPTIONS, TABLE_SETTINGS, at_least_as_good, round_like
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workload import draw_workload

# Rows where the IO of Section 4, solved as the spec states it (new requests persist over the
# window), measures worse than the paper's printed row. The paper's numbers come from the authors'
# released heuristic, not from this program (see docs/bfio.md, "Findings"). Strict: if a row starts
# passing, the xfail fails and this list must be updated.
KNOWN_WORSE = {
    ("table1", 20): "imbalance 3.13e8 vs 3.03e8",
    ("table1", 40): "imbalance 4.83e8 vs 2.49e8; J over far offsets trades away next-step balance",
    ("table1", 60): "imbalance 6.18e8 vs 2.44e8",
    ("table1", 80): "imbalance 6.92e8 vs 2.43e8",
    ("table1", 100): "imbalance 8.22e8 vs 2.51e8",
    ("table2", 20): "imbalance 2.12e4 vs 1.65e4",
}
ROWS = [
    pytest.param(table, H, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WORSE[(table, H)])
                 if (table, H) in KNOWN_WORSE else ())
    for table in ("table1", "table2") for H in TABLE_SETTINGS[table]["horizons"]
]
_WORKLOADS = {}


def workload(table):
    if table not in _WORKLOADS:
        st = TABLE_SETTINGS[table]
        t = load_trace(st["trace"])
        _WORKLOADS[table] = draw_workload(t.prefill, t.decode, st["requests"], st["seed"])
    return _WORKLOADS[table]


@pytest.mark.slow
@pytest.mark.parametrize("table, horizon", ROWS)
def test_bfio_row_at_least_as_good_as_paper(table, horizon):
    st = TABLE_SETTINGS[table]
    r = simulate(workload(table), st["workers"], st["slots"], "bfio", seed=st["seed"],
                 policy_options={**PAPER_BFIO_OPTIONS, "horizon": horizon})
    printed = st["values"][f"bfio_h{horizon}"]
    worse = []
    for metric, value in printed.items():
        scale = st["units"][metric][0]
        if not at_least_as_good(r.metrics[metric], value, scale, metric):
            worse.append(f"{metric}: ours {round_like(r.metrics[metric], value, scale)} vs paper {value}")
    assert not worse, f"{table} BF-IO(H={horizon}) worse than the paper: " + "; ".join(worse)
