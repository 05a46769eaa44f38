"""The heap placement's exchange pass with its skip pointer (issue 40,
``bfio.solvers.heap._upsize``) makes the same exchanges as without it
(``tests/heap_upsize_reference.py``, the pass as it was): random instances made
so that exchanges, ties of sizes and slacks equal to a size difference are
common, and the calls of BF-IO runs (free and ``drain`` admission)."""

import numpy as np
import pytest

from bfio.simulator import simulate
from bfio.solvers import heap
from bfio.solvers.terms.kernel import imbalance_only
from bfio.workloads.workload import Workload
from heap_upsize_reference import reference_solve_heap


def _random_call(rng):
    """A heap call with small integer sizes (many ties; slack often equal to a size step)."""
    G = int(rng.integers(2, 12))
    H1 = int(rng.integers(1, 6))
    n = int(rng.integers(4, 60))
    base = np.sort(rng.integers(0, 40, (G, H1)), axis=1)[:, ::-1].astype(np.float64)  # loads fall with h
    base = np.ascontiguousarray(base)
    free = rng.integers(0, 4, G).astype(np.int64)
    free[rng.integers(G)] = max(1, free.max())
    sizes = rng.integers(1, int(rng.choice([4, 12, 30])), n).astype(np.int64)
    life = rng.integers(1, H1 + 2, n).astype(np.int64)
    forced = rng.random(n) < rng.choice([0.0, 0.1])
    cap = int(free.sum())
    U = int(min(n - 1, cap)) if rng.random() < 0.8 else int(rng.integers(1, min(n, cap) + 1))
    U = max(U, int(forced.sum()) if forced.sum() <= cap else 0)
    if forced.sum() > U:
        forced[:] = False
    w = np.ascontiguousarray(rng.choice([1.0, 0.6]) ** np.arange(H1))
    return base, free, sizes, forced, max(U, 1), imbalance_only(life, w, G)


def _both(base, free, sizes, forced, U, kt, passes=heap.UPSIZE_PASSES):
    new = heap._solve_heap(base, free, sizes, forced, U, kt, passes)
    old = reference_solve_heap(base, free, sizes, forced, U, kt, passes)
    return new, old


def test_skip_pointer_makes_the_same_exchanges_on_random_calls():
    rng = np.random.default_rng(4040)
    exchanged = 0
    for _ in range(3000):
        call = _random_call(rng)
        (a_new, r_new), (a_old, r_old) = _both(*call)
        assert np.array_equal(a_new, a_old), call
        assert r_new == r_old
        # the pass does something on these calls: without it the placement differs
        exchanged += not np.array_equal(a_new, heap._solve_heap(*call, 0)[0])
    assert exchanged > 300  # the comparison is not vacuous


@pytest.mark.parametrize("admission", ["free", "drain:20"])
def test_skip_pointer_makes_the_same_exchanges_on_bfio_calls(monkeypatch, admission):
    """Every heap call of two BF-IO runs solved both ways."""
    calls = []
    kernel = heap._solve_heap

    def spy(*args):
        calls.append(tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))
        return kernel(*args)

    monkeypatch.setattr(heap, "_solve_heap", spy)
    rng = np.random.default_rng(7)
    n = 3000
    w = Workload(rng.integers(1, 2000, n), rng.integers(1, 120, n))
    simulate(w, 16, 8, "bfio", seed=1, show_progress=False,
             policy_options={"placement": "heap", "admission": admission, "horizon": 20})
    monkeypatch.undo()
    assert len(calls) >= 20
    exchanged = 0
    for args in calls:
        new, old = _both(*args)
        assert np.array_equal(new[0], old[0]) and new[1] == old[1]
        exchanged += not np.array_equal(new[0], heap._solve_heap(*args[:-1], 0)[0])
    assert exchanged > 0
