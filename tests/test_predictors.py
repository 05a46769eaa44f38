"""Oracle-free predictors (``empirical``, ``geometric``), the float profile
:func:`expected_loads`, the noisy predictor's full noise range, and BF-IO runs
with every predictor."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.predictors import PREDICTORS, EmpiricalPredictor, GeometricPredictor, make_predictor
from bfio.simulator import simulate
from bfio.solvers.fast import _solve_fast, persisting, solve_fast
from bfio.solvers.terms.kernel import imbalance_only
from bfio.solvers.instance import Instance
from bfio.lookahead.profiles import expected_loads, predicted_loads
from bfio.workloads.workload import Workload

lengths = st.lists(st.integers(1, 60), min_size=1, max_size=80)


def fitted(cls, decode, completed=None):
    p = cls()
    decode = np.asarray(decode, dtype=np.int64)
    p.observe(np.arange(decode.shape[0]) if completed is None else completed, decode)
    return p


# -- empirical survival ----------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(lengths, st.integers(0, 70), st.integers(0, 12))
def test_empirical_matches_direct_survival(os_, tau, H):
    o = np.asarray(os_)
    p = fitted(EmpiricalPredictor, o)
    t = np.arange(0, 80)
    direct_S = np.array([(o > x).mean() for x in t])
    assert np.allclose(p.survival_at(t), direct_S)
    q = p.active_probability([tau], H)[0]
    if (o > tau).any():
        expect = [(o > tau + h).sum() / (o > tau).sum() for h in range(H + 1)]
    else:  # outlived every completed request: no evidence, persists
        expect = np.ones(H + 1)
    assert np.allclose(q, expect)


def test_empirical_hand_made():
    p = fitted(EmpiricalPredictor, [2, 2, 5, 9])
    assert np.allclose(p.survival_at([0, 1, 2, 3, 5, 8, 9, 20]), [1, 1, 0.5, 0.5, 0.25, 0.25, 0, 0])
    # tau = 2: survivors {5, 9}; h = 3 -> o > 5: {9}
    assert np.allclose(p.active_probability([2], 7)[0], [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0])
    assert np.allclose(p.active_probability([9, 30], 3), 1.0)


def test_cold_start_never_finishes():
    for cls in (EmpiricalPredictor, GeometricPredictor):
        p = cls()
        p.observe(np.zeros(0, dtype=np.int64), np.array([3, 4]))
        assert np.array_equal(p.active_probability([0, 5, 100], 6), np.ones((3, 7)))


# -- geometric MLE ---------------------------------------------------------------------
@pytest.mark.parametrize("p_true", [0.02, 0.1, 0.4])
def test_geometric_mle_close_to_truth(p_true):
    o = np.random.default_rng(3).geometric(p_true, size=20_000)  # support {1, 2, ...}
    g = fitted(GeometricPredictor, o)
    assert g.p == pytest.approx(len(o) / o.sum())
    assert abs(g.p - p_true) < 4 * np.sqrt(p_true ** 2 * (1 - p_true) / len(o)) + 1e-4
    q = g.active_probability([0, 7, 10_000], 5)
    assert np.allclose(q, (1 - g.p) ** np.arange(6))  # memoryless: same for every tau


# -- incremental == from scratch ---------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(lengths, st.lists(st.integers(0, 80), max_size=6))
def test_incremental_equals_from_scratch(os_, cuts):
    o = np.asarray(os_, dtype=np.int64)
    order = np.random.default_rng(len(o)).permutation(len(o))
    for cls in (EmpiricalPredictor, GeometricPredictor):
        inc = cls()
        for c in sorted(min(c, len(o)) for c in cuts) + [len(o)]:
            inc.observe(order[:c], o)  # completions so far, in completion order
        assert inc.consumed == len(o)
        scratch = fitted(cls, o, order)
        t = np.arange(0, 70)
        assert np.array_equal(inc.survival_at(t), scratch.survival_at(t))
        assert np.array_equal(inc.active_probability(t, 5), scratch.active_probability(t, 5))


def test_observe_reads_only_new_completions():
    p = EmpiricalPredictor()
    decode = np.array([3, 5, 7])
    p.observe(np.array([0]), decode)
    assert p.n == 1
    decode[0] = 1000  # already consumed: must not be re-read
    p.observe(np.array([0, 2]), decode)
    assert p.n == 2 and p.consumed == 2
    assert np.allclose(p.survival_at([2, 3, 6, 7, 999]), [1, 0.5, 0.5, 0, 0])


# -- probabilities ---------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(lengths, st.lists(st.integers(0, 100), min_size=1, max_size=10), st.integers(0, 15),
       st.sampled_from([EmpiricalPredictor, GeometricPredictor]))
def test_probabilities_in_unit_interval_and_non_increasing(os_, taus, H, cls):
    q = fitted(cls, os_).active_probability(taus, H)
    assert q.shape == (len(taus), H + 1)
    assert np.all((q >= 0) & (q <= 1))
    assert np.allclose(q[:, 0], 1.0)
    assert np.all(np.diff(q, axis=1) <= 1e-12)


# -- float profile ---------------------------------------------------------------------
def random_slots(rng, G=5, B=4, n=30, max_tau=25):
    prefill = rng.integers(1, 500, n)
    generated = rng.integers(0, max_tau, n)
    slot = np.full((G, B), -1, dtype=np.int64)
    ids = rng.permutation(n)[: G * B - 3]
    slot.flat[rng.permutation(G * B)[: ids.shape[0]]] = ids
    return slot, prefill, generated


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(0, 30))
def test_float_profile_equals_integer_profile_for_0_1_probabilities(seed, o, H):
    """Every request has decode length ``o`` (a point mass): ``q_i(h) = 1{tau_i + h < o}``."""
    rng = np.random.default_rng(seed)
    slot, prefill, _ = random_slots(rng)
    generated = rng.integers(0, o, prefill.shape[0])  # active: tau < o
    p = fitted(EmpiricalPredictor, np.full(7, o))
    surv, rho = p.survival()
    got = expected_loads(slot, prefill, generated, surv, rho, H)
    want = predicted_loads(slot, prefill, generated, np.full(prefill.shape[0], o), H)
    assert np.array_equal(got, want.astype(float))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), lengths, st.integers(0, 20), st.sampled_from([EmpiricalPredictor, GeometricPredictor]))
def test_expected_loads_match_direct_expectation(seed, os_, H, cls):
    rng = np.random.default_rng(seed)
    slot, prefill, generated = random_slots(rng, max_tau=70)
    p = fitted(cls, os_)
    surv, rho = p.survival()
    got = expected_loads(slot, prefill, generated, surv, rho, H)
    want = np.zeros_like(got)
    h = np.arange(H + 1)
    for g in range(slot.shape[0]):
        for i in slot[g][slot[g] >= 0]:
            want[g] += (prefill[i] + generated[i] + h) * p.active_probability([generated[i]], H)[0]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-9)


def test_fast_solver_on_float64_loads_places_as_integer_arithmetic_does():
    """solve_fast takes integer loads as float64 (bfio.solvers.touched.solver_loads,
    issue 42): the kernel compiled for integer loads here (exact integer
    arithmetic) places every request the same way, and so does a float base."""
    rng = np.random.default_rng(11)
    for k in range(30):
        G, H, n = 6, int(rng.integers(0, 8)), int(rng.integers(1, 15))
        base = rng.integers(0, 3000, (G, H + 1))
        free = rng.integers(0, 4, G)
        free[0] = max(free[0], 1)
        sizes = rng.integers(1, 900, n)
        inst = Instance(base=base, free=free, sizes=sizes, ages=np.zeros(n), discount=1.0 if k % 2 else 0.6)
        forced = inst.forced()
        life = persisting(n) if k % 3 else rng.integers(1, H + 3, n)
        args = (inst.free, sizes, life, forced, inst.admissible, 4, inst.weights)
        kt = imbalance_only(life, inst.weights, G)
        integer = _solve_fast(np.ascontiguousarray(inst.base, dtype=np.int64), inst.free, sizes, forced,
                              inst.admissible, 4, kt)
        assert np.array_equal(solve_fast(inst.base, *args), integer)
        assert np.array_equal(solve_fast(inst.base.astype(float), *args), integer)
        frac = inst.base + rng.random(inst.base.shape)
        c = solve_fast(frac, inst.free, sizes, persisting(n), forced, inst.admissible, 4, inst.weights)
        inst.check(c)


# -- options ---------------------------------------------------------------------------
def test_option_values_and_errors():
    assert {"empirical", "geometric"} <= set(PREDICTORS)
    for name in ("empirical", "geometric"):
        with pytest.raises(ConfigError, match="solver"):
            make_policy("bfio", predictor=name, solver="highs")
        with pytest.raises(ConfigError, match="new_requests"):
            make_policy("bfio", predictor=name, new_requests="predicted")
        with pytest.raises(ConfigError, match="predictor"):
            make_policy("bfio", predictor=name).capture_instances(lambda inst: None)
    with pytest.raises(ConfigError, match="predictor"):
        make_predictor("kaplan-meier")


@pytest.mark.parametrize("d", [0.0, 0.25, 0.5, 1.0])
def test_noise_levels_zero_to_one(d):
    o = np.arange(1, 3001)
    est = make_predictor("noisy", d, d, seed=1).decode_estimate(o)
    assert np.all(est >= 1)
    assert np.all(est >= np.floor(o * (1 - d)) - 1) and np.all(est <= np.ceil(o * (1 + d)) + 1)
    if d == 0:
        assert np.array_equal(est, o)
    make_policy("bfio", predictor="noisy", noise_low=d, noise_high=d)


# -- BF-IO runs ------------------------------------------------------------------------
def small_workload(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return Workload(prefill=rng.integers(50, 5000, n), decode=rng.geometric(0.08, n))


@pytest.mark.parametrize("predictor", ["empirical", "geometric"])
@pytest.mark.parametrize("H", [0, 6])
def test_bfio_with_oracle_free_predictor_is_deterministic_and_routes_all(predictor, H):
    w = small_workload()
    opts = {"horizon": H, "predictor": predictor}
    a = simulate(w, 4, 6, "bfio", seed=7, policy_options=opts)
    b = simulate(w, 4, 6, "bfio", seed=7, policy_options=opts)
    assert a.metrics["avg_imbalance"] == b.metrics["avg_imbalance"]
    assert a.metrics["throughput"] == b.metrics["throughput"]
    assert a.requests["worker"].equals(b.requests["worker"])
    assert (a.requests["worker"] >= 0).all() and len(a.requests) == len(w.prefill)
    assert a.metrics["predictor_completions_seen"] > 0


def test_oracle_free_predictors_differ_from_none_with_lookahead():
    """With H > 0 the learnt completions must change some routing decision
    relative to ``none`` (else the predictor is not wired in)."""
    w = small_workload(600, seed=4)
    none = simulate(w, 4, 6, "bfio", policy_options={"horizon": 8, "predictor": "none"})
    for name in ("empirical", "geometric"):
        r = simulate(w, 4, 6, "bfio", policy_options={"horizon": 8, "predictor": name})
        assert not r.requests["worker"].equals(none.requests["worker"])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 12), st.integers(0, 15), st.floats(0.05, 1.0))
def test_expected_loads_table_with_geometric_tail(seed, T, H, rho):
    """A generic survival table ``surv[0..T]`` (``surv[T] > 0``) continued by ``rho**u``."""
    rng = np.random.default_rng(seed)
    surv = np.concatenate([[1.0], np.sort(rng.uniform(0.05, 1.0, T))[::-1]])
    slot, prefill, generated = random_slots(rng, max_tau=T + 5)

    def S(t):
        return surv[t] if t <= T else surv[T] * rho ** (t - T)

    got = expected_loads(slot, prefill, generated, surv, rho, H)
    want = np.zeros_like(got)
    for g in range(slot.shape[0]):
        for i in slot[g][slot[g] >= 0]:
            tau = generated[i]
            want[g] += [(prefill[i] + tau + h) * S(tau + h) / S(tau) for h in range(H + 1)]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-9)
