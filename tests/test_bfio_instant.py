"""BF-IO with instant dispatch (issue 30, bfio.solvers.dispatch): queues
admitted FIFO into freed slots, each arrival bound where the discounted
predicted imbalance J over the window is smallest."""

from __future__ import annotations

import numpy as np
import pytest

from bfio.predictors import ERROR_MODELS, PREDICTORS, REMAINING
from bfio.lookahead.profiles import predicted_loads
from bfio.simulator import simulate
from bfio.solvers.dispatch import bind, queue_profiles
from bfio.solvers.objective import ObjectiveTerms, imbalance_objective
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals


def test_a_queued_request_enters_the_slot_freed_first():
    # worker 0: one slot, its running request ends at offset 2; queued request 5 (s = 10, lifetime 3)
    sizes = np.zeros(10, dtype=np.int64)
    sizes[5] = 10
    life = np.full(10, 3)
    loads, release = queue_profiles(np.zeros((1, 6)), [[2]], [[5]], sizes, life)
    assert loads[0].tolist() == [0, 0, 10, 11, 12, 0]
    assert release == [[5]]


def test_an_arrival_goes_where_it_raises_J_least_and_updates_the_state():
    base = np.array([[100.0, 100.0, 100.0], [10.0, 10.0, 10.0], [50.0, 50.0, 50.0]])
    sizes, life, w = np.array([20, 20]), np.array([3, 3]), np.ones(3)
    terms = ObjectiveTerms.build(2)  # delta = 1 over offsets 0..2: the weights w
    release = [[0], [0], [0]]
    J_before = {g: None for g in range(3)}
    for g in range(3):  # J of each choice, by the objective's own formula
        L = base.copy()
        L[g] += 20 + np.arange(3)
        J_before[g] = float(imbalance_objective(L, w))
    to = bind(base.copy(), [list(r) for r in release], np.array([0]), sizes, life, terms)
    assert J_before[int(to[0])] == min(J_before.values())
    assert to[0] == 1  # the least loaded: J ties between workers 1 and 2 are broken by load
    loads = base.copy()
    both = bind(loads, [[0], [0], [0]], np.array([0, 1]), sizes, life, terms)
    assert both.tolist() == [1, 1] or both.tolist() == [1, 2]
    assert loads.sum() == pytest.approx(base.sum() + 2 * (60 + 3))  # each binding added its profile


def _workload(n=1500, rate=400.0, seed=3):
    rng = np.random.default_rng(seed)
    work = Workload(rng.integers(20, 800, n), rng.integers(1, 300, n))
    return with_arrivals(work, poisson_arrivals(n, rate, seed))


def test_bfio_runs_with_instant_dispatch_deterministically():
    work = _workload()
    a = simulate(work, 4, 8, "bfio", dispatch="instant", entry="arrivals", policy_options={"horizon": 10})
    b = simulate(work, 4, 8, "bfio", dispatch="instant", entry="arrivals", policy_options={"horizon": 10})
    assert a.metrics["avg_imbalance"] == b.metrics["avg_imbalance"] and a.steps == b.steps
    assert len(a.requests) == 1500 and np.isfinite(a.requests.filter(like="finish").to_numpy(dtype=float)).all()


def test_instant_bfio_balances_better_than_least_tokens_under_load():
    """A loaded cluster (arrivals near capacity): the lookahead's binding leaves a
    smaller imbalance than binding to the least resident tokens."""
    work = _workload(n=3000, rate=2500.0)
    bf = simulate(work, 8, 16, "bfio", dispatch="instant", entry="arrivals", policy_options={"horizon": 20})
    lt = simulate(work, 8, 16, "least_tokens", dispatch="instant", entry="arrivals")
    assert bf.metrics["avg_imbalance"] < lt.metrics["avg_imbalance"]


PREDICTOR_RUNS = [{"predictor": p} for p in PREDICTORS] + [{"predictor": p, "remaining": r}
                                                             for p in ERROR_MODELS for r in REMAINING]


