"""Predictions as they really are (issue 29): error models (uniform, log-normal,
bucket), the Kaplan-Meier fit of the error ratio with censoring, and BF-IO
reading an erring estimate through it (option ``remaining``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.predictors import (BUCKET_EDGES, BUCKET_VALUES, RATIO_GRID, BucketPredictor, LogNormalPredictor,
                             PosteriorPredictor, kaplan_meier, ratio_bin, ratio_mean)


def test_lognormal_error_is_median_unbiased_and_seeded():
    o = np.full(20_000, 400)
    a = LogNormalPredictor(0.5, seed=3).decode_estimate(o)
    assert np.array_equal(a, LogNormalPredictor(0.5, seed=3).decode_estimate(o))
    assert not np.array_equal(a, LogNormalPredictor(0.5, seed=4).decode_estimate(o))
    assert np.median(a / o) == pytest.approx(1.0, abs=0.02)
    assert np.std(np.log(a / o)) == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize("accuracy", [1.0, 0.7, 0.5])
def test_bucket_classifier_is_right_with_its_accuracy_else_a_neighbour(accuracy):
    rng = np.random.default_rng(0)
    o = rng.integers(1, 3000, 40_000)
    est = BucketPredictor(accuracy, seed=1).decode_estimate(o)
    true = np.searchsorted(np.asarray(BUCKET_EDGES), o, side="left")
    reported = np.searchsorted(np.asarray(BUCKET_VALUES), est)
    assert set(np.unique(est)) <= set(BUCKET_VALUES)
    assert np.mean(reported == true) == pytest.approx(accuracy, abs=0.01)
    assert np.all(np.abs(reported - true) <= 1)  # misclassified: a neighbouring bucket only


def test_kaplan_meier_matches_the_textbook_estimate_with_censoring():
    # events at bins 1, 3; censored at bin 2: at risk 3, then 2 (bin 2 censor still at risk), then 1
    events = np.array([0, 1, 0, 1, 0])
    censored = np.array([0, 0, 1, 0, 0])
    s = kaplan_meier(events, censored)
    assert s.tolist() == pytest.approx([1.0, 1.0, 2 / 3, 2 / 3, 0.0, 0.0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.05, 20.0), min_size=1, max_size=200))
def test_kaplan_meier_without_censoring_is_the_empirical_survival(ratios):
    r = np.asarray(ratios)
    s = kaplan_meier(np.bincount(ratio_bin(r), minlength=RATIO_GRID.shape[0] - 1), np.zeros(RATIO_GRID.shape[0] - 1,
                                                                                              dtype=np.int64))
    for k in (0, len(RATIO_GRID) // 3, len(RATIO_GRID) // 2, len(RATIO_GRID) - 1):
        # S at edge k = share of ratios in bins >= k
        assert s[k] == pytest.approx(np.mean(ratio_bin(r) >= k) if k < len(RATIO_GRID) - 1 else 0.0)
    assert 0.0 <= ratio_mean(s) <= RATIO_GRID[-1]


def test_exact_estimates_give_a_ratio_near_one():
    s = kaplan_meier(np.bincount(ratio_bin(np.ones(100)), minlength=RATIO_GRID.shape[0] - 1),
                     np.zeros(RATIO_GRID.shape[0] - 1, dtype=np.int64))
    assert ratio_mean(s) == pytest.approx(1.0, rel=0.02)


def test_remaining_option_builds_the_reading_it_names():
    assert isinstance(make_policy("bfio", predictor="noisy").predictor, PosteriorPredictor)  # the default
    assert not isinstance(make_policy("bfio", predictor="noisy", remaining="paper").predictor, PosteriorPredictor)
    # the exact backends need integer loads: the paper's reading by default there
    assert make_policy("bfio", predictor="noisy", solver="highs").option_values["remaining"] == "paper"
    with pytest.raises(ConfigError, match="solver"):
        make_policy("bfio", predictor="lognormal", remaining="posterior", solver="highs")
    assert make_policy("bfio", predictor="bucket").describe()["remaining"] == "posterior"
    assert "remaining" not in make_policy("bfio").describe()  # the oracle: nothing to read


def _metrics(trace_frame, seed, **options):
    from bfio.runs.run import RunSpec
    from bfio.runs.runner import simulate_run

    opts = {"horizon": 20, "admission": "free", **options}
    spec = RunSpec("burstgpt", 6000, 8, 72, "bfio_h20", seed, options=tuple(sorted(opts.items())))
    return simulate_run(spec, trace_frame).metrics


def test_posterior_reading_beats_no_prediction_where_the_paper_reading_loses(data_dir):
    """Issue 29's finding, on BurstGPT (G = 8, H = 20, free admission, 3 seeds):
    with the paper's noisy estimate at d = 0.5 the paper's reading r = o_hat - tau
    is worse than no prediction at all; read through the learned error
    distribution it is better than no prediction, and the oracle better still."""
    from bfio.traces import load_trace

    frame = load_trace("burstgpt", data_dir=data_dir).to_frame()
    noisy = {"predictor": "noisy", "noise_low": 0.5, "noise_high": 0.5}
    mean = {}
    for name, opts in {"none": {"predictor": "none"}, "posterior": noisy, "paper": {**noisy, "remaining": "paper"},
                       "oracle": {}}.items():
        runs = [_metrics(frame, seed, **opts) for seed in (1, 2, 3)]
        mean[name] = {m: np.mean([r[m] for r in runs]) for m in ("avg_imbalance", "throughput")}
    assert mean["paper"]["avg_imbalance"] > mean["none"]["avg_imbalance"]  # the finding
    assert mean["oracle"]["avg_imbalance"] < mean["posterior"]["avg_imbalance"] < mean["none"]["avg_imbalance"]
    assert mean["posterior"]["throughput"] >= mean["none"]["throughput"]


def test_prompt_survival_learns_per_prompt_bucket_with_censoring():
    """Two prompt buckets with different decode lengths: each active request is
    read with its own bucket's Kaplan-Meier survival, and a running request
    counts as censored (it keeps the survival at its age from dropping to 0)."""
    from types import SimpleNamespace

    from bfio.predictors import MIN_EVENTS, PromptSurvivalPredictor
    from bfio.workloads.workload import Workload

    n = 2 * MIN_EVENTS + 2
    prefill = np.array([100] * MIN_EVENTS + [2000] * MIN_EVENTS + [100, 2000])
    decode = np.array([5] * MIN_EVENTS + [50] * MIN_EVENTS + [60, 60])
    work = Workload(prefill, decode)
    generated = np.zeros(n, dtype=np.int64)
    generated[-2:] = 3  # the two running requests, one per bucket, 3 tokens in
    state = SimpleNamespace(workload=work, completed=np.arange(2 * MIN_EVENTS), generated=generated,
                            slot_request=np.array([[n - 2], [n - 1]]))
    loads = PromptSurvivalPredictor().expected_loads(state, 4)
    # short-prompt bucket: every completion at 5, so a request at tau = 3 is active at h = 0, 1 only
    assert loads[0].tolist() == pytest.approx([103, 104, 0, 0, 0])
    # long-prompt bucket: completions at 50, so it stays over the window
    assert loads[1].tolist() == pytest.approx([2003, 2004, 2005, 2006, 2007])
