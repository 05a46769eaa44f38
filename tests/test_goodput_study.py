"""The goodput study (issue 44): one bisection per router and setting, its table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bfio.studies.goodput_study import run_goodput
from bfio.studies.goodput_summary import goodput_markdown, summarize_goodput


def test_goodput_study_runs_every_router_and_tabulates(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"prefill_tokens": rng.integers(10, 2000, 500), "decode_tokens": rng.integers(5, 150, 500)})
    setting = {"trace": "t", "requests": 200, "workers": 2}
    section = {"central": ["fcfs"], "instant": ["sglang_total_tokens", "bfio_h3_instant"],
               "variants": {"bfio_h3_instant": {"policy": "bfio", "horizon": 3}}, "slo": {"ttft_p99_s": 0.2,
                                                                                "tpot_p99_s": 0.05},
               "rel_tol": 0.1}
    runs = run_goodput("s", setting, section, [0, 1], 8, frame)
    assert list(runs["row"]) == ["fcfs", "sglang_total_tokens", "bfio_h3_instant"]
    assert list(runs["dispatch"]) == ["central", "instant", "instant"]
    assert (runs["goodput_rps"] <= runs["capacity_rps"]).all() and (runs["goodput_rps"] >= 0).all()
    assert (runs["sim_wall_s"] > 0).all()  # the pipeline's script sums it
    for _, r in runs.iterrows():
        probes = json.loads(r["probes"])
        met = [p[0] for p in probes if p[3]]
        assert r["goodput_rps"] == (max(met) if met else 0.0)
    s = summarize_goodput(runs)
    assert s["vs_best_pct"].max() == 0.0
    md = goodput_markdown(s, {"s": setting}, "Goodput")
    assert "capacity" in md and "SGLang" in md and "p99 queue wait" in md and "BF-IO (H=3) (instant)" in md
