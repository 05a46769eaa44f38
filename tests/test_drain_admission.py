"""Admission ``drain:N`` of BF-IO (:mod:`bfio.solvers.drain`): the invariants of
:func:`plan_drain` on random inputs, the placement cost (:func:`bfio.solvers.fast.worker_costs`) against its formula,
and the rule in the simulator (bounded waits where ``free`` starves, every
request served, deterministic, refused where it cannot apply)."""

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.solvers.drain import plan_drain as plan_drain_terms
from bfio.solvers.terms.kernel import imbalance_only
from bfio.solvers.fast import worker_costs
from bfio.simulator import simulate
from bfio.lookahead.admission import parse_admission
from bfio.workloads.workload import Workload

N_DUE = 20  # drain:N of the simulation tests
HORIZON = 10


def plan_drain(base, free, sizes, life, ages, pool, N, weights, reserved, place_all):
    """:func:`bfio.solvers.drain.plan_drain` under the imbalance alone (its kernel terms
    from the lifetimes and weights, :func:`bfio.solvers.terms.kernel.imbalance_only`)."""
    kt = imbalance_only(life, weights, np.shape(base)[0])
    return plan_drain_terms(base, free, sizes, kt, ages, pool, N, reserved, place_all)


# -- helpers ------------------------------------------------------------------------------
def _random_case(rng):
    """Random inputs of one routing call: loads, free slots, waiting requests (oldest
    first, distinct ids) and reservations from earlier calls (distinct workers, some of
    them stale: requests no longer waiting, or not due)."""
    G = int(rng.integers(1, 7))
    H1 = int(rng.integers(1, 8))
    n = int(rng.integers(0, 18))
    N = int(rng.integers(1, 6))
    if rng.random() < 0.5:
        base = rng.integers(0, 3000, size=(G, H1)).astype(np.int64)
    else:
        base = rng.random((G, H1)) * 3000.0
    free = rng.integers(0, 4, size=G).astype(np.int64)
    sizes = rng.integers(1, 4000, size=n).astype(np.int64)
    life = rng.integers(1, H1 + 3, size=n).astype(np.int64)
    ages = np.sort(rng.integers(0, 3 * N + 2, size=n))[::-1].astype(np.int64)
    pool = rng.permutation(1000)[:n].astype(np.int64)
    weights = np.ones(H1) if rng.random() < 0.3 else rng.random(H1) + 0.05
    reserved = {}
    workers = [int(g) for g in rng.permutation(G)]
    candidates = [int(r) for r in pool] + [5000 + i for i in range(3)]  # the latter: gone from the pool
    rng.shuffle(candidates)
    for rid in candidates:
        if not workers or rng.random() < 0.4:
            continue
        k = np.flatnonzero(pool == rid)
        if k.size and ages[k[0]] < N and rng.random() < 0.8:
            continue  # mostly reservations of due requests, as the policy keeps them
        reserved[rid] = workers.pop()
    place_all = bool(rng.random() < 0.3)
    return base, free, sizes, life, ages, pool, N, weights, reserved, place_all


def _profiles_added(G, H1, sizes, life, pre):
    """The loads the placements ``pre`` add: ``s_j + h`` for ``h < min(l_j, H1)``."""
    out = np.zeros((G, H1))
    h = np.arange(H1)
    for k in np.flatnonzero(pre >= 0):
        lf = int(min(life[k], H1))
        out[pre[k], :lf] += float(sizes[k]) + h[:lf]
    return out


def _fits(base_row, E, s, lf):
    h = np.arange(lf, dtype=np.float64)
    return bool(np.all(base_row[:lf] + s + h <= E[:lf]))


