"""The goodput study (issue 44): one bisection per router and setting, its table."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from bfio.studies.goodput import SLO
from bfio.studies.goodput_study import run_goodput, setting_slo
from bfio.studies.goodput_summary import goodput_markdown, headroom_recovered, seeds_ahead, summarize_goodput


def test_goodput_study_runs_every_router_and_tabulates(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"prefill_tokens": rng.integers(10, 2000, 500), "decode_tokens": rng.integers(5, 150, 500)})
    setting = {"trace": "t", "requests": 200, "workers": 2}
    section = {"central": ["fcfs"], "instant": ["sglang_total_tokens", "bfio_h3_instant"],
               "variants": {"bfio_h3_instant": {"policy": "bfio", "horizon": 3}}, "slo": {"ttft_p99_s": 0.2,
                                                                                "tpot_p99_s": 0.05},
               "rel_tol": 0.1}
    runs = run_goodput("s", setting, section, [0, 1], 8, frame)
    routers = ["fcfs", "sglang_total_tokens", "bfio_h3_instant", "balanced", "divisible"]
    assert list(runs["row"]) == [r for r in routers for _ in (0, 1)]  # one row per router (reference) and seed
    assert list(runs["seed"]) == [0, 1] * 5
    assert list(runs["dispatch"]) == ["central"] * 2 + ["instant"] * 4 + ["central"] * 4
    assert list(runs["reference"]) == ["none"] * 6 + ["balanced"] * 2 + ["divisible"] * 2
    assert (runs.loc[runs["reference"] != "none", "policy"] == "fcfs").all()
    assert (runs["goodput_rps"] <= runs["capacity_rps"]).all() and (runs["goodput_rps"] >= 0).all()
    assert (runs["sim_wall_s"] > 0).all()  # the pipeline's script sums it
    for _, r in runs.iterrows():
        probes = json.loads(r["probes"])
        met = [p[0] for p in probes if p[3]]
        assert r["goodput_rps"] == (max(met) if met else 0.0)
    s = summarize_goodput(runs)
    assert len(s) == 5 and (s["n_seeds"] == 2).all()
    assert list(s["reference"][:2]) == ["balanced", "divisible"]  # the references first
    for _, r in s.iterrows():  # the mean of the seeds' own bisections, inside its interval
        seeds = runs[runs["row"] == r["row"]]["goodput_rps"]
        assert np.isclose(r["goodput_rps"], seeds.mean())
        assert r["goodput_ci_lo"] <= r["goodput_rps"] <= r["goodput_ci_hi"]
    assert s["vs_best_pct"].max() == 0.0 and s["vs_best_pct"][:2].isna().all()
    routers_s = s[s["reference"] == "none"]
    bound = s.loc[s["reference"] == "balanced", "goodput_rps"].iloc[0]
    assert np.allclose(routers_s["headroom_balanced_rps"], bound - routers_s["goodput_rps"])
    md = goodput_markdown(s, {"s": setting}, "Goodput")
    assert "capacity" in md and "SGLang" in md and "p99 queue wait" in md and "BF-IO (H=3) (instant)" in md
    assert "2 seeds" in md and "95%" in md and "balanced bound" in md and "headroom to balanced bound" in md


def test_a_setting_slo_overrides_the_sections_targets():
    section = {"slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.2}}
    assert setting_slo({"slo": {"ttft_p99_s": 6.0}}, section) == SLO(6.0, 0.2)
    assert setting_slo({}, section) == SLO(2.0, 0.2)
    assert setting_slo({}, {}) == SLO()


def _seed_rows(row, policy, dispatch, goodputs, capacity=100.0, predictor=""):
    return [{"setting": "s", "regime": "paper", "trace": "t", "requests": 10, "workers": 2, "slots": 4, "row": row,
             "dispatch": dispatch, "policy": policy, "predictor": predictor, "report_interval": 0,
             "horizon": 20.0 if policy == "bfio" else float("nan"), "seed": i, "goodput_rps": g,
             "capacity_rps": capacity, "goodput_share": g / capacity, "at_capacity": g == capacity,
             "ttft_metric": "queue_wait_s_p99_steady", "ttft_slo_s": 2.0, "tpot_slo_s": 0.2, "n_seeds": 1,
             "sim_wall_s": 1.0, "probes": "[]"} for i, g in enumerate(goodputs)]


def test_headroom_recovered_is_paired_over_the_seeds():
    runs = pd.DataFrame(_seed_rows("vllm_dp", "vllm_dp", "instant", [60.0, 80.0, 70.0])
                        + _seed_rows("bfio_h20_ps", "bfio", "central", [70.0, 95.0, 85.0], predictor="prompt_survival"))
    s = summarize_goodput(runs)
    rec = headroom_recovered(s)
    assert rec["bfio"]["row"] == "bfio_h20_ps" and rec["best_router"]["row"] == "vllm_dp"
    assert np.isclose(rec["recovered"], (250 / 3 - 70.0) / (100.0 - 70.0))  # on the means
    shares = [(70 - 60) / 40, (95 - 80) / 20, (85 - 70) / 30]  # each seed against its own router run
    lo, hi = rec["recovered_ci"]
    assert lo < np.mean(shares) < hi
    md = goodput_markdown(s, {}, "Goodput")
    assert "prompt_survival lengths" in md and "paired" in md


def _reference_rows(name, goodputs, capacity=100.0):
    return [{**r, "reference": name, "policy": "fcfs"} for r in _seed_rows(name, "fcfs", "central", goodputs, capacity)]


def test_headroom_to_the_balanced_bound_is_paired_and_its_violations_counted():
    routers = (_seed_rows("vllm_dp", "vllm_dp", "instant", [60.0, 80.0, 70.0])
               + _seed_rows("bfio_h20_ps", "bfio", "central", [70.0, 95.0, 85.0], predictor="prompt_survival"))
    runs = pd.DataFrame([{**r, "reference": "none"} for r in routers]
                        + _reference_rows("balanced", [80.0, 90.0, 90.0]) + _reference_rows("divisible", [100.0] * 3))
    s = summarize_goodput(runs)
    rec = headroom_recovered(s)
    assert rec["bound"]["row"] == "balanced"
    assert np.isclose(rec["recovered_bound"], (250 / 3 - 70.0) / (260 / 3 - 70.0))  # on the means
    assert np.isclose(rec["recovered"], (250 / 3 - 70.0) / (100.0 - 70.0))  # the capacity's, kept
    shares = [(70 - 60) / (80 - 60), (95 - 80) / (90 - 80), (85 - 70) / (90 - 70)]  # each seed its own bound
    lo, hi = rec["recovered_bound_ci"]
    assert lo < np.mean(shares) < hi and rec["bound_seeds"] == 3
    above = s.set_index("row")["seeds_above_bound"]
    assert above["bfio_h20_ps"] == 1 and above["vllm_dp"] == 0  # 95 > 90 on the second seed
    md = goodput_markdown(s, {}, "Goodput")
    assert "**Exceeded** on 1 of 6 router runs" in md and "divisible reference" in md
    assert "to the balanced bound" in md and "to the capacity" in md


def test_no_goodput_anywhere_reads_as_not_applicable():
    runs = pd.DataFrame(_seed_rows("vllm_dp", "vllm_dp", "instant", [0.0, 0.0])
                        + _seed_rows("bfio_h20", "bfio", "central", [0.0, 0.0], predictor="oracle"))
    md = goodput_markdown(summarize_goodput(runs), {}, "Goodput")
    assert "nan" not in md and "n/a" in md and "true lengths (oracle)" in md
    # a reference with goodput (requests split) does not make it a section where routers have some
    routers = runs.assign(reference="none")
    md = goodput_markdown(summarize_goodput(pd.concat([routers, pd.DataFrame(
        _reference_rows("balanced", [0.0, 0.0]) + _reference_rows("divisible", [50.0, 60.0]))])), {}, "Goodput")
    assert "No router has any goodput here." in md and "recovering" not in md


def _with_probes(rows, brackets):
    """``rows`` with each seed's probes: met at the bracket's low end, failed at its high end."""
    return [{**r, "goodput_rps": lo, "probes": json.dumps([[100.0, 9.0, 0.1, False], [lo, 1.0, 0.1, True],
                                                           [hi, 3.0, 0.1, False]])}
            for r, (lo, hi) in zip(rows, brackets)]


def test_bfio_rows_count_the_seeds_ahead_of_the_best_router_beyond_the_brackets():
    router = _with_probes(_seed_rows("vllm_dp", "vllm_dp", "instant", [0.0] * 3), [(60, 62), (80, 82), (70, 72)])
    bfio = _with_probes(_seed_rows("bfio_h20_ps", "bfio", "central", [0.0] * 3, predictor="prompt_survival"),
                        [(62, 64), (81, 83), (75, 77)])  # ahead, inside the router's bracket, ahead
    s = summarize_goodput(pd.DataFrame(router + bfio))
    rec = headroom_recovered(s)
    rows = s.set_index("row")
    assert seeds_ahead(rows.loc["bfio_h20_ps"], rec["best_router"]) == (2, 3)
    assert seeds_ahead(rows.loc["vllm_dp"], rows.loc["bfio_h20_ps"]) == (0, 3)
    md = goodput_markdown(s, {}, "Goodput")
    assert "seeds ahead of the best router, beyond the brackets" in md and re.search(r"\|\s*2 of 3\s*\|", md)
    no_brackets = rows.loc["bfio_h20_ps"].drop("seed_brackets")  # a summary written before the brackets
    assert seeds_ahead(no_brackets, rec["best_router"]) == (0, 0)


def test_a_headroom_below_one_bracket_is_not_shared_out():
    """A best router within one bisection bracket of the balanced bound leaves no
    resolved headroom: the shares of it are left blank and the sentence says why."""
    routers = (_seed_rows("vllm_dp", "vllm_dp", "instant", [89.5, 89.5, 89.5])
               + _seed_rows("bfio_h20_ps", "bfio", "central", [90.0, 90.0, 90.0], predictor="prompt_survival"))
    runs = pd.DataFrame([{**r, "reference": "none"} for r in routers] + _reference_rows("balanced", [90.0] * 3))
    s = summarize_goodput(runs)
    fine = goodput_markdown(s, {}, "Goodput", rel_tol=0.001)  # 0.1 req/s: the 0.5 req/s of headroom is resolved
    coarse = goodput_markdown(s, {}, "Goodput", rel_tol=0.01)  # 1 req/s: it is not
    assert "+100%" in fine and "headroom is not resolved" not in fine
    assert "+100%" not in coarse and "within one bisection bracket (1% of the capacity)" in coarse
