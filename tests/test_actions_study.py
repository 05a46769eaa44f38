"""The actions study (issue 45): study variants that declare actions after binding,
their goodput rows with action counts, the table's labels and the figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from bfio.ground.errors import ConfigError
from bfio.ground.metrics import action_metrics
from bfio.runs.run import RunSpec, resolve_row, variant_actions
from bfio.studies.actions_study import plan, validate_section
from bfio.studies.goodput_study import run_goodput
from bfio.studies.goodput_summary import goodput_markdown, summarize_goodput

VARIANTS = {"vllm_dp_roll": {"policy": "vllm_dp", "report_interval": 2, "migration": "roll",
                             "migration_options": {"threshold": 1, "kv": "transfer"}},
            "sglang_moves": {"policy": "sglang_total_tokens", "queue_moves": "sglang_balancer"}}


def test_a_variants_actions_are_run_fields_not_policy_options():
    assert variant_actions("vllm_dp_roll", VARIANTS) == {"migration": "roll",
                                                         "migration_options": (("kv", "transfer"), ("threshold", 1))}
    assert variant_actions("vllm_dp", VARIANTS) == {}
    policy, opts = resolve_row("vllm_dp_roll", VARIANTS)
    assert (policy, opts) == ("vllm_dp", {"report_interval": 2})
    run = RunSpec.make("t", 10, 2, 4, "vllm_dp_roll", 1, arrival={"mode": "poisson", "rate": 5.0},
                       dispatch="instant", variants=VARIANTS)
    assert (run.migration, run.migration_options, run.queue_moves) == ("roll", (("kv", "transfer"), ("threshold", 1)),
                                                                        "none")
    with pytest.raises(ConfigError, match="needs dispatch 'instant'"):
        RunSpec.make("t", 10, 2, 4, "sglang_moves", 1, variants=VARIANTS)
    with pytest.raises(ConfigError, match="variants.bad.migration_options"):
        variant_actions("bad", {"bad": {"policy": "vllm_dp", "migration": "roll", "migration_options": 3}})


def test_action_metrics_count_every_action_and_the_wasted_tokens():
    m = {"queue_move_count": 3, "rank_pauses": 1, "migrations": 2, "migration_queue_moves": 4,
         "migration_recomputed_tokens": 500, "migration_transfer_tokens": float("nan")}
    assert action_metrics(m, 2000) == {"actions_per_1k_requests": 5.0, "wasted_tokens": 500.0}
    assert action_metrics({}, 10) == {"actions_per_1k_requests": 0.0, "wasted_tokens": 0.0}


def _config(**section):
    return {"actions": {"settings": [{"name": "a", "trace": "burstgpt", "requests": 10, "workers": 2}],
                        "central": [], "instant": ["vllm_dp", "vllm_dp_roll"], "variants": VARIANTS, **section}}


def test_the_sections_errors_name_the_key():
    config = _config()
    validate_section(config["actions"], config)
    bad = _config(variants={"vllm_dp_roll": {"policy": "vllm_dp", "migration": "teleport"}})
    with pytest.raises(ConfigError, match="actions.variants.vllm_dp_roll.migration.*teleport.*roll"):
        validate_section(bad["actions"], bad)
    central = _config(central=["vllm_dp_roll"])
    with pytest.raises(ConfigError, match="actions need instant dispatch"):
        validate_section(central["actions"], central)
    with pytest.raises(ConfigError, match="actions.regimes.0"):
        regimes = _config(regimes=[{"name": "x", "prefill": {"chunk_tokenz": 4}}])
        validate_section(regimes["actions"], regimes)
    with pytest.raises(ConfigError, match="actions.settings.a.regimes"):
        plan(_config(settings=[{"name": "a", "trace": "burstgpt", "requests": 10, "workers": 2,
                                "regimes": ["calibrated"]}]))
    assert list(plan(_config())) == ["a_paper"]


def test_goodput_rows_with_actions_carry_their_counts_and_labels():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"prefill_tokens": rng.integers(10, 2000, 500), "decode_tokens": rng.integers(5, 150, 500)})
    setting = {"trace": "t", "requests": 200, "workers": 2}
    section = {"central": [], "instant": ["vllm_dp", "vllm_dp_roll"], "variants": VARIANTS,
               "slo": {"ttft_p99_s": 0.2, "tpot_p99_s": 0.05}, "rel_tol": 0.1}
    runs = run_goodput("s", setting, section, [0, 1], 8, frame)
    with_actions = runs["row"] == "vllm_dp_roll"
    assert runs.loc[with_actions, "actions"].map(json.loads).tolist() == [{"migration": "roll"}] * 2
    assert runs.loc[~with_actions, "actions"].isna().all()
    counts = runs.loc[with_actions, "actions_per_1k_requests"]
    assert ((counts >= 0) | counts.isna()).all() and runs.loc[~with_actions, "actions_per_1k_requests"].isna().all()
    summary = summarize_goodput(runs)
    md = goodput_markdown(summary, {"s": setting}, "Actions")
    assert "vLLM DP, reports every 2 steps (instant) + ROLL migrations" in md
    assert "actions per 1,000 requests at its goodput" in md
    # a goodput study without actions writes what it always did: no action column
    plain = run_goodput("s", setting, {**section, "instant": ["vllm_dp"]}, [0], 8, frame)
    assert not {"actions", "actions_per_1k_requests", "wasted_tokens"} & set(plain.columns)
    assert "actions per 1,000" not in goodput_markdown(summarize_goodput(plain), {"s": setting}, "Goodput")


def _summary():
    rows = []
    for row, policy, actions, g in (("vllm_dp", "vllm_dp", None, 10.0), ("vllm_dp_roll", "vllm_dp",
                                    '{"migration": "roll"}', 12.0), ("bfio_x", "bfio", None, 14.0)):
        for seed, d in ((1, -0.5), (2, 0.5)):
            rows.append({"setting": "s", "regime": "paper", "trace": "burstgpt", "requests": 100, "workers": 4,
                         "slots": 8, "row": row, "dispatch": "instant", "policy": policy, "reference": "none",
                         "predictor": "", "report_interval": 0, "horizon": 20.0 if policy == "bfio" else np.nan,
                         "seed": seed, "goodput_rps": g + d, "capacity_rps": 20.0, "at_capacity": False,
                         "ttft_metric": "queue_wait_s_p99", "ttft_slo_s": 2.0, "tpot_slo_s": 0.2, "n_seeds": 1,
                         "sim_wall_s": 1.0, "probes": "[]", "actions": actions,
                         "actions_per_1k_requests": 2.0 if actions else np.nan,
                         "wasted_tokens": 10.0 if actions else np.nan})
    rows += [{**rows[0], "row": "balanced", "reference": "balanced", "goodput_rps": 18.0, "actions": None, "seed": s}
             for s in (1, 2)]
    return summarize_goodput(pd.DataFrame(rows))


def test_the_figure_hatches_rows_with_actions_and_draws_the_bound():
    from bfio.figures.actions import plot_actions
    from bfio.figures.series import COLOURS, SERIES

    fig = plot_actions(_summary())
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 3  # the routers only; the bound is a line
    labels = [t.get_text() for t in ax.get_yticklabels()]
    hatched = {lab: bar.get_hatch() for lab, bar in zip(labels, bars)}
    assert hatched["vLLM DP + ROLL migrations"] and not hatched["vLLM DP"]
    bfio = [bar for lab, bar in zip(labels, bars) if lab.startswith("BF-IO")]
    assert to_rgb(bfio[0].get_facecolor()) == to_rgb(COLOURS[SERIES["bfio"]["lookahead"].colour])
    assert any(np.allclose(line.get_xdata(), 18.0) for line in ax.get_lines())  # the balanced bound
    assert "G = 4" in ax.get_title() and "N = 100" in ax.get_title()


def test_rows_differing_only_in_their_kv_way_have_their_own_labels():
    """Two BF-IO rows whose migrations differ only in option ``kv`` (recompute by the
    rules' default, ``choose`` declared) get different labels in the goodput table, each
    naming its way; a row without migrations keeps its label; every KV mode has words."""
    from bfio.policies.names import KV_WAY_LABELS
    from bfio.sim.migration_kv import KV_DEFAULTS, KV_MODES
    from bfio.studies.goodput_summary import row_label, with_kv_ways

    assert set(KV_WAY_LABELS) == set(KV_MODES) and KV_DEFAULTS["kv"] == KV_MODES[0] == "recompute"
    variants = {"mig": {"policy": "bfio", "migration": "bfio"},
                "mig_choose": {"policy": "bfio", "migration": "bfio", "migration_options": {"kv": "choose"}},
                "moves": {"policy": "bfio", "queue_moves": "bfio"}}
    base = {"setting": "s", "regime": "paper", "dispatch": "instant", "policy": "bfio", "report_interval": 0,
            "horizon": 20, "predictor": "", "reference": "none"}
    runs = pd.DataFrame([{**base, "row": "mig", "actions": json.dumps({"migration": "bfio"})},
                         {**base, "row": "mig_choose", "actions": json.dumps({"migration": "bfio"})},
                         {**base, "row": "moves", "actions": json.dumps({"queue_moves": "bfio"})}])
    labels = [row_label(r) for r in with_kv_ways(runs, {"variants": variants}).to_dict("records")]
    assert labels[0] != labels[1]
    assert labels[0].endswith(KV_WAY_LABELS["recompute"]) and labels[1].endswith(KV_WAY_LABELS["choose"])
    assert labels[2] == row_label(runs.iloc[2].to_dict())
