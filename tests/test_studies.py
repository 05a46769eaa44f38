"""The study layer: row resolution, arrival specs, paired effects over seeds."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from bfio.errors import ConfigError
from bfio.run import ArrivalSpec, RunSpec, resolve_row
from bfio.studies import paired_effect, summarize_runs


def test_resolve_row_paper_keys_and_variants():
    assert resolve_row("fcfs") == ("fcfs", {})
    assert resolve_row("bfio_h40", bfio_defaults={"solver": "fast"}) == ("bfio", {"solver": "fast", "horizon": 40})
    variants = {"noisy": {"policy": "bfio", "horizon": 40, "predictor": "noisy"}}
    policy, opts = resolve_row("noisy", variants, {"solver": "fast", "predictor": "oracle"})
    assert policy == "bfio" and opts == {"solver": "fast", "predictor": "noisy", "horizon": 40}
    with pytest.raises(ConfigError, match="variants.bad"):
        resolve_row("bad", {"bad": {"horizon": 1}})


@pytest.mark.parametrize("bad, key", [({"mode": "uniform"}, "arrival.mode"), ({"mode": "poisson"}, "arrival.rate"),
                                      ({"mode": "trace", "time_scale": 0}, "arrival.time_scale")])
def test_arrival_spec_errors_name_the_key(bad, key):
    with pytest.raises(ConfigError, match=key):
        ArrivalSpec.from_config(bad)


def test_arrival_labels_are_distinct():
    labels = {ArrivalSpec.from_config(d).label for d in
              ["backlog", {"mode": "poisson", "rate": 10}, {"mode": "poisson", "rate": 20},
               {"mode": "trace", "time_scale": 1}, {"mode": "trace", "time_scale": 0.1}]}
    assert len(labels) == 5


def test_study_run_needs_requests_unless_replaying():
    with pytest.raises(ConfigError, match="requests"):
        RunSpec.make("x", None, 4, 8, "fcfs", 0)
    RunSpec.make("x", None, 4, 8, "fcfs", 0, arrival={"mode": "trace"})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1, 1e6), st.floats(1, 1e6)), min_size=1, max_size=6))
def test_paired_effect_pairs_by_seed(pairs):
    rows = []
    for seed, (b, t) in enumerate(pairs):
        rows += [{"g": 1, "row": "base", "seed": seed, "m": b}, {"g": 1, "row": "new", "seed": seed, "m": t}]
    # an unpaired seed of the target must not enter the effect
    rows.append({"g": 1, "row": "new", "seed": 999, "m": 1.0})
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=0)
    out = paired_effect(frame, ["g"], "base", "new", "m", "saving_pct").iloc[0]
    expect = np.mean([100 * (1 - t / b) for b, t in pairs])
    assert out["n_seeds"] == len(pairs)
    assert out["saving_pct_mean"] == pytest.approx(expect)
    if len(pairs) > 1:
        assert out["saving_pct_ci_lo"] <= expect <= out["saving_pct_ci_hi"]


def test_summarize_runs_rejects_unknown_metric():
    with pytest.raises(ConfigError, match="nope"):
        summarize_runs(pd.DataFrame({"row": ["a"], "seed": [1], "m": [1.0]}), ["row"], ["nope"])
