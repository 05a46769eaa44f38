"""The objective study's grid, scores and recommendation (bfio.studies.objective_study, objective_scores, objective_summary)."""

import numpy as np
import pandas as pd
import pytest

from bfio.ground.errors import ConfigError
from bfio.lookahead.discount import OBJECTIVES
from bfio.studies.objective_scores import recommend, scores
from bfio.studies.objective_study import choose_variants, confirm_variants
from bfio.studies.objective_summary import summarize_confirm

CHOOSE = {"new_requests": ["predicted", "persist"], "horizons": [0, 10, 40], "discounts": [1.0, 0.7, 0.5]}


def test_choose_grid_has_h0_once_per_model_and_every_setting():
    v = choose_variants(CHOOSE)
    assert len(v) == 2 * (1 + 2 * 3)
    assert {(x["discount"], x["new_requests"], x["horizon"]) for x in v.values() if x["horizon"] == 0} == \
        {(1.0, "predicted", 0), (1.0, "persist", 0)}
    assert all(x["policy"] == "bfio" for x in v.values())


def test_confirm_pairs_the_recommendation_with_paper_literal():
    v = confirm_variants({"horizons": [20, 100]}, {"discount": 0.6, "new_requests": "predicted"})
    names = sorted((x["objective_name"], x["horizon"]) for x in v.values())
    assert names == [("default", 20), ("default", 100), ("paper-literal", 20), ("paper-literal", 100)]
    lit = [x for x in v.values() if x["objective_name"] == "paper-literal"][0]
    assert (lit["discount"], lit["new_requests"]) == (OBJECTIVES["paper-literal"]["discount"],
                                                      OBJECTIVES["paper-literal"]["new_requests"])


def _synthetic(rng, effect):
    """Runs whose imbalance is H=0's times effect[(delta, model)] (plus noise)."""
    rows = []
    for trace in ("a", "b"):
        for seed in (1, 2):
            base = rng.uniform(1e4, 1e5)
            for label, v in choose_variants(CHOOSE).items():
                f = 1.0 if v["horizon"] == 0 else effect[(v["discount"], v["new_requests"])]
                rows.append({"trace": trace, "workers": 8, "seed": seed, "row": label, "horizon": v["horizon"],
                             "discount": v["discount"], "new_requests": v["new_requests"],
                             "avg_imbalance": base * f * rng.uniform(0.99, 1.01), "throughput": 1000.0 / f})
    return pd.DataFrame(rows)


def test_recommendation_follows_the_scores():
    rng = np.random.default_rng(0)
    effect = {(d, m): 1.0 + abs(d - 0.7) + (0.1 if m == "persist" else 0.0)
              for d in CHOOSE["discounts"] for m in CHOOSE["new_requests"]}
    runs = _synthetic(rng, effect)
    sc = scores(runs)
    assert sc.iloc[0][["discount", "new_requests"]].tolist() == [0.7, "predicted"]
    assert sc["imbalance_score"].is_monotonic_increasing
    rec = recommend(runs, 1.0)
    assert (rec["discount"], rec["new_requests"]) == (0.7, "predicted")
    # a throughput cost beyond the tolerance disqualifies the best imbalance
    runs.loc[(runs["discount"] == 0.7) & (runs["new_requests"] == "predicted"), "throughput"] *= 0.8
    assert (recommend(runs, 1.0)["discount"], recommend(runs, 1.0)["new_requests"]) != (0.7, "predicted")


def test_scores_need_the_h0_reference():
    rng = np.random.default_rng(1)
    runs = _synthetic(rng, {(d, m): 1.0 for d in CHOOSE["discounts"] for m in CHOOSE["new_requests"]})
    with pytest.raises(ConfigError, match="horizons"):
        scores(runs[runs["horizon"] > 0])


def test_confirm_summary_pairs_by_seed():
    rows = []
    for seed in (1, 2, 3):
        for name, imb in (("default", 100.0 * seed), ("paper-literal", 300.0 * seed)):
            rows.append({"trace": "a", "workers": 4, "horizon": 20, "seed": seed, "objective_name": name,
                         "discount": 0.6 if name == "default" else 1.0, "new_requests": "predicted",
                         "avg_imbalance": imb, "throughput": 10.0, "tpot": 1.0, "energy_j": 5.0})
    out = summarize_confirm(pd.DataFrame(rows))
    d = out[out["objective_name"] == "default"].iloc[0]
    assert d["imbalance_ratio_mean"] == pytest.approx(3.0) and d["n_pairs"] == 3
