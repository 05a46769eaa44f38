"""Prefix caching data layer (issue 32): PrefixBlocks validation and subsetting,
the LRU PrefixCache against a brute-force reference, the cache capacity, and
Workload carrying blocks through draws, replays and new arrival times."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bfio.ground.errors import ConfigError
from bfio.engine.prefix import PrefixBlocks, PrefixCache, cache_capacity_blocks, check_blocks_cover
from bfio.workloads.workload import Workload, draw_workload, replay_workload, with_arrivals


# --------------------------------------------------------------------------- PrefixBlocks

def _blocks():
    return PrefixBlocks.from_lists([[1, 2, 3], [1, 2], [7]], block_tokens=4)


def test_blocks_ragged_access():
    b = _blocks()
    assert len(b) == 3 and b.block_tokens == 4
    assert b.offsets.tolist() == [0, 3, 5, 6] and b.counts.tolist() == [3, 2, 1]
    assert b.blocks_of(0).tolist() == [1, 2, 3] and b.blocks_of(-1).tolist() == [7]
    assert b.count(1) == 2
    with pytest.raises(IndexError):
        b.blocks_of(3)
    view = b.blocks_of(0)
    with pytest.raises(ValueError):  # read-only: a cache cannot corrupt the workload
        view[0] = 9


def test_blocks_copy_the_callers_arrays():
    off, h = np.array([0, 2]), np.array([5, 6])
    b = PrefixBlocks(off, h, 16)
    h[0] = 99
    assert b.blocks_of(0).tolist() == [5, 6] and b.hashes.dtype == np.int64


def test_take_subsets_reorders_repeats():
    b = _blocks()
    t = b.take(np.array([2, 0, 0]))
    assert [t.blocks_of(i).tolist() for i in range(3)] == [[7], [1, 2, 3], [1, 2, 3]]
    assert t.block_tokens == 4
    assert len(b.take(np.array([], dtype=np.int64))) == 0
    assert b.take([1, 2]) == PrefixBlocks.from_lists([[1, 2], [7]], 4)
    with pytest.raises(ConfigError, match=r"index: entry 1 \(3\)"):
        b.take([0, 3])


@given(st.lists(st.lists(st.integers(0, 50), max_size=6), max_size=8), st.data())
@settings(max_examples=100, deadline=None)
def test_take_matches_list_indexing(rows, data):
    b = PrefixBlocks.from_lists(rows, 8)
    idx = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=10)) if rows else []
    t = b.take(np.asarray(idx, dtype=np.int64))
    assert [t.blocks_of(i).tolist() for i in range(len(t))] == [rows[i] for i in idx]


@pytest.mark.parametrize("offsets, hashes, bt, match", [
    ([0, 2, 1, 3], [1, 2, 3], 4, r"offsets: request 1 ends at 1, before it starts at 2"),
    ([1, 3], [1, 2], 4, r"offsets: entry 0 must be 0"),
    ([], [], 4, r"offsets: .*empty"),
    ([0, 2], [1, 2, 3], 4, r"offsets: the last entry \(2\) must equal the number of hashes \(3\)"),
    ([0, 1, 3], [1, 2, -5], 4, r"hashes: request 1 has a negative block hash \(-5\) at block 1"),
    ([0, 1], [1.5], 4, r"hashes: expected int64"),
    ([0, 1], [1], 0, r"block_tokens: expected an integer >= 1"),
    ([0, 1], [1], True, r"block_tokens"),
    ([[0, 1]], [1], 4, r"offsets: expected a 1-D"),
])
def test_blocks_validation_names_field_and_request(offsets, hashes, bt, match):
    with pytest.raises(ConfigError, match=match):
        PrefixBlocks(np.asarray(offsets), np.asarray(hashes), bt)


def test_check_blocks_cover():
    b = _blocks()  # 3, 2, 1 blocks of 4 tokens
    check_blocks_cover(b, [12, 5, 1], "w")
    check_blocks_cover(b, [9, 8, 4], "w")
    with pytest.raises(ConfigError, match=r"w: request 1 has 2 prefix blocks, but its prompt of 9 tokens needs "
                                          r"ceil\(9 / 4\) = 3"):
        check_blocks_cover(b, [12, 9, 1], "w")
    with pytest.raises(ConfigError, match=r"w: 3 requests .* 2 prompts"):
        check_blocks_cover(b, [12, 5], "w")


# --------------------------------------------------------------------------- PrefixCache

def test_match_stops_at_first_miss_and_keeps_recency():
    c = PrefixCache(10)
    c.insert([1, 2, 3])
    order = list(c)
    assert c.match([1, 2, 3, 4]) == 3
    assert c.match([1, 9, 3]) == 1  # 3 is cached but follows a miss
    assert c.match([9, 1]) == 0
    assert c.match([]) == 0
    assert list(c) == order  # match does not touch recency
    assert (c.hits, c.lookups) == (4, 9)
    assert c.hit_rate == pytest.approx(4 / 9)


def test_lru_order_and_eviction():
    c = PrefixCache(4)
    c.insert([1, 2])          # LRU -> MRU: 2 1 (first block most recent, as vLLM frees tail first)
    assert list(c) == [2, 1]
    c.insert([3, 4])          # 2 1 4 3
    assert list(c) == [2, 1, 4, 3]
    c.insert([1])             # 2 4 3 1
    assert list(c) == [2, 4, 3, 1]
    c.insert([5])             # evicts 2
    assert list(c) == [4, 3, 1, 5] and 2 not in c and len(c) == 4
    c.insert([6, 7])          # evicts 4 and 3
    assert list(c) == [1, 5, 7, 6]


def test_long_sequence_keeps_its_leading_blocks():
    c = PrefixCache(3)
    c.insert([9])
    c.insert(list(range(10)))
    assert sorted(c) == [0, 1, 2] and len(c) == 3
    assert c.match(range(10)) == 3


def test_admit_is_match_then_insert():
    c = PrefixCache(8)
    assert c.admit([1, 2, 3]) == 0
    assert c.admit([1, 2, 4]) == 2
    assert sorted(c) == [1, 2, 3, 4]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_cache_capacity_is_validated(bad):
    with pytest.raises(ConfigError, match="capacity"):
        PrefixCache(bad)


def test_cache_refuses_non_integer_hashes():
    with pytest.raises(ConfigError, match="hashes"):
        PrefixCache(2).insert([1.5])
    with pytest.raises(ConfigError, match="hashes"):
        PrefixCache(2).match(np.array([0.5]))


class ReferenceLRU:
    """Brute force: a timestamp per cached block; eviction takes the oldest."""

    def __init__(self, capacity):
        self.capacity, self.clock, self.stamp = capacity, 0, {}

    def match(self, seq):
        n = 0
        for h in seq:
            if h not in self.stamp:
                break
            n += 1
        return n

    def insert(self, seq):
        # the first block is the most recent: stamp the sequence back to front
        for h in reversed(seq):
            self.clock += 1
            self.stamp[h] = self.clock
        while len(self.stamp) > self.capacity:
            del self.stamp[min(self.stamp, key=self.stamp.get)]

    def order(self):
        return sorted(self.stamp, key=self.stamp.get)


_ops = st.lists(st.tuples(st.sampled_from(["match", "insert"]), st.lists(st.integers(0, 12), max_size=8)),
                max_size=40)


@given(st.integers(1, 6), _ops)
@settings(max_examples=300, deadline=None)
def test_cache_agrees_with_reference(capacity, ops):
    c, ref = PrefixCache(capacity), ReferenceLRU(capacity)
    hits = lookups = 0
    for op, seq in ops:
        if op == "match":
            n = c.match(seq)
            assert n == ref.match(seq)
            assert all(h in c for h in seq[:n]) and (n == len(seq) or seq[n] not in c)
            hits, lookups = hits + n, lookups + len(seq)
        else:
            c.insert(seq)
            ref.insert(seq)
        assert len(c) <= capacity
        assert list(c) == ref.order()
    assert (c.hits, c.lookups) == (hits, lookups)


@st.composite
def _chained_sequences(draw):
    """Prefix-consistent sequences: paths from the root of a random tree, so a
    hash always follows the same prefix (chained hashes)."""
    parent = [-1]
    for node in range(1, draw(st.integers(1, 25))):
        parent.append(draw(st.integers(-1, node - 1)))

    def path(node):
        out = []
        while node != -1:
            out.append(node)
            node = parent[node]
        return out[::-1]

    return parent, [path(n) for n in draw(st.lists(st.integers(0, len(parent) - 1), min_size=1, max_size=30))]


@given(st.integers(1, 8), _chained_sequences())
@settings(max_examples=200, deadline=None)
def test_chained_hashes_keep_the_cache_prefix_closed(capacity, tree):
    # a block is evicted only after every block below it (radix-tree leaf-first LRU)
    parent, seqs = tree
    c = PrefixCache(capacity)
    for seq in seqs:
        c.insert(seq)
        assert all(parent[h] == -1 or parent[h] in c for h in c)


def test_cache_capacity_blocks():
    assert cache_capacity_blocks(1024, 512) == 2
    assert cache_capacity_blocks(1535, 512) == 2
    assert cache_capacity_blocks(16, 16) == 1
    with pytest.raises(ConfigError, match="kv_tokens_per_rank: 100 tokens hold no full block of 512"):
        cache_capacity_blocks(100, 512)
    with pytest.raises(ConfigError, match="block_tokens"):
        cache_capacity_blocks(100, 0)
    with pytest.raises(ConfigError, match="kv_tokens_per_rank"):
        cache_capacity_blocks(-5, 16)


# --------------------------------------------------------------------------- Workload

def _trace():
    s = np.array([4, 9, 1, 16, 5])
    o = np.array([1, 2, 3, 4, 5])
    a = np.array([0.0, 3.0, 1.0, 2.0, 2.0])
    b = PrefixBlocks.from_lists([[0], [1, 2, 3], [4], [5, 6, 7, 8], [9, 10]], block_tokens=4)
    return s, o, a, b


def _rows(w):
    return [w.blocks.blocks_of(i).tolist() for i in range(len(w))]


def test_workload_validates_blocks():
    s, o, _, b = _trace()
    assert Workload(s, o, blocks=b).blocks is b
    with pytest.raises(ConfigError, match=r"blocks: request 1 has 3 prefix blocks, but its prompt of 13 tokens"):
        Workload(np.array([4, 13, 1, 16, 5]), o, blocks=b)
    with pytest.raises(ConfigError, match=r"blocks: 5 requests"):
        Workload(s[:4], o[:4], blocks=b)
    with pytest.raises(ConfigError, match="blocks: expected bfio.engine.prefix.PrefixBlocks"):
        Workload(s, o, blocks=[[0]] * 5)


def test_draw_carries_blocks_and_keeps_the_draw():
    s, o, a, b = _trace()
    for arr in (None, a):
        plain = draw_workload(s, o, 50, seed=3, arrival_s=arr)
        w = draw_workload(s, o, 50, seed=3, arrival_s=arr, blocks=b)
        assert np.array_equal(w.prefill, plain.prefill) and np.array_equal(w.decode, plain.decode)
        assert plain.blocks is None
        if arr is not None:
            assert np.array_equal(w.arrival_s, plain.arrival_s)
        # each drawn request keeps the hashes of its trace row (rows have distinct prefill here)
        row_of = {int(p): i for i, p in enumerate(s)}
        assert _rows(w) == [b.blocks_of(row_of[int(p)]).tolist() for p in w.prefill]
    with pytest.raises(ConfigError, match=r"blocks: need one entry per trace row \(5 rows\), got 4"):
        draw_workload(s, o, 5, seed=1, blocks=b.take([0, 1, 2, 3]))


def test_replay_and_with_arrivals_carry_blocks():
    s, o, a, b = _trace()
    w = replay_workload(s, o, a, blocks=b)
    # timestamp order (stable): rows 0, 2, 3, 4, 1
    assert w.prefill.tolist() == [4, 1, 16, 5, 9]
    assert _rows(w) == [[0], [4], [5, 6, 7, 8], [9, 10], [1, 2, 3]]
    plain = replay_workload(s, o, a, n=3, seed=7)
    part = replay_workload(s, o, a, n=3, seed=7, blocks=b)
    assert np.array_equal(part.prefill, plain.prefill) and np.array_equal(part.arrival_s, plain.arrival_s)
    check_blocks_cover(part.blocks, part.prefill, "replay")
    moved = with_arrivals(part, [0.0, 1.0, 2.0])
    assert moved.blocks is part.blocks
    assert with_arrivals(plain, [0.0, 1.0, 2.0]).blocks is None