@pytest.mark.parametrize("options", PREDICTOR_RUNS, ids=lambda o: "-".join(o.values()))
def test_instant_bfio_accepts_every_predictor(options):
    """Issue 44 (equal information): instant BF-IO runs with every predictor,
    the oracle-free and posterior ones with their expected loads; every request
    is bound and finishes."""
    res = simulate(_workload(n=600, rate=300.0), 3, 6, "bfio", dispatch="instant", entry="arrivals",
                   policy_options={"horizon": 10, **options})
    assert len(res.requests) == 600 and np.isfinite(res.requests.filter(like="finish").to_numpy(dtype=float)).all()
    assert res.requests["queue_worker"].nunique() == 3


def test_instant_bfio_reads_the_expected_loads_of_a_probabilistic_predictor(monkeypatch):
    """The expected release of a slot is the expected remaining steps within the
    window, read off the predictor's own expected loads: with a predictor whose
    survival is a step at the true length it is the oracle's ``r_i`` (capped at
    the window), and the run binds every arrival where the oracle does."""
    from bfio.policies import make_policy
    from bfio.predictors import OraclePredictor

    work, oracle = _oracle_bindings()
    policy = make_policy("bfio", horizon=400, objective="paper-literal")  # the window holds every r_i
    policy.predictor = _step_survival(OraclePredictor)()
    stepped = simulate(work, 4, 8, policy, dispatch="instant", entry="arrivals")
    assert stepped.requests["queue_worker"].equals(oracle)


def _step_survival(base):
    """``base`` (a predictor class) giving the oracle's knowledge as expected loads
    (``q_i(h) in {0, 1}``: a step at the true length), probabilistic."""

    class StepSurvival(base):
        probabilistic = True

        def expected_loads(self, state, horizon):
            return predicted_loads(state.slot_request, state.workload.prefill, state.generated,
                                   state.workload.decode, horizon)

    return StepSurvival


def _oracle_bindings():
    """A workload and the queue each request is bound to by instant BF-IO with the
    oracle, its window holding every remaining length (``H = 400``)."""
    work = _workload(n=800, rate=500.0)
    oracle = simulate(work, 4, 8, "bfio", dispatch="instant", entry="arrivals",
                      policy_options={"horizon": 400, "objective": "paper-literal"})
    return work, oracle.requests["queue_worker"]




def _dispatch_state(step, slot_request, generated, head, nxt, workload):
    from bfio.policies.base import DispatchState

    G, B = slot_request.shape
    running = (slot_request >= 0).sum(axis=1)
    loads = np.array([sum(workload.prefill[i] + generated[i] for i in row if i >= 0) for row in slot_request])
    zeros = np.zeros(G, dtype=np.int64)
    return DispatchState(step=step, clock=0.0, workers=G, slots=B, waiting=zeros, waiting_tokens=zeros,
                         running=running, loads=loads, free=B - running, workload=workload,
                         slot_request=slot_request, generated=generated, queue_head=head, queue_next=nxt)


def test_lagged_bfio_reads_the_last_report_plus_its_own_bindings():
    """With report_interval k, instant BF-IO sees the running requests and queues of
    the window's first call, plus what it bound since; a new window reads the
    state afresh (issue 44, equal information)."""
    from bfio.policies import make_policy

    w = Workload(np.array([5000, 10, 10, 10, 10]), np.array([100, 100, 100, 100, 100]))
    policy = make_policy("bfio", horizon=10, report_interval=5)
    policy.reset(2, 2)
    no_queue = np.full(2, -1, dtype=np.int64), np.full(5, -1, dtype=np.int64)
    # step 0: request 0 (long prompt) runs on worker 0; request 1 arrives
    sr = np.array([[0, -1], [-1, -1]])
    gen = np.zeros(5, dtype=np.int64)
    assert policy.dispatch(_dispatch_state(0, sr, gen, *no_queue, w), np.array([1])).tolist() == [1]
    # step 3, same window: the cluster is empty now, but the report still shows the
    # 5,000-token request on worker 0 and its own binding of request 1 to worker 1
    empty = np.full((2, 2), -1)
    lagged = policy.dispatch(_dispatch_state(3, empty, gen, *no_queue, w), np.array([2]))
    exact = make_policy("bfio", horizon=10)
    exact.reset(2, 2)
    fresh = exact.dispatch(_dispatch_state(3, empty, gen, *no_queue, w), np.array([2]))
    assert lagged.tolist() == [1] and fresh.tolist() == [0]
    # step 5, a new window: the empty cluster is read, as the exact router reads it
    assert policy.dispatch(_dispatch_state(5, empty, gen, *no_queue, w), np.array([3])).tolist() == fresh.tolist()


