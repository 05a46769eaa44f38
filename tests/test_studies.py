"""The study layer: row resolution, arrival specs, paired effects over seeds."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from bfio.ground.errors import ConfigError
from bfio.runs.run import ArrivalSpec, RunSpec, resolve_row
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


def test_every_builtin_study_runs_on_the_generic_rules_with_its_files():
    """Issue 28: the online, generality and objective studies are generic studies;
    their settings keep the files the pipeline wrote before (one runs file per
    setting, the online saturation runs, the products and tables and figures)."""
    from pathlib import Path

    import yaml

    from bfio.pipeline.config import validate_config
    from bfio.studies.registry import generic_studies, studies

    repo = Path(__file__).resolve().parents[1]
    config = validate_config(yaml.safe_load((repo / "config" / "config.yaml").read_text()),
                             repo / "workflow" / "schemas" / "config.schema.yaml")
    assert set(generic_studies()) == set(studies())
    gen = studies()["generality"]
    files = [gen.run_stem(k, v) for k, v in gen.settings(config).items()]
    assert files[0] == f"{config['generality']['traces'][0]}/g{config['generality']['workers'][0]}_backlog"
    assert "azure_conv/g16_replay" in files and files.index("azure_conv/g16_replay") > files.index(
        "longbench_v1/g256_backlog")  # every backlog job first (the order of runs.csv)
    assert [p.file for p in gen.products] == ["runs.csv"]
    online = studies()["online"]
    names = list(online.settings(config))
    assert [online.run_stem(n, {}) for n in names] == [f"runs_{n}" for n in names]
    assert [online.prepared_stem(n) for n in names] == [f"saturation_{n}" for n in names]
    assert [t.name for t in online.tables] == ["online", "online_routers"]
    assert {f.name: f.table for f in online.figures} == {"online_routers": "online_routers", "online_load": "online",
                                                         "online_replay": "online"}
    obj = studies()["objective_study"]
    settings = obj.settings(config)
    assert obj.directory == "objective" and [obj.run_stem(k, v) for k, v in settings.items()] == list(settings)
    assert list(settings)[0] == f"choose_{config['objective_study']['choose']['traces'][0]}"
    assert [p.file for p in obj.products] == ["choose.csv", "recommendation.json"]
    confirm = [k for k, v in settings.items() if v["stage"] == "confirm"]
    assert all(obj.needs(k, settings[k]) == ["recommendation.json"] for k in confirm)
    assert {f.name: f.table for f in obj.figures} == {"objective_study": "objective", "discount_reach": None}


def test_online_and_generality_checks_run_from_their_studies():
    """The studies' own cross-checks (Study.validate) replace the config's hand-written ones."""
    from pathlib import Path

    import yaml

    from bfio.pipeline.config import validate_config

    repo = Path(__file__).resolve().parents[1]
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    base = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    bad = {**base, "generality": {**base["generality"], "targets": ["bfio_h40", "nope"]}}
    with pytest.raises(ConfigError, match="generality.targets"):
        validate_config(bad, schema)
    bad = {**base, "online": {**base["online"], "reference": "vllm_dp"}}
    with pytest.raises(ConfigError, match="online.reference"):
        validate_config(bad, schema)
