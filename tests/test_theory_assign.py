"""BF-IO (H=0) assignments of the theory checks: Lemma 1 and the separation certificate."""
import numpy as np
from hypothesis import given, settings, strategies as st

from bfio.theory.assign import fcfs_round_loads, is_separated, place_balanced, sorted_rounds_loads


@settings(max_examples=60, deadline=None)
@given(G=st.integers(2, 12), B=st.integers(1, 10), s_max=st.integers(2, 60), seed=st.integers(0, 2**31))
def test_sorted_rounds_is_smax_balanced(G, B, s_max, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, s_max + 1, size=(3, G * B))
    L = sorted_rounds_loads(x, G, B)
    assert np.allclose(L.sum(axis=1), x.sum(axis=1))
    assert np.all(L.max(axis=1) - L.min(axis=1) <= s_max - 1)  # Lemma 1 (proved <= s_max - 1)
    assert np.all(L.max(axis=1) >= np.ceil(x.sum(axis=1) / G))  # LP bound


def test_lemma1_check_fails_on_fcfs():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 101, size=(50, 16 * 32))
    gap = np.ptp(fcfs_round_loads(x, 16, 32), axis=1)
    assert np.any(gap > 100)


@settings(max_examples=80, deadline=None)
@given(G=st.integers(2, 10), B=st.integers(1, 8), s_max=st.integers(2, 50), seed=st.integers(0, 2**31))
def test_place_balanced_fills_slots_and_certifies(G, B, s_max, seed):
    rng = np.random.default_rng(seed)
    free = rng.integers(0, B + 1, size=G).astype(np.int64)
    if free.sum() == 0:
        free[0] = 1
    pre = rng.integers(0, 5 * s_max * B + 1, size=G).astype(np.float64)
    items = rng.integers(1, s_max + 1, size=int(free.sum())).astype(np.int64)
    w, cert, _ = place_balanced(pre, free, items, s_max, 10**6)
    assert np.array_equal(np.bincount(w, minlength=G), free)
    loads = pre + np.bincount(w, weights=items, minlength=G)
    p, q = int(np.argmax(loads)), int(np.argmin(loads))
    assert cert in (1, 2)
    if cert == 1:
        assert loads[p] - loads[q] <= s_max
    else:
        assert is_separated(w, items, p, q)


def test_separation_detects_unseparated_assignment():
    items = np.array([10, 1, 5, 2], dtype=np.int64)
    w = np.array([0, 1, 0, 1], dtype=np.int64)  # worker 0 holds 10, 5; worker 1 holds 1, 2
    assert not is_separated(w, items, 0, 1)
    assert is_separated(w, items, 1, 0)