def test_lagged_bfio_runs_and_refuses_the_central_pool():
    from bfio.ground.errors import ConfigError

    w = _workload(600, 300.0)
    exact = simulate(w, 4, 8, "bfio", entry="arrivals", dispatch="instant", policy_options={"horizon": 10})
    lagged = simulate(w, 4, 8, "bfio", entry="arrivals", dispatch="instant",
                      policy_options={"horizon": 10, "report_interval": 50})
    assert "report_interval" not in exact.config["policy_options"]
    assert lagged.config["policy_options"]["report_interval"] == 50
    assert not exact.requests["queue_worker"].equals(lagged.requests["queue_worker"])
    with pytest.raises(ConfigError, match="report_interval"):
        simulate(w, 4, 8, "bfio", entry="arrivals", policy_options={"report_interval": 10})


def test_order_release_of_indicator_survivals_is_the_sorted_remaining_steps():
    """``release: order`` (issue 44): with a point predictor's survivals ``P(r_i > h) =
    [h < r_i]`` a worker's k-th slot frees at the k-th smallest ``r_i``, capped at
    ``W + 1``; free slots stay 0."""
    from bfio.policies.bfio_instant import order_release

    rng = np.random.default_rng(7)
    for _ in range(50):
        G, B, W = 3, 6, int(rng.integers(1, 12))
        busy = rng.random((G, B)) < 0.7
        r = np.where(busy, rng.integers(1, 20, size=(G, B)), 0)
        h = np.arange(W + 1)
        survival = (r[busy][:, None] > h[None, :]).astype(float)
        expected = np.zeros((G, B), dtype=np.int64)
        expected[busy] = np.maximum(1, survival.sum(axis=1))
        out = order_release(expected, busy, survival, W)
        for g in range(G):
            assert sorted(out[g, busy[g]].tolist()) == sorted(np.minimum(r[g, busy[g]], W + 1).tolist())
            assert (out[g, ~busy[g]] == 0).all()


def test_order_release_frees_a_full_worker_before_its_expected_slots_do():
    """Four running requests that each stay a step with probability 0.8: each one's
    expected remaining steps within a window of 10 is ``sum_h 0.8^h`` (4.6), but the
    first of the four is expected gone after one step (``4 x 0.2 >= 1/2``): ``order``
    frees the worker's first slot at 1, ``expected`` at 5."""
    from bfio.policies.bfio_instant import order_release

    W = 10
    survival = np.tile(0.8 ** np.arange(W + 1), (4, 1))
    busy = np.array([[True] * 4])
    expected = np.full((1, 4), int(np.rint(survival[0].sum())))
    out = order_release(expected, busy, survival, W)
    assert expected.min() == 5 and out.min() == 1
    gone = 4 * (1 - 0.8 ** np.arange(W + 1))
    assert sorted(out[0].tolist()) == [int(np.argmax(gone >= k + 0.5)) for k in range(4)]


