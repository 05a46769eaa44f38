"""Chunked prefill in the lockstep step and per-rank prefix caches (bfio.engine.prefill, issue 32)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.engine.prefill import PrefillModel, cached_tokens
from bfio.engine.prefix import PrefixBlocks
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

POLICIES = ["fcfs", "jsq_tokens", "bfio", "round_robin"]


def _workload(seed, n, arrivals=False, blocks=None):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(1, 3000, n), rng.integers(1, 60, n), blocks=blocks)
    if arrivals:
        w = with_arrivals(w, poisson_arrivals(n, 20.0, seed))
    return w


def test_off_is_the_paper_loop_bit_for_bit():
    w = _workload(1, 400)
    for policy in POLICIES:
        a = simulate(w, 4, 8, policy, show_progress=False)
        b = simulate(w, 4, 8, policy, prefill=None, show_progress=False)
        assert a.metrics.keys() == b.metrics.keys()
        for k, v in a.metrics.items():
            if not k.startswith(("route_s", "solver_s", "wall")):
                assert v == b.metrics[k] or (v != v and b.metrics[k] != b.metrics[k]), k
        assert not any(k.startswith("ttft") for k in a.metrics)
        assert "prefill" not in a.config


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 120), G=st.integers(1, 4), B=st.integers(1, 6),
       chunk=st.integers(1, 5000), policy=st.sampled_from(POLICIES), arrivals=st.booleans())
def test_prefill_invariants(seed, n, G, B, chunk, policy, arrivals):
    w = _workload(seed, n, arrivals)
    model = PrefillModel(chunk_tokens=chunk, token_s=1e-4)
    r = simulate(w, G, B, policy, prefill=model, show_progress=False, entry="arrivals" if arrivals else "backlog")
    q = r.requests
    # every prompt computed in chunks: at least ceil(s / chunk) steps from admission to the first token
    first_step_bound = np.ceil(w.prefill / chunk)
    steps_to_first = r.requests["finish_step"] - r.requests["start_step"] - (w.decode - 1)
    assert (steps_to_first >= first_step_bound).all()
    # the first token comes with the prefill's last chunk, then one token a step
    assert (q["ttft_s"] > 0).all()
    assert (q["ttft_s"] <= q["e2e_s"] + 1e-12).all()
    assert r.metrics["prefill_tokens_computed"] == int(w.prefill.sum())  # no cache: every prompt token
    # every step's time carries the slowest rank's chunk: never below the paper's decode-only time
    assert (r.series["dt"] > 0).all()
    assert r.metrics["cache_hit_rate"] == 0.0


def test_a_long_prompt_holds_the_barrier_for_every_rank():
    """One 20,000-token prompt on one rank: every rank's step waits for its chunks."""
    prefill = np.array([20_000] + [10] * 7)
    decode = np.full(8, 30)
    w = Workload(prefill, decode)
    model = PrefillModel(chunk_tokens=2000, token_s=1e-4)
    r = simulate(w, 2, 4, "round_robin", prefill=model, show_progress=False)
    slow = r.series["dt"].iloc[:10]
    assert (slow >= 2000 * 1e-4).all()  # ten chunks of 2,000 tokens: ten slow steps for both ranks
    others = r.requests.iloc[1:]
    assert (others["tpot_s"] > 2000 * 1e-4 / 30).all()  # their decode waited at the barrier


def _shared(n_groups, group, prompt_blocks, block=16):
    """Groups of identical prompts (GRPO-like): every member shares every block."""
    lists = []
    for g in range(n_groups):
        lists += [list(range(g * 1000, g * 1000 + prompt_blocks))] * group
    return PrefixBlocks.from_lists(lists, block)


def test_prefix_hits_skip_prefill_and_are_reported():
    blocks = _shared(3, 8, 10)
    n = len(blocks)
    w = Workload(np.full(n, 160), np.full(n, 20), blocks=blocks)
    model = PrefillModel(chunk_tokens=4096, token_s=1e-4, cache_blocks=1000)
    r = simulate(w, 1, 2, "fcfs", prefill=model, show_progress=False)  # one rank: every repeat can hit
    # blocks enter the cache when a prefill ends: a group's first two members (seated
    # together in the two slots) miss, the six after them hit all but the last token
    hit = r.requests["cached_tokens"]
    assert hit.sum() == 3 * 6 * 159
    assert r.metrics["cache_hit_rate"] == pytest.approx(3 * 6 * 159 / w.prefill.sum())
    assert hit.max() == 159 and hit.min() == 0
    assert r.metrics["prefill_tokens_computed"] == int(w.prefill.sum() - hit.sum())
    assert r.metrics["cache_hit_rate_rank_min"] == r.metrics["cache_hit_rate_rank_max"]
    # no cache: the same run computes every token and is slower
    r0 = simulate(w, 1, 2, "fcfs", prefill=PrefillModel(chunk_tokens=4096, token_s=1e-4), show_progress=False)
    assert r0.metrics["makespan_s"] > r.metrics["makespan_s"]