def _check_call(base, free, sizes, life, ages, pool, N, weights, reserved, place_all):
    """Run plan_drain on copies and assert every documented invariant; returns its output."""
    G, H1 = base.shape
    n = sizes.shape[0]
    base_in, free_in = base.copy(), free.copy()
    before = dict(reserved)
    after = dict(reserved)
    pre, base_out, free_out = plan_drain(base, free, sizes, life, ages, pool, N, weights, after, place_all)

    # the caller's arrays are not touched
    assert np.array_equal(base, base_in) and np.array_equal(free, free_in)
    assert pre.shape == (n,) and pre.dtype.kind in "iu"
    assert np.all((pre >= -1) & (pre < G))
    placed = pre >= 0
    counts = np.bincount(pre[placed], minlength=G)
    # free slots: the input less the placements, never negative (at most free[g] per worker)
    assert np.all(counts <= free_in)
    assert np.array_equal(np.asarray(free_out), free_in - counts)
    assert np.all(np.asarray(free_out) >= 0)
    # loads: the input plus each placed request's s_j + h while h < min(l_j, H1)
    expected = base_in.astype(np.float64) + _profiles_added(G, H1, sizes, life, pre)
    assert np.allclose(np.asarray(base_out, dtype=np.float64), expected, rtol=0, atol=1e-6)
    assert int(placed.sum()) <= min(n, int(free_in.sum()))  # never more than U = min(|R_wait|, sum cap)

    due = ages >= N
    due_ids = set(pool[due].tolist())
    # reservations: distinct workers, live due requests only, none for a placed request
    assert len(set(after.values())) == len(after)
    assert set(after) <= due_ids
    assert all(0 <= g < G for g in after.values())
    placed_ids = set(pool[placed].tolist())
    assert not (placed_ids & set(after))
    # a live reservation never moves: its request is placed there or keeps it, unless it is
    # due at 2N and its worker is full: then it is placed on another worker with a free slot
    late = ages >= 2 * N
    kept_before = {r: g for r, g in before.items() if r in due_ids}
    for rid, g in kept_before.items():
        k = int(np.flatnonzero(pool == rid)[0])
        moved = late[k] and free_out[g] == 0 and pre[k] >= 0 and rid not in after
        assert (pre[k] == g and rid not in after) or (pre[k] == -1 and after.get(rid) == g) or moved, \
            (rid, g, pre[k])
    # workers held all along by a reservation that is still there: nobody else's due request
    # goes there, but one past its deadline 2N (it takes any free slot)
    held = {g: r for r, g in kept_before.items() if after.get(r) == g}
    for k in np.flatnonzero(due & placed & ~late):
        rid = int(pool[k])
        g = int(pre[k])
        assert held.get(g, rid) == rid, f"due request {rid} placed on worker {g}, reserved for {held.get(g)}"
        if rid not in kept_before:  # reserved this call: never a worker another request holds
            assert g not in held
    for rid, g in after.items():
        if rid not in kept_before:
            assert g not in held or held[g] == rid
    # requests that are not due go only onto reserved workers, as their smallest fill
    young = ~due
    young_placed = young & placed
    if young_placed.any():
        assert set(pre[young_placed].tolist()) <= set(after.values())
        left = young & ~placed
        if left.any():
            assert sizes[young_placed].max() <= sizes[left].min(), "the fill took a larger request first"
    if (young & ~placed).any():  # requests left over: every reserved worker is full
        assert all(free_out[g] == 0 for g in after.values())
    # a reservation from an earlier call whose worker has a free slot: placed when it fits,
    # when due at 2N, or when every waiting request is admitted; else it does not fit there
    E_in = base_in.max(axis=0).astype(np.float64)
    for rid, g in kept_before.items():
        k = int(np.flatnonzero(pool == rid)[0])
        if free_in[g] == 0:
            assert pre[k] == -1 or late[k]
            continue
        lf = int(min(life[k], H1))
        if ages[k] >= 2 * N or place_all or _fits(base_in[g].astype(np.float64), E_in, float(sizes[k]), lf):
            # placed there, unless an older request past its deadline took the last free slot
            assert pre[k] == g or (free_out[g] == 0 and (late & placed & (pre == g)).any()), \
                (rid, g, ages[k], place_all)
        if pre[k] == -1 and free_out[g] > 0:
            assert not _fits(base_in[g].astype(np.float64), E_in, float(sizes[k]), lf)
    # an unplaced request due at 2N: no worker had a free slot left at its turn (so none is left
    # now: the fill only takes free slots, and no request younger than N was placed); with
    # place_all, one holding a worker: that worker has no free slot
    for k in np.flatnonzero(late & ~placed):
        assert int(np.sum(free_out)) == 0 and not young_placed.any(), (pool[k], np.asarray(free_out).tolist())
    for rid, g in after.items():
        k = int(np.flatnonzero(pool == rid)[0])
        if place_all:
            assert free_out[g] == 0, (rid, g, ages[k], free_in.tolist(), np.asarray(free_out).tolist())
    return pre, base_out, free_out, before, after