def test_release_order_binds_a_step_survival_where_the_oracle_does():
    """A predictor whose survival is a step at the true length, read with ``release:
    order``, binds every arrival where the oracle does (its releases are the
    oracle's, the window holding every ``r_i``); with ``release: expected`` it does
    too (one request a slot: its expected release is its ``r_i``). An unknown
    ``release`` is refused naming the option."""
    from bfio.ground.errors import ConfigError
    from bfio.policies import make_policy
    from bfio.predictors import EmpiricalPredictor

    work, oracle = _oracle_bindings()
    for release in ("order", "expected"):
        policy = make_policy("bfio", horizon=400, objective="paper-literal", predictor="empirical", release=release)
        policy.predictor = _step_survival(EmpiricalPredictor)()
        run = simulate(work, 4, 8, policy, dispatch="instant", entry="arrivals")
        assert run.requests["queue_worker"].equals(oracle), release
    with pytest.raises(ConfigError, match="release"):
        make_policy("bfio", predictor="empirical", release="median")


def test_options_of_instant_dispatch_only_are_refused_with_a_central_pool(capsys):
    """``release`` and ``report_interval`` change only instant dispatch: a central run
    with either set is refused naming it (library and CLI), not run with it ignored."""
    from bfio.cli import main
    from bfio.ground.errors import ConfigError

    w = _workload(n=40, rate=100.0)
    for opts, name in (({"predictor": "empirical", "release": "expected"}, "release"), ({"report_interval": 5},
                                                                                     "report_interval")):
        with pytest.raises(ConfigError, match=f"^{name}: "):
            simulate(w, 2, 4, "bfio", policy_options=opts, show_progress=False)
    assert main(["simulate", "--trace", "burstgpt", "--requests", "40", "--workers", "2", "--policy", "bfio",
                 "--predictor", "empirical", "--release", "expected"]) != 0
    assert "--release: only valid with --dispatch instant" in capsys.readouterr().err



def test_an_advanced_report_predicts_its_running_requests_as_the_exact_state_does(monkeypatch):
    """``report_age: advance`` (issue 44, lagged reports): with the oracle, a report
    ``d`` steps old, its predictions made over ``0..d + H`` and advanced by ``d``
    (:func:`bfio.policies.bfio_instant.advance`), predicts the loads of the requests it
    saw running exactly as the exact state does (those still running now, at their
    tokens now); read as now (``read``) it does not. On a run, ``advance`` routes
    otherwise than ``read`` (the default), deterministically."""
    from dataclasses import replace

    import bfio.policies.bfio_instant as instant
    from bfio.policies import make_policy

    checked = []
    real_view = instant.InstantBinding._view

    def view(self, state):
        lagged, queues, age = real_view(self, state)
        if age > 0:
            W = self._objective.window
            base, release, _ = self._predicted(lagged, W + age)
            advanced, _, _ = instant.advance(base, release, None, age)
            seen = np.isin(state.slot_request, lagged.slot_request[lagged.slot_request >= 0])
            exact, _, _ = self._predicted(replace(state, slot_request=np.where(seen, state.slot_request, -1)))
            stale, _, _ = self._predicted(lagged)
            checked.append((np.array_equal(advanced, exact), np.array_equal(stale, exact)))
        return lagged, queues, age

    monkeypatch.setattr(instant.InstantBinding, "_view", view)
    work = _workload(n=400, rate=60.0)
    options = {"horizon": 10, "report_interval": 8, "report_age": "advance"}
    run = simulate(work, 4, 8, make_policy("bfio", **options), dispatch="instant", entry="arrivals",
                   show_progress=False)
    assert len(checked) >= 50 and all(ok for ok, _ in checked)
    assert not all(stale for _, stale in checked)
    monkeypatch.undo()
    again = simulate(work, 4, 8, "bfio", dispatch="instant", entry="arrivals", show_progress=False,
                     policy_options=options)
    read = simulate(work, 4, 8, "bfio", dispatch="instant", entry="arrivals", show_progress=False,
                    policy_options={**options, "report_age": "read"})
    assert again.requests["queue_worker"].equals(run.requests["queue_worker"])
    assert not read.requests["queue_worker"].equals(run.requests["queue_worker"])