def test_cached_tokens_leave_the_last_prompt_token_to_compute():
    assert cached_tokens(3, 16, 100) == 48
    assert cached_tokens(7, 16, 100) == 99
    assert cached_tokens(0, 16, 100) == 0


def test_cache_without_block_hashes_is_refused():
    with pytest.raises(ConfigError, match="cache_blocks"):
        simulate(_workload(1, 10), 2, 2, "fcfs", prefill=PrefillModel(cache_blocks=10), show_progress=False)


@pytest.mark.parametrize("bad", [{"chunk_tokens": 0}, {"chunk_tokens": 2.5}, {"token_s": -1.0},
                                 {"token_s": float("nan")}, {"cache_blocks": 0}, {"cache_blocks": True}])
def test_bad_parameters_name_the_key(bad):
    key = next(iter(bad))
    with pytest.raises(ConfigError, match=f"prefill.{key}"):
        PrefillModel(**bad)


@pytest.mark.parametrize("policy", ["fcfs", "bfio"])
def test_throughput_counts_output_tokens_only(policy):
    """Requests still prefilling hold a slot but emit no token: over the whole run the
    series counts exactly the workload's output tokens, as without prefill."""
    w = _workload(5, 150)
    r = simulate(w, 3, 4, policy, prefill=PrefillModel(chunk_tokens=300), show_progress=False)
    assert int(r.series["active"].sum()) == int(w.decode.sum())
    r0 = simulate(w, 3, 4, policy, show_progress=False)
    assert int(r0.series["active"].sum()) == int(w.decode.sum())


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 4), st.integers(1, 8), st.integers(1, 6000))
def test_a_rank_spends_its_chunk_on_the_oldest_admissions_first(seed, G, B, chunk):
    """allot_chunks on random slot layouts: at most ``chunk`` tokens a rank, no request
    more than it needs, and a request cut short (or left out) only when every older
    one on its rank got all it needs: slot positions play no part."""
    from bfio.engine.prefill import allot_chunks

    rng = np.random.default_rng(seed)
    n = G * B
    slots = np.where(rng.random((G, B)) < 0.7, rng.permutation(n).reshape(G, B), -1)
    left = np.where(rng.random(n) < 0.6, rng.integers(1, 4000, n), 0)
    order = rng.permutation(n)
    take = np.full((G, B), -7, dtype=np.int64)
    pmax = allot_chunks(slots, left, order, chunk, chunk, take)
    sums = take.sum(axis=1)
    assert pmax == sums.max() and (sums <= chunk).all()
    for g in range(G):
        mine = [(order[i], i, take[g, b]) for b, i in enumerate(slots[g]) if i >= 0 and left[i] > 0]
        assert all(take[g, b] == 0 for b, i in enumerate(slots[g]) if i < 0 or left[i] == 0)
        mine.sort()
        short = False
        for _, i, got in mine:
            assert 0 <= got <= left[i]
            assert not (short and got > 0)  # nothing for a newer one once an older one was cut short
            short = short or got < left[i]
        assert sums[g] == min(chunk, sum(left[i] for _, i, _ in mine))


def test_a_long_prompt_admitted_first_is_not_overtaken_by_a_later_one_in_a_lower_slot():
    """One rank of two slots: request 0 (short) in slot 0 finishes, request 1 (a long
    prompt) prefills in slot 1, request 2 arrives later and takes slot 0: request 1,
    admitted first, keeps the chunk until its prefill ends (vLLM serves running
    requests in admission order), so its first token comes before request 2's."""
    w = with_arrivals(Workload(np.array([10, 8000, 3000]), np.array([1, 5, 5])), np.array([0.0, 0.0, 0.05]))
    res = simulate(w, 1, 2, "fcfs", entry="arrivals", prefill=PrefillModel(chunk_tokens=2048), show_progress=False)
    q = res.requests
    assert q.loc[1, "worker"] == 0 and q.loc[2, "start_s"] > q.loc[1, "start_s"]
    assert q.loc[1, "ttft_s"] + q.loc[1, "arrival_s"] < q.loc[2, "ttft_s"] + q.loc[2, "arrival_s"]


