"""The prefix-cache routers (issue 32): each rule against its source's description,
on hand-built states, and the pinning tpu-inference PR #3307 reports."""

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies.sglang_prefix_match import PREFIX_TOKENS, prefix_rank
from bfio.engine.prefill import PrefillModel
from bfio.engine.prefix import PrefixBlocks
from bfio.workloads.sessions import session_requests
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, with_arrivals

ROUTERS = ["cache_first", "tpu_least_loaded", "sglang_prefix_match", "sgl_cache_aware"]


def _grpo_rollouts(seed=1, groups=2, group_size=8, turns=3, think=0.5, gap=0.0):
    rng = np.random.default_rng(seed)
    s, o = rng.integers(600, 4000, 200), rng.integers(20, 300, 200)
    return session_requests(s, o, sessions=groups * group_size, turns=turns, seed=seed, block_tokens=256,
                            group_size=group_size, think_time_s=think, stream_gap_s=gap)


def _run(w, policy, G=4, B=16, cache=True, **options):
    model = PrefillModel(chunk_tokens=2048, token_s=1e-4, cache_blocks=100_000 if cache else None)
    return simulate(w, G, B, policy, prefill=model, entry="arrivals", dispatch="instant", show_progress=False,
                    policy_options=options or None)


@pytest.mark.parametrize("policy", ROUTERS + ["bfio"])
def test_every_router_completes_and_counts_each_prompt_token_once(policy):
    r = _grpo_rollouts()
    res = _run(r.workload, policy, **({"horizon": 20} if policy == "bfio" else {}))
    q = res.requests
    assert (q["finish_s"] >= q["arrival_s"]).all()
    computed = res.metrics["prefill_tokens_computed"]
    assert computed + int(q["cached_tokens"].sum()) == int(r.workload.prefill.sum())
    assert 0 <= res.metrics["cache_hit_rate"] < 1