# -- plan_drain on random inputs ------------------------------------------------------------------
def test_plan_drain_invariants_on_random_calls():
    rng = np.random.default_rng(20240527)
    seen_due = seen_young_fill = seen_reserved = seen_late = 0
    for _ in range(600):
        args = _random_case(rng)
        pre, _, _, before, after = _check_call(*args)
        ages, N = args[4], args[6]
        seen_due += int(((pre >= 0) & (ages >= N)).any())
        seen_young_fill += int(((pre >= 0) & (ages < N)).any())
        seen_reserved += int(bool(after))
        seen_late += int(((pre >= 0) & (ages >= 2 * N)).any())
    # the random calls exercise every branch
    assert min(seen_due, seen_young_fill, seen_reserved, seen_late) >= 20, \
        (seen_due, seen_young_fill, seen_reserved, seen_late)


def test_plan_drain_over_a_sequence_of_calls_keeps_reservations_consistent():
    """The reservations persist across calls: run calls whose pool loses the placed
    requests and ages by one step, and check the invariants at every call."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        G, H1, N = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        weights = rng.random(H1) + 0.1
        nxt = 0
        pool, sizes, life, enter = [], [], [], []
        reserved = {}
        for step in range(4 * N + 6):
            while len(pool) < 3 * G:
                pool.append(nxt)
                sizes.append(int(rng.integers(1, 5000)))
                life.append(int(rng.integers(1, H1 + 3)))
                enter.append(step)
                nxt += 1
            base = rng.integers(0, 4000, size=(G, H1)).astype(np.float64)
            free = rng.integers(0, 3, size=G).astype(np.int64)
            a_pool = np.asarray(pool, dtype=np.int64)
            ages = step - np.asarray(enter, dtype=np.int64)
            pre, _, _, _, after = _check_call(base, free, np.asarray(sizes, dtype=np.int64),
                                              np.asarray(life, dtype=np.int64), ages, a_pool, N, weights,
                                              reserved, False)
            reserved = after
            # the solver admits a few more of the rest (any of them), like a routing call
            keep = pre < 0
            extra = np.flatnonzero(keep)[: int(rng.integers(0, 2))]
            keep[extra] = False
            pool = [p for p, k in zip(pool, keep) if k]
            sizes = [s for s, k in zip(sizes, keep) if k]
            life = [v for v, k in zip(life, keep) if k]
            enter = [e for e, k in zip(enter, keep) if k]


def test_no_due_request_returns_the_inputs_unchanged():
    rng = np.random.default_rng(3)
    for _ in range(50):
        base, free, sizes, life, ages, pool, N, weights, reserved, place_all = _random_case(rng)
        ages = np.minimum(ages, N - 1)  # nobody has waited N steps
        reserved = {int(r): g for r, g in reserved.items()}
        pre, base_out, free_out = plan_drain(base, free, sizes, life, ages, pool, N, weights, reserved, place_all)
        assert np.all(pre == -1) and pre.shape == sizes.shape
        assert base_out is base or np.array_equal(base_out, base)
        assert free_out is free or np.array_equal(free_out, free)
        assert reserved == {}, "reservations of requests that are not due (or gone) are released"


def test_a_due_request_reserves_the_worker_where_it_raises_j_least():
    rng = np.random.default_rng(5)
    for _ in range(200):
        G, H1 = int(rng.integers(2, 7)), int(rng.integers(1, 8))
        base = rng.integers(0, 3000, size=(G, H1)).astype(np.float64)
        free = rng.integers(0, 3, size=G).astype(np.int64)
        s, lf, N = int(rng.integers(1, 4000)), int(rng.integers(1, H1 + 3)), 4
        weights = rng.random(H1) + 0.05
        reserved = {}
        pre, _, _ = plan_drain(base, free, np.array([s]), np.array([lf]), np.array([N]), np.array([77]), N,
                               weights, reserved, False)
        h = np.arange(H1, dtype=np.float64)
        cost = worker_costs(base.max(axis=0) - base - h, float(s), min(lf, H1), float(G), weights)
        g = int(np.argmin(cost))
        assert (pre[0] == g and reserved == {}) or (pre[0] == -1 and reserved == {77: g}), (pre, reserved, g)
        fits = _fits(base[g], base.max(axis=0), float(s), min(lf, H1))
        assert (pre[0] == g) == (free[g] > 0 and fits)


def test_drain_places_on_fit_fills_with_the_smallest_and_places_at_two_n():
    N = 5
    base = np.array([[1000.0, 1000.0, 1000.0], [0.0, 0.0, 0.0]])
    weights = np.ones(3)
    life = np.array([3, 3, 3, 3])
    pool = np.array([10, 11, 12, 13])
    # a due request that fits on the empty worker is placed there at once
    reserved = {}
    pre, base2, free2 = plan_drain(base, np.array([1, 1]), np.array([100, 300, 10, 50]), life,
                                   np.array([N, 0, 0, 0]), pool, N, weights, reserved, False)
    assert pre.tolist() == [1, -1, -1, -1] and reserved == {}
    assert free2.tolist() == [1, 0] and base2[1].tolist() == [100.0, 101.0, 102.0]
    # one that does not fit anywhere reserves the cheaper worker, whose slots take the smallest requests
    reserved = {}
    sizes = np.array([5000, 300, 10, 50])
    pre, _, free2 = plan_drain(base, np.array([2, 2]), sizes, life, np.array([N, 0, 0, 0]), pool, N, weights,
                               reserved, False)
    assert reserved == {10: 1}
    assert pre.tolist() == [-1, -1, 1, 1] and free2.tolist() == [2, 0]
    # still waiting at 2N - 1: not placed; at 2N: placed on its worker, the reservation released
    pre, _, _ = plan_drain(base, np.array([2, 1]), sizes, life, np.array([2 * N - 1, 0, 0, 0]), pool, N, weights,
                           reserved, False)
    assert pre[0] == -1 and reserved == {10: 1}
    pre, _, free2 = plan_drain(base, np.array([2, 1]), sizes, life, np.array([2 * N, 0, 0, 0]), pool, N, weights,
                               reserved, False)
    assert pre.tolist() == [1, -1, -1, -1] and reserved == {} and free2.tolist() == [2, 0]
    # with every waiting request admitted (place_all) it is placed before 2N too
    reserved = {10: 1}
    pre, _, _ = plan_drain(base, np.array([2, 2]), sizes, life, np.array([N + 1, 0, 0, 0]), pool, N, weights,
                           reserved, True)
    assert pre[0] == 1 and reserved == {}


def test_an_exact_fit_is_placed():
    """Fits means no raise of the envelope at any offset: equal to it is a fit."""
    base = np.array([[1000.0, 1000.0, 1000.0], [0.0, 0.0, 0.0]])
    for s, want in ((998, 1), (999, -1)):  # s + h <= 1000 for h = 0, 1, 2 only when s <= 998
        reserved = {}
        pre, _, _ = plan_drain(base, np.array([1, 1]), np.array([s]), np.array([3]), np.array([4]), np.array([7]),
                               4, np.ones(3), reserved, False)
        assert pre[0] == want, s
        assert reserved == ({} if want >= 0 else {7: 1})


def test_a_placement_raises_the_envelope_the_next_request_fits_under():
    """A request placed at 2N raises E; a later due request is checked against the raised E."""
    N = 3
    base = np.array([[500.0], [0.0]])
    reserved = {}
    pre, base_out, _ = plan_drain(base, np.array([1, 1]), np.array([1000, 400]), np.array([5, 5]),
                                  np.array([2 * N, N]), np.array([1, 2]), N, np.ones(1), reserved, False)
    # 1000 goes to worker 1 (it raises J least there) and is placed, being due at 2N; then
    # 400 fits on worker 0 under the new envelope 1000 (500 + 400 <= 1000)
    assert pre.tolist() == [1, 0] and reserved == {}
    assert base_out[:, 0].tolist() == [900.0, 1000.0]


def test_a_worker_freed_by_a_placement_can_be_reserved_again_in_the_call():
    """One worker with two free slots: the first due request is placed (2N), the
    second reserves the same worker in the same call (its reservation was released)."""
    N = 2
    base = np.array([[100.0, 100.0]])
    reserved = {}
    pre, _, free_out = plan_drain(base, np.array([2]), np.array([5000, 6000]), np.array([2, 2]),
                                  np.array([2 * N, N]), np.array([40, 41]), N, np.ones(2), reserved, False)
    assert pre.tolist() == [0, -1]
    assert reserved == {41: 0}
    assert free_out.tolist() == [1]


def test_worker_costs_is_the_formula():
    """The cost drain:N minimizes when it picks a worker (bfio.solvers.fast.worker_costs,
    the kernels' candidate_cost per row): G sum_{h<l} w_h max(0, s - c_g(h)) less the
    weighted volume sum_{h<l} w_h (s + h)."""
    rng = np.random.default_rng(9)
    for _ in range(200):
        G, H1 = int(rng.integers(1, 8)), int(rng.integers(1, 10))
        c = rng.normal(0, 500, size=(G, H1))
        size = float(rng.integers(1, 2000))
        life = int(rng.integers(1, H1 + 1))
        w = rng.random(H1)
        workers = int(rng.integers(1, 20))
        got = worker_costs(c, size, life, float(workers), w)
        volume = sum(w[h] * (size + h) for h in range(life))
        want = np.array([workers * sum(w[h] * max(0.0, size - c[g, h]) for h in range(life)) - volume
                         for g in range(G)])
        assert got.shape == (G,)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-9)
    # only the volume where the request fits under the headroom at every offset of its life
    c = np.array([[10.0, 10.0, -5.0], [1.0, 10.0, 10.0]])
    assert (worker_costs(c, 5.0, 2, 3.0, np.ones(3)) + 11.0).tolist() == [0.0, 12.0]


# -- parse_admission ----------------------------------------------------------------------------
def test_parse_admission_drain():
    assert parse_admission("drain:5") == ("drain", 5)
    assert parse_admission("drain:1") == ("drain", 1)
    for bad in ("drain:0", "drain:", "drain:x", "drain", "drain:-3", "drain:2.5", "drain: 4", " drain:4"):
        with pytest.raises(ConfigError, match="admission"):
            parse_admission(bad)


# -- the policy in the simulator ---------------------------------------------------------------
def starving_workload(n=2000, seed=3):
    """Small requests plus two huge prompts that free admission keeps postponing."""
    rng = np.random.default_rng(seed)
    prefill = rng.integers(50, 500, n)
    prefill[[5, 17]] = [200_000, 150_000]
    return Workload(prefill=prefill, decode=rng.integers(1, 20, n))


def _run(w, admission, placement="greedy", seed=0, G=2, S=4):
    return simulate(w, G, S, "bfio", seed=seed, show_progress=False,
                    policy_options={"horizon": HORIZON, "admission": admission, "placement": placement})


def _stable(metrics):
    """The metrics that do not depend on wall-clock timing."""
    return {k: v for k, v in metrics.items() if not k.startswith(("route_s", "solver_s"))}


def _completed(r, n):
    return len(r.requests) == n and r.requests["finish_step"].notna().all()


@pytest.fixture(scope="module")
def starving():
    w = starving_workload()
    return w, _run(w, "free"), _run(w, f"drain:{N_DUE}")


def test_drain_bounds_the_waits_free_admission_lets_grow(starving):
    w, free, drain = starving
    assert free.metrics["wait_steps_max"] > 4 * N_DUE  # the workload does starve under free admission
    assert _completed(drain, len(w)) and _completed(free, len(w))
    assert drain.metrics["drain_admissions"] > 0
    assert "drain_admissions" not in free.metrics and "aging_forced_admissions" not in drain.metrics
    # a request is reserved a worker at N and placed there at 2N at the latest, once that worker
    # has a free slot, else the solver places it (test_drain_wait_is_at_most_two_n)
    bound = 2 * N_DUE + int(np.max(w.decode))
    assert drain.metrics["wait_steps_max"] <= bound
    assert drain.requests["wait_steps"].max() == drain.metrics["wait_steps_max"]
    # the two huge prompts the free rule starves are admitted under drain
    assert free.requests["wait_steps"].max() in free.requests["wait_steps"].iloc[[5, 17]].tolist()
    assert drain.requests["wait_steps"].iloc[[5, 17]].max() <= bound


def test_a_request_past_2n_waits_only_while_no_slot_is_free(monkeypatch, starving):
    """The deadline: after every call of a run, a request that waited 2N steps and is still
    waiting means no worker had a free slot left for it (a congested pool can make it wait
    longer than 2N, as aging:N's requests wait longer than N when slots are short)."""
    import bfio.solvers.central as bfio_module

    w, _, _ = starving
    real_plan = bfio_module.plan_drain
    seen = {"late_waiting": 0, "calls": 0}

    def plan(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all):
        pre, b, f = real_plan(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all)
        seen["calls"] += 1
        if ((pre < 0) & (ages >= 2 * due_steps)).any():
            seen["late_waiting"] += 1
            assert int(np.sum(f)) == 0, "a request past its deadline waits while a slot is free"
        return pre, b, f

    monkeypatch.setattr(bfio_module, "plan_drain", plan)
    run = _run(w, f"drain:{N_DUE}")
    assert seen["calls"] > 0
    assert run.metrics["wait_steps_max"] > 2 * N_DUE or seen["late_waiting"] == 0


def test_drain_is_deterministic(starving):
    w, _, drain = starving
    again = _run(w, f"drain:{N_DUE}")
    assert _stable(again.metrics) == _stable(drain.metrics)
    assert again.requests["worker"].equals(drain.requests["worker"])
    assert again.requests["start_step"].equals(drain.requests["start_step"])


def test_the_policy_keeps_reservations_across_calls_and_admits_exactly_u(monkeypatch):
    """CentralCall._route_drain hands plan_drain one reservation map for the whole run (each call
    sees what the last left), keeps its placements, and admits U = min(|R_wait|, sum cap)."""
    import bfio.solvers.central as bfio_module

    calls = []
    real_plan = bfio_module.plan_drain

    def plan(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all):
        entry = dict(reserved)
        pre, b, f = real_plan(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all)
        calls.append({"entry": entry, "exit": dict(reserved), "map": id(reserved), "pre": pre.copy(),
                      "U": min(sizes.shape[0], int(np.sum(free))), "place_all": place_all, "n": sizes.shape[0],
                      "due_steps": due_steps})
        return pre, b, f

    real_route = bfio_module.CentralCall._route_drain
    outs = []

    def route(self, *args):
        out = real_route(self, *args)
        outs.append(out.copy())
        return out

    monkeypatch.setattr(bfio_module, "plan_drain", plan)
    monkeypatch.setattr(bfio_module.CentralCall, "_route_drain", route)
    w = starving_workload(800, seed=6)
    r = _run(w, "drain:5", G=2, S=3)
    assert _completed(r, len(w))
    assert len(calls) == len(outs) > 10
    assert len({c["map"] for c in calls}) == 1
    assert calls[0]["entry"] == {}
    assert any(c["exit"] for c in calls)  # reservations were made ...
    for prev, cur in zip(calls, calls[1:]):  # ... and each call starts from the last one's
        assert set(cur["entry"].items()) == set(prev["exit"].items())
    for c, out in zip(calls, outs):
        assert c["due_steps"] == 5
        assert c["place_all"] == (c["U"] == c["n"])
        kept = c["pre"] >= 0
        assert np.array_equal(out[kept], c["pre"][kept])
        assert int((out >= 0).sum()) == c["U"]
    assert r.metrics["drain_admissions"] > 0


def test_drain_that_never_comes_due_is_free_admission():
    """With N beyond every wait no request is reserved: the run is the free rule's, step for step."""
    w = starving_workload(600, seed=4)
    free = _run(w, "free")
    assert free.metrics["wait_steps_max"] < 100_000
    never = _run(w, "drain:100000")
    assert never.metrics["drain_admissions"] == 0
    assert never.requests["worker"].equals(free.requests["worker"])
    assert never.requests["start_step"].equals(free.requests["start_step"])
    stable = _stable(never.metrics)
    stable.pop("drain_admissions")
    assert stable == _stable(free.metrics)


@pytest.mark.parametrize("placement", ["greedy", "heap"])
def test_drain_with_each_placement(placement):
    w = starving_workload(1200, seed=5)
    r = _run(w, f"drain:{N_DUE}", placement=placement, G=4, S=2)
    assert _completed(r, len(w))
    assert r.metrics["drain_admissions"] > 0
    assert r.metrics["wait_steps_max"] <= 2 * N_DUE + int(np.max(w.decode))
    assert ("heap_key_refreshes" in r.metrics) == (placement == "heap")
    free = _run(w, "free", placement=placement, G=4, S=2)
    assert free.metrics["wait_steps_max"] > r.metrics["wait_steps_max"]


def test_drain_needs_the_fast_solver():
    with pytest.raises(ConfigError, match="admission"):
        make_policy("bfio", admission="drain:5", solver="highs")
    make_policy("bfio", admission="drain:5", solver="fast")  # accepted
    for bad in ("drain:0", "drain:x"):
        with pytest.raises(ConfigError, match="admission"):
            make_policy("bfio", admission=bad)


def test_drain_refuses_capturing_instances():
    pol = make_policy("bfio", admission="drain:5")
    with pytest.raises(ConfigError, match="admission"):
        pol.capture_instances(lambda inst: None)
    pol.capture_instances(None)  # detaching is fine
    make_policy("bfio", admission="aging:5").capture_instances(lambda inst: None)