def test_kv_memory_bounds_admission_and_an_idle_rank_always_admits():
    """Prompts of 600 tokens on ranks of 1,000 KV tokens and 8 slots: a second prompt
    never fits beside a running one, so each rank runs one request at a time (no two
    on a rank overlap); without the bound the slots fill up. A 1,000-token prompt fits
    an idle rank."""
    n = 24
    w = with_arrivals(Workload(np.full(n, 600), np.full(n, 20)), np.zeros(n))
    kw = dict(entry="arrivals", dispatch="instant", show_progress=False)
    bounded = simulate(w, 2, 8, "round_robin", prefill=PrefillModel(chunk_tokens=4096, kv_tokens=1000), **kw)
    q = bounded.requests.sort_values(["worker", "start_s"])
    for _, r in q.groupby("worker"):
        assert (r["start_s"].to_numpy()[1:] >= r["finish_s"].to_numpy()[:-1]).all()
    free = simulate(w, 2, 8, "round_robin", prefill=PrefillModel(chunk_tokens=4096), **kw).requests
    assert (free["start_s"] == 0).sum() == 16  # every slot at once
    one = with_arrivals(Workload(np.array([1000]), np.array([3])), np.zeros(1))
    assert simulate(one, 1, 2, "round_robin", prefill=PrefillModel(kv_tokens=1000), **kw).requests["finish_s"].notna().all()


def test_kv_memory_bounds_central_admission_too():
    """Issue 44: central dispatch checks the policy's choice against the rank's KV
    memory; what does not fit stays in the pool (one 600-token prompt at a time on
    ranks of 1,000 tokens, as under instant dispatch)."""
    n = 24
    w = with_arrivals(Workload(np.full(n, 600), np.full(n, 20)), np.zeros(n))
    for policy in ("fcfs", "jsq_tokens"):
        res = simulate(w, 2, 8, policy, prefill=PrefillModel(chunk_tokens=4096, kv_tokens=1000), entry="arrivals",
                       show_progress=False, record_loads=True)
        assert res.requests["finish_s"].notna().all() and res.loads.max() <= 1000
        for _, r in res.requests.sort_values(["worker", "start_s"]).groupby("worker"):
            assert (r["start_s"].to_numpy()[1:] >= r["finish_s"].to_numpy()[:-1]).all()


def test_central_routing_shows_only_the_slots_memory_can_fill():
    """Issue 44: under the KV bound the routing state's free slots are what the
    ranks' memory can seat (bfio.sim.dispatch.CentralDispatch._memory_free): with
    one 600-token prompt at a time on ranks of 1,000 tokens, a busy rank shows no
    free slot, so the policy is called only when a rank has gone idle (at most
    once a request), not at every step while the pool waits; and no admission
    the memory allows is hidden (every request runs, one at a time per rank)."""
    n = 24
    w = with_arrivals(Workload(np.full(n, 600), np.full(n, 20)), np.zeros(n))
    calls = []

    policy = make_policy("jsq_tokens")

    class Spy(type(policy)):
        def route(self, rs):
            calls.append((rs.free.copy(), rs.active.copy()))
            return super().route(rs)

    policy.__class__ = Spy
    res = simulate(w, 2, 8, policy, prefill=PrefillModel(chunk_tokens=4096, kv_tokens=1000),
                   entry="arrivals", show_progress=False)
    assert res.requests["finish_s"].notna().all()
    assert res.steps > 5 * n  # the pool waited through many steps ...
    assert 0 < len(calls) <= n  # ... and was routed only when a rank went idle
    for free, active in calls:
        assert (free[active > 0] == 0).all() and (free[active == 0] == 1).all()


def test_kv_memory_counts_the_prompt_still_to_compute():
    """Two 3,000-token prompts on a rank of 5,000 KV tokens with a chunk of 1,000: the
    first's uncomputed tokens are not resident yet but are committed, so the second
    waits until the first completes, not only until its KV fits today."""
    w = with_arrivals(Workload(np.array([3000, 3000]), np.array([2, 2])), np.array([0.0, 0.0]))
    res = simulate(w, 1, 4, "round_robin", prefill=PrefillModel(chunk_tokens=1000, kv_tokens=5000),
                   entry="arrivals", dispatch="instant", show_progress=False).requests
    assert res.loc[1, "start_s"] >= res.loc[0, "finish_s"]


def test_kv_memory_errors_name_the_key_and_the_request():
    w = with_arrivals(Workload(np.array([500, 2000, 3000]), np.array([2, 2, 2])), np.zeros(3))
    with pytest.raises(ConfigError, match=r"prefill\.kv_tokens: request 1's prompt of 2,000 tokens exceeds .* "
                                          r"\(2 such requests\)"):
        simulate(w, 2, 4, "round_robin", prefill=PrefillModel(kv_tokens=1500), entry="arrivals",
                 dispatch="instant", show_progress=False)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="prefill.kv_tokens"):
            PrefillModel(kv_tokens=bad)