def test_cache_first_pins_a_grpo_group_to_the_rank_that_cached_its_prompt():
    """PR #3307: once one stream's prompt is computed on a rank, every later turn of
    every stream of the group probes a hit there, so the group's later turns pin to
    one rank (ties between equally cached ranks go to the first)."""
    r = _grpo_rollouts(think=20.0)  # turns arrive after the earlier ones' prefills ended
    pinned = _run(r.workload, "cache_first").requests
    spread = _run(r.workload, "tpu_least_loaded").requests
    later = r.turn >= 1
    for group in range(2):
        members = (r.session // 8 == group) & later
        assert pinned["queue_worker"][members].nunique() == 1
        assert spread["queue_worker"][members].nunique() > 1


def test_cache_first_pins_a_whole_group_whose_streams_start_one_after_another():
    """PR #3307's run (2 groups of 8 streams, 3 turns each, 4 ranks: "24 reqs,
    ranks=['0'] sticky=True"): streams submitted a second apart find the first
    stream's prompt computed, so every request of a group, first turns included,
    lands on one rank; vLLM's rule, blind to the caches, spreads them."""
    r = _grpo_rollouts(think=20.0, gap=1.0)
    pinned = _run(r.workload, "cache_first").requests["queue_worker"]
    spread = _run(r.workload, "vllm_dp").requests["queue_worker"]
    for group in range(2):
        members = r.session // 8 == group
        assert pinned[members].nunique() == 1
        assert spread[members].nunique() > 1


def test_routers_need_what_they_read():
    w = with_arrivals(Workload(np.full(6, 100), np.full(6, 5)), np.zeros(6))
    for policy in ("sglang_prefix_match", "sgl_cache_aware"):
        with pytest.raises(ConfigError, match="block"):
            simulate(w, 2, 2, policy, entry="arrivals", dispatch="instant", show_progress=False)
    for policy in ("cache_first", "tpu_least_loaded"):
        with pytest.raises(ConfigError, match="prefill"):
            simulate(w, 2, 2, policy, entry="arrivals", dispatch="instant", show_progress=False)


def test_prefix_match_hashes_only_the_first_4k_tokens():
    bt = 512
    head = np.arange(PREFIX_TOKENS // bt, dtype=np.int64)
    a = np.concatenate([head, [100, 101]])
    b = np.concatenate([head, [200]])
    assert prefix_rank(a, bt, 16) == prefix_rank(b, bt, 16)  # same first 4k tokens: same rank
    ranks = {prefix_rank(np.array([h]), bt, 16) for h in range(200)}
    assert len(ranks) == 16  # different prompts spread over the ranks


def test_sgl_cache_aware_follows_its_thresholds():
    """Identical prompts stick to the worker whose tree holds them while loads are
    balanced, and go to the least loaded worker once max - min > abs and max > rel * min."""
    n = 40
    blocks = PrefixBlocks.from_lists([[7, 8, 9]] * n, 16)
    w = with_arrivals(Workload(np.full(n, 48), np.full(n, 400), blocks=blocks), np.zeros(n))
    sticky = simulate(w, 4, 64, "sgl_cache_aware", entry="arrivals", dispatch="instant", show_progress=False)
    assert sticky.requests["queue_worker"].nunique() == 1  # 40 in flight: under the absolute threshold of 64
    low = simulate(w, 4, 64, "sgl_cache_aware", entry="arrivals", dispatch="instant", show_progress=False,
                   policy_options={"balance_abs_threshold": 5})
    counts = np.bincount(low.requests["queue_worker"], minlength=4)
    assert counts.max() < n and (counts > 0).all()


def _term(backlog, slots=None, cached=8, soon=None, requests=(1,), per_rank=4):
    """A :class:`PrefillTerm` over ``len(backlog)`` ranks of 4 slots for prompts of 16 blocks of 256 tokens: rank 0's
    cache holds the first ``cached`` blocks, rank ``g`` has ``backlog[g]`` prefill
    tokens queued; ``soon``: a request prefilling on rank 0 (its blocks are coming)."""
    from bfio.engine.prefill import Prefill
    from bfio.sim.cache_view import CacheView
    from bfio.solvers.terms.prefill import PrefillTerm

    bt = 256
    blocks = PrefixBlocks.from_lists([list(range(16))] * 3, bt)
    w = Workload(np.full(3, 16 * bt), np.full(3, 10), blocks=blocks)
    st = Prefill(PrefillModel(cache_blocks=1000), w, len(backlog), per_rank)
    if cached:
        st.caches[0].insert(blocks.blocks_of(0)[:cached])
    grid = np.full((len(backlog), per_rank), -1) if slots is None else slots
    if soon is not None:
        grid[0, 0] = soon  # seated on rank 0, nothing of its prompt computed yet
        st.admitted(np.array([soon]), np.zeros(3, dtype=np.int64), np.zeros(len(backlog), dtype=np.int64))
    view = CacheView(st, grid, np.asarray(backlog), 1.005e-7)
    return PrefillTerm(view, np.asarray(requests), w.prefill, grid.shape[1])


def test_bfio_weighs_a_cache_hit_against_the_prefill_barrier():
    """Rank 0 holds the first half of a prompt's blocks. BF-IO binds the prompt there
    while no rank has a prefill backlog (the hit halves the work), and to the idle
    rank when rank 0 has the largest backlog: its half raises the barrier every
    rank waits at, the whole prompt on rank 1 raises nothing."""
    now = np.zeros(2, dtype=np.int64)
    for backlog, expect in (((0, 0), 0), ((40_000, 0), 1)):
        assert int(np.argmin(_term(backlog).candidate_costs(0, np.zeros((2, 1)), None, now))) == expect


def test_bfio_counts_a_prompt_being_prefilled_only_for_a_request_that_waits_behind_it():
    """Request 0 is prefilling on rank 0 (no block computed yet). Request 1, the same
    prompt, admitted at once beside it cannot hit those blocks (the cache is matched
    at admission); admitted after a wait, it finds them computed."""
    slots = np.full((2, 4), -1)
    term = _term((0, 0), slots=slots, cached=0, soon=0)
    at_once = term.candidate_costs(0, np.zeros((2, 1)), None, np.array([0, 0]))
    later = term.candidate_costs(0, np.zeros((2, 1)), None, np.array([3, 3]))
    assert at_once[0] > at_once[1]  # rank 0 has request 0's backlog ahead and no hit
    assert later[0] < later[1]  # the blocks are computed when request 1 enters


def test_bfio_prefers_the_shorter_prefill_wait_when_the_barrier_is_equal():
    """No cache hit anywhere and neither rank 1 nor rank 2 would raise the largest
    backlog (rank 0's): the request goes where fewer prefill tokens are ahead of its
    first token, rank 2 (1,000) rather than rank 1 (3,000)."""
    cost = _term((10_000, 3_000, 1_000), cached=0).candidate_costs(0, np.zeros((3, 1)), None,
                                                                   np.zeros(3, dtype=np.int64))
    assert int(np.argmin(cost)) == 2
    assert cost[1] > cost[2]


def test_bfio_does_not_park_a_cached_prompt_behind_a_long_prefill_while_the_others_idle():
    """Rank 0 holds 15 of the prompt's 16 blocks but has the only prefill backlog
    (200,000 tokens): the other ranks idle at its barrier, so computing the whole
    prompt on rank 1 is free there and its first token comes ~50x sooner. When
    every rank is as backlogged (a saturated cluster) the hit is worth its saved
    work and the prompt goes to rank 0."""
    now = np.zeros(3, dtype=np.int64)
    lone = _term((200_000, 0, 0), cached=15, per_rank=72).candidate_costs(0, np.zeros((3, 1)), None, now)
    assert int(np.argmin(lone)) in (1, 2)
    full = _term((200_000, 200_000, 200_000), cached=15, per_rank=72).candidate_costs(0, np.zeros((3, 1)), None,
                                                                                       now)
    assert int(np.argmin(full)) == 0


def test_the_study_section_is_checked_when_the_config_loads():
    import copy

    import yaml

    from bfio.pipeline.config import validate_config

    schema = "workflow/schemas/config.schema.yaml"
    base = yaml.safe_load(open("config/smoke.yaml"))
    for change, key in (({"routers": ["fcfs"]}, "prefix_study.routers.0"),
                        ({"settings": [{"name": "x", "workload": "grpo", "trace": "azure_conv", "workers": 2,
                                        "groups": 2, "turns": 2}]}, "prefix_study.settings.0.group_size"),
                        ({"settings": [{"name": "x", "workload": "trace", "trace": "azure_conv", "workers": 2}]},
                         "prefix_study.settings.0.trace")):
        cfg = copy.deepcopy(base)
        cfg["prefix_study"].update(change)
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            validate_config(cfg, schema)


def test_a_variant_row_runs_with_its_actions_and_an_unknown_label_is_refused():
    """``prefix_study.variants`` (issue 45: BF-IO with actions on the prefix-cache
    settings): a listed label runs its policy with its actions after binding; a
    label that is neither a policy nor a variant is refused by its key."""
    import copy

    import yaml

    from bfio.pipeline.config import validate_config
    from bfio.studies.prefix_study import prefix_runs

    variants = {"bfio_actions": {"policy": "bfio", "horizon": 10, "queue_moves": "bfio", "migration": "bfio",
                                 "migration_options": {"kv": "choose", "cost_weight": 4.0}}}
    section = {"routers": ["vllm_dp", "bfio_actions"], "horizon": 10, "variants": variants,
               "prefill": {"chunk_tokens": 1024, "token_s": 1e-4, "kv_tokens_per_rank": 50_000}}
    setting = {"name": "m", "workload": "trace", "trace": "mooncake", "requests": 50, "workers": 2}
    plain, acting = prefix_runs(setting, section, [1], 8)
    assert (plain.migration, plain.queue_moves) == ("none", "none")
    assert (acting.policy, acting.queue_moves, acting.migration) == ("bfio", "bfio", "bfio")
    assert dict(acting.migration_options) == {"kv": "choose", "cost_weight": 4.0}
    assert dict(acting.options)["horizon"] == 10
    base = yaml.safe_load(open("config/smoke.yaml"))
    cfg = copy.deepcopy(base)
    cfg["prefix_study"].update({"routers": ["vllm_dp", "bfio_actions"], "variants": variants})
    validate_config(cfg, "workflow/schemas/config.schema.yaml")
    cfg = copy.deepcopy(base)
    cfg["prefix_study"].update({"routers": ["vllm_dp", "bfio_nothing"], "variants": variants})
    with pytest.raises(ConfigError, match=r"prefix_study\.routers\.1"):
        validate_config(cfg, "workflow/schemas/config.schema.yaml")


def test_group_pinning_counts_ranks_of_later_turns():
    from bfio.studies.prefix_study import group_pinning

    group = np.array([0, 0, 0, 1, 1, 1])
    later = np.array([False, True, True, False, True, True])
    worker = np.array([3, 2, 2, 0, 1, 2])  # group 0's later turns on one rank, group 1's on two
    out = group_pinning(group, later, worker)
    assert out == {"group_ranks": 1.5, "pinned_share": 0.5}


def test_the_table_names_the_routers_that_dominate_bfio():
    """'a' is better on both metrics in every seed; 'd' on both means only (its seeds
    disagree), so it dominates on the means but not beyond the paired intervals."""
    import pandas as pd

    from bfio.studies.prefix_summary import prefix_markdown, summarize_prefix

    rows = []
    noisy = {1: (30, 4.9), 2: (-12, 4.0), 3: (12, 5.8)}  # 'd': throughput and TTFT per seed
    for seed in (1, 2, 3):
        for row, thr, ttft in (("bfio", 100, 5.0), ("a", 110, 4.0), ("b", 120, 6.0), ("c", 90, 4.5),
                               ("d", 100 + noisy[seed][0], noisy[seed][1])):
            rows.append({"setting": "s", "workload": "grpo", "row": row, "seed": seed,
                         "throughput_run": thr + seed, "ttft_s_p50": 1.0, "ttft_s_p99": ttft,
                         "tpot_decode_s_mean": 0.1, "e2e_s_p50": 2.0, "e2e_s_p99": 3.0, "cache_hit_rate": 0.5})
    summary = summarize_prefix(pd.DataFrame(rows))
    me = summary[summary["row"] == "bfio"]
    assert me["dominated_by"].item() == "a, d"
    assert me["dominated_by_significant"].item() == "a"
    a = summary[summary["row"] == "a"].iloc[0]
    assert a["lead_ttft_p99_pct_mean"] == pytest.approx(-25.0)  # 1 - 5/4, every seed
    text = prefix_markdown(summary, {}, "t")
    assert "Routers better than BF-IO on both throughput and p99 TTFT: a, d; beyond the 95% intervals on both: a." \
        in text


def test_the_study_rows_carry_the_peak_kv_and_the_pinning(tmp_path):
    """One small GRPO setting through the study's runner: every row has the peak KV of
    any rank over the budget (the largest pre-step load of the run's series, read
    independently here) and the GRPO pinning columns."""
    import pandas as pd

    from bfio.runs.runner import simulate_run
    from bfio.studies.prefix_study import generated_requests, prefix_runs, run_prefix_study

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"prefill_tokens": rng.integers(600, 3000, 50), "decode_tokens": rng.integers(5, 80, 50)})
    setting = {"name": "g", "workload": "grpo", "trace": "azure_conv", "workers": 2, "groups": 2, "group_size": 4,
               "turns": 2, "think_time_s": 1.0}
    section = {"routers": ["vllm_dp", "bfio"], "horizon": 10,
               "prefill": {"chunk_tokens": 1024, "token_s": 1e-4, "kv_tokens_per_rank": 50_000}}
    rows = run_prefix_study("g", setting, section, [1], 8, frame)
    assert {"kv_peak_share", "group_ranks", "pinned_share", "pinned_share_all"} <= set(rows.columns)
    run = prefix_runs(setting, section, [1], 8)[0]
    res = simulate_run(run, workload=generated_requests(setting, frame, 1).workload)
    peak = max(int(x) for x in res.series["max_load_pre"])
    assert rows.loc[rows["row"] == "vllm_dp", "kv_peak_share"].item() == pytest.approx(peak / 50_000)


