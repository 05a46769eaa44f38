"""The step-regime study (issue 44): routers ranked under the paper's step and a
calibrated step as the padded-batch coefficient beta grows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bfio.ground.errors import ConfigError
from bfio.studies.step_regime import PAPER, run_step_regime, step_regimes
from bfio.studies.step_regime_summary import ranking_changes, step_regime_markdown, summarize_step_regime

SECTION = {"description": "t", "load": 0.7, "step_model": {"gpu": "a100", "model": "Llama-2-7b-hf"},
           "betas": [0.0, 5.4e-4], "central": ["fcfs", "bfio_h10"], "instant": ["vllm_dp"], "variants": {}}


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"prefill_tokens": rng.integers(50, 2000, n), "decode_tokens": rng.integers(1, 60, n)})


def test_regimes_are_the_paper_step_then_each_beta():
    regimes = step_regimes(SECTION)
    assert [r["name"] for r in regimes] == [PAPER, "beta=0", "beta=0.00054"]
    assert regimes[0]["step_model"] == () and dict(regimes[2]["step_model"])["beta"] == 5.4e-4
    with pytest.raises(ConfigError, match="step_regime.betas.0"):
        step_regimes({**SECTION, "step_model": {"gpu": "tpu"}})


def test_the_study_runs_ranks_and_draws():
    setting = {"trace": "tiny", "requests": 150, "workers": 3}
    runs = run_step_regime("s", setting, SECTION, [1, 2], 8, _frame())
    assert set(runs["regime"]) == {PAPER, "beta=0", "beta=0.00054"} and len(runs) == 3 * 3 * 2
    caps = runs.groupby("regime")["capacity_rps"].first()
    assert caps["beta=0"] > caps["beta=0.00054"]  # the padded batch lengthens every step
    assert np.allclose(runs["offered_rps"], 0.7 * runs["capacity_rps"])
    summary = summarize_step_regime(runs)
    for _, grp in summary.groupby("regime"):
        assert grp["vs_best"].min() == 1.0 and (grp["vs_best"] >= 1.0).all()
        assert sorted(grp["rank"]) == list(range(1, len(grp) + 1)) or grp["rank"].min() == 1
    changes = ranking_changes(summary)
    assert changes.iloc[0]["same_as_paper"]  # the paper regime against itself
    text = step_regime_markdown(summary)
    assert "Ranking as under the paper's step" in text and "beta=0.00054" in text
    from bfio.figures.step_regime import plot_step_regime

    fig = plot_step_regime(summary)
    assert len([ln for ln in fig.axes[0].lines if not ln.get_label().startswith("_")]) == 3  # and the line at 1
