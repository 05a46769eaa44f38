"""Shared-prefix workload generators (issue 32): GRPO groups share every block
and arrive together; a session's turn k keeps floor(s_{k-1} / block_tokens)
blocks of turn k-1; hashes are unique across groups and sessions; the same
seed gives the same workload."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bfio.ground.errors import ConfigError
from bfio.engine.prefix import PrefixCache, check_blocks_cover
from bfio.workloads.sessions import grpo_groups, multi_turn_sessions, session_requests

PREFILL = np.array([100, 511, 512, 513, 1500, 4000])
DECODE = np.array([1, 30, 600, 2048])


def _rows(w):
    return [w.blocks.blocks_of(i).tolist() for i in range(len(w))]


def _same(a, b):
    return (np.array_equal(a.prefill, b.prefill) and np.array_equal(a.decode, b.decode)
            and np.array_equal(a.arrival_s, b.arrival_s) and a.blocks == b.blocks)


@pytest.mark.parametrize("rate", [None, 2.0])
def test_grpo_members_share_every_block_and_arrive_together(rate):
    w = grpo_groups(PREFILL, DECODE, groups=7, group_size=4, seed=5, group_rate_per_s=rate)
    assert len(w) == 28 and w.blocks.block_tokens == 512
    check_blocks_cover(w.blocks, w.prefill, "grpo")
    rows = _rows(w)
    for g in range(7):
        members = range(4 * g, 4 * g + 4)
        assert all(rows[i] == rows[4 * g] for i in members)
        assert len({w.prefill[i] for i in members}) == 1 and len({w.arrival_s[i] for i in members}) == 1
    firsts = [set(rows[4 * g]) for g in range(7)]
    assert sum(map(len, firsts)) == len(set().union(*firsts))  # groups share nothing
    assert np.all(np.diff(w.arrival_s) >= 0)
    if rate is None:
        assert np.all(w.arrival_s == 0)
    else:
        assert w.arrival_s[0] > 0 and len(set(w.arrival_s)) == 7


def test_grpo_decodes_are_independent_draws():
    w = grpo_groups(PREFILL, DECODE, groups=50, group_size=8, seed=1)
    per_group = w.decode.reshape(50, 8)
    assert (per_group.min(axis=1) != per_group.max(axis=1)).any()
    assert set(w.decode) <= set(DECODE) and set(w.prefill) <= set(PREFILL)


def test_grpo_cache_hits_all_but_the_first_member():
    w = grpo_groups(PREFILL, DECODE, groups=3, group_size=5, seed=2)
    c = PrefixCache(10_000)
    matched = [c.admit(w.blocks.blocks_of(i)) for i in range(len(w))]
    for g in range(3):
        k = w.blocks.count(5 * g)
        assert matched[5 * g: 5 * g + 5] == [0] + [k] * 4


def test_grpo_is_deterministic_and_seeded():
    a = grpo_groups(PREFILL, DECODE, 6, 3, seed=11, group_rate_per_s=1.0, first_hash=100)
    b = grpo_groups(PREFILL, DECODE, 6, 3, seed=11, group_rate_per_s=1.0, first_hash=100)
    c = grpo_groups(PREFILL, DECODE, 6, 3, seed=12, group_rate_per_s=1.0, first_hash=100)
    assert _same(a, b) and not _same(a, c)
    assert a.blocks.hashes.min() == 100


@pytest.mark.parametrize("kwargs, match", [
    (dict(groups=0), "groups"), (dict(group_size=True), "group_size"), (dict(seed=-1), "seed"),
    (dict(block_tokens=0), "block_tokens"), (dict(group_rate_per_s=0.0), "group_rate_per_s"),
    (dict(first_hash=-3), "first_hash"),
])
def test_grpo_bad_arguments(kwargs, match):
    args = dict(groups=2, group_size=2, seed=0) | kwargs
    with pytest.raises(ConfigError, match=match):
        grpo_groups(PREFILL, DECODE, **args)
    with pytest.raises(ConfigError, match="prefill"):
        grpo_groups([], DECODE, 2, 2, 0)


@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32), st.sampled_from([1, 16, 512]),
       st.sampled_from([None, 0.5]), st.sampled_from([0.0, 10.0]))
@settings(max_examples=60, deadline=None)
def test_sessions_turns_extend_the_previous_prompt(sessions, turns, seed, bt, rate, think):
    r = session_requests(PREFILL, DECODE, sessions, turns, seed, block_tokens=bt, session_rate_per_s=rate,
                         think_time_s=think)
    w = r.workload
    assert len(w) == sessions * turns and w.blocks.block_tokens == bt
    check_blocks_cover(w.blocks, w.prefill, "sessions")
    assert np.all(np.diff(w.arrival_s) >= 0)
    where = {(int(s), int(k)): i for i, (s, k) in enumerate(zip(r.session, r.turn))}
    assert len(where) == sessions * turns
    for s in range(sessions):
        for k in range(1, turns):
            prev, cur = where[s, k - 1], where[s, k]
            assert w.arrival_s[cur] >= w.arrival_s[prev]
            # s_k = s_{k-1} + o_{k-1} + a new message
            assert w.prefill[cur] - w.prefill[prev] - w.decode[prev] in set(PREFILL)
            hp, hc = w.blocks.blocks_of(prev), w.blocks.blocks_of(cur)
            shared = int(w.prefill[prev]) // bt
            assert hc[:shared].tolist() == hp[:shared].tolist()
            # exactly that many: the next block differs (the previous tail held other tokens)
            assert shared == hp.size or hc[shared] != hp[shared]
            # and the blocks after the shared run are new to the session
            assert not set(hc[shared:].tolist()) & set(hp.tolist())
    # sessions share no block
    per_session = [set(w.blocks.hashes[np.concatenate([np.arange(w.blocks.offsets[i], w.blocks.offsets[i + 1])
                                                        for i in np.flatnonzero(r.session == s)])].tolist())
                   for s in range(sessions)]
    assert sum(map(len, per_session)) == len(set().union(*per_session))


def test_sessions_known_example():
    # one session, messages and outputs fixed by one-value pools: s = 700, 700+50+700 = 1450, 2200
    r = session_requests([700], [50], sessions=1, turns=3, seed=0, block_tokens=512, think_time_s=0.0)
    w = r.workload
    assert w.prefill.tolist() == [700, 1450, 2200] and r.turn.tolist() == [0, 1, 2]
    assert _rows(w) == [[0, 1], [0, 2, 3], [0, 2, 4, 5, 6]]
    assert np.all(w.arrival_s == 0)


def test_sessions_are_sorted_by_arrival_with_their_blocks():
    r = session_requests(PREFILL, DECODE, sessions=4, turns=3, seed=3, session_rate_per_s=0.2, think_time_s=5.0)
    w = r.workload
    assert np.all(np.diff(w.arrival_s) >= 0)
    assert r.session.tolist() != sorted(r.session.tolist())  # interleaved sessions, reordered
    first_turns = np.flatnonzero(r.turn == 0)
    assert [int(r.session[i]) for i in first_turns] == [0, 1, 2, 3]  # Poisson session starts in order


def test_sessions_are_deterministic():
    kw = dict(session_rate_per_s=1.0, think_time_s=3.0)
    a = multi_turn_sessions(PREFILL, DECODE, 5, 4, seed=9, **kw)
    b = multi_turn_sessions(PREFILL, DECODE, 5, 4, seed=9, **kw)
    c = multi_turn_sessions(PREFILL, DECODE, 5, 4, seed=10, **kw)
    assert _same(a, b) and not _same(a, c)
    assert _same(a, session_requests(PREFILL, DECODE, 5, 4, seed=9, **kw).workload)


def test_sessions_bad_arguments():
    with pytest.raises(ConfigError, match="turns"):
        multi_turn_sessions(PREFILL, DECODE, 2, 0, 0)
    with pytest.raises(ConfigError, match="think_time_s"):
        multi_turn_sessions(PREFILL, DECODE, 2, 2, 0, think_time_s=-1.0)
    with pytest.raises(ConfigError, match="session_rate_per_s"):
        multi_turn_sessions(PREFILL, DECODE, 2, 2, 0, session_rate_per_s=float("inf"))
    with pytest.raises(ConfigError, match=r"turns: session 0's turn 1 has a prompt of"):
        multi_turn_sessions([2**30 + 1], DECODE, 1, 2, 0)


def test_grpo_rollouts_share_the_first_prompt_within_a_group_only():
    from bfio.workloads.sessions import session_requests

    rng = np.random.default_rng(0)
    pool_s, pool_o = rng.integers(100, 3000, 50), rng.integers(5, 400, 50)
    r = session_requests(pool_s, pool_o, sessions=12, turns=3, seed=4, block_tokens=64, group_size=4,
                         think_time_s=2.0)
    w, sess, turn = r.workload, r.session, r.turn
    first = {int(s): w.blocks.blocks_of(i).tolist() for i, (s, k) in enumerate(zip(sess, turn)) if k == 0}
    arrive = {int(s): w.arrival_s[i] for i, (s, k) in enumerate(zip(sess, turn)) if k == 0}
    for s in range(12):
        lead = s - s % 4
        assert first[s] == first[lead] and arrive[s] == arrive[lead]
        if s % 4 == 0 and s > 0:
            assert not set(first[s]) & set(first[s - 4])  # other groups share nothing
    # staggered streams: member m starts m gaps after its group, the rest unchanged
    g = session_requests(pool_s, pool_o, sessions=12, turns=3, seed=4, block_tokens=64, group_size=4,
                         think_time_s=2.0, stream_gap_s=0.5)
    start = {int(s): g.workload.arrival_s[i] for i, (s, k) in enumerate(zip(g.session, g.turn)) if k == 0}
    for s in range(12):
        assert start[s] == pytest.approx(arrive[s - s % 4] + 0.5 * (s % 4))
    assert sorted(g.workload.prefill.tolist()) == sorted(w.prefill.tolist())
    with pytest.raises(ConfigError, match="stream_gap_s"):
        session_requests(pool_s, pool_o, sessions=4, turns=1, seed=0, group_size=2, stream_gap_s=-1.0)
    # group_size 1 is the plain sessions draw
    a = session_requests(pool_s, pool_o, sessions=5, turns=2, seed=9)
    b = session_requests(pool_s, pool_o, sessions=5, turns=2, seed=9, group_size=1)
    assert np.array_equal(a.workload.prefill, b.workload.prefill) and a.workload.blocks == b.workload.blocks