def test_central_bfio_places_its_admitted_requests_with_the_cache_term():
    """Central dispatch: the solver's choice of which requests to admit stands, but
    each admitted prompt is placed again with the prefix-cache term (issue 32): a
    prompt whose blocks rank 1 holds moves there from the solver's rank 0, two
    prompts that share nothing stay where the solver put them, and a rank without
    a free slot is never chosen."""
    from bfio.policies import RoutingState, make_policy
    from bfio.engine.prefill import Prefill
    from bfio.sim.cache_view import CacheView

    bt = 256
    blocks = PrefixBlocks.from_lists([list(range(16)), list(range(100, 116)), list(range(200, 216))], bt)
    w = Workload(np.full(3, 16 * bt), np.full(3, 10), blocks=blocks)
    st = Prefill(PrefillModel(cache_blocks=1000), w, 2, 4)
    st.caches[1].insert(blocks.blocks_of(0))
    policy = make_policy("bfio", horizon=20)
    window = policy._objective.window
    grid = np.full((2, 4), -1)

    def state(pool, free):
        return RoutingState(step=1, clock=0.0, workers=2, slots=4, pool=np.asarray(pool), free=np.asarray(free),
                            loads=np.zeros(2, dtype=np.int64), active=4 - np.asarray(free), workload=w,
                            slot_request=grid, generated=np.zeros(3, dtype=np.int64),
                            enter_step=np.zeros(3, dtype=np.int64),
                            prefill=CacheView(st, grid, np.zeros(2, dtype=np.int64), 1.005e-7))

    base = np.zeros((2, window + 1))
    moved = policy._central.place_sequential(state([0], [4, 4]), np.array([0]), base, w.decode, window)
    assert moved.tolist() == [1]
    kept = policy._central.place_sequential(state([1, 2], [4, 4]), np.array([0, 1]), base, w.decode, window)
    assert sorted(kept.tolist()) == [0, 1]
    full = policy._central.place_sequential(state([0], [4, 0]), np.array([0]), base, w.decode, window)
    assert full.tolist() == [0]  # rank 1 holds the prefix but has no free slot


def test_central_bfio_with_caches_completes_and_finds_more_hits_than_without_the_term():
    """GRPO rollouts (shared group prompts) under central BF-IO: every prompt token is
    counted once, and the cache term's placement finds more prefix hits than the
    cache-blind placement of the same admissions."""
    from bfio.solvers.central import CentralCall

    r = _grpo_rollouts(groups=4, think=2.0)
    model = PrefillModel(chunk_tokens=2048, token_s=1e-4, cache_blocks=100_000)
    kw = dict(prefill=model, entry="arrivals", show_progress=False, policy_options={"horizon": 20})
    res = simulate(r.workload, 4, 16, "bfio", **kw)
    q = res.requests
    assert res.metrics["prefill_tokens_computed"] + int(q["cached_tokens"].sum()) == int(r.workload.prefill.sum())
    original = CentralCall.place_sequential
    try:
        CentralCall.place_sequential = lambda self, state, assign, *a: assign  # the solver's placement alone
        blind = simulate(r.workload, 4, 16, "bfio", **kw)
    finally:
        CentralCall.place_sequential = original
    assert res.metrics["cache_hit_rate"] > blind.metrics["cache_hit_rate"]
