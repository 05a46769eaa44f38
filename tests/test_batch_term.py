"""The calibrated step's per-request term of BF-IO's ``J`` (issue 44,
``bfio.solvers.terms.batch``): with the calibrated step a decoding request weighs
``(a_n + beta) / a_kv`` KV tokens per step, so BF-IO balances request counts as
well as tokens; with the paper's step (or ``step_terms: off``) nothing changes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import DispatchState, make_policy
from bfio.simulator import simulate
from bfio.solvers.dispatch import bind
from bfio.solvers.objective import ObjectiveTerms, imbalance_objective
from bfio.solvers.terms import CallWindow, batch, call_terms
from bfio.step_model import StepCoefficients
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

#: a step like the A100 Llama-2-7B fit: a request weighs (a_n + beta) / a_kv = 180 KV tokens
COEF = StepCoefficients(alpha=7e-3, a_kv=3e-7, a_n=2e-7, a_p=6e-5, a_p2=0.0, beta=5.38e-5, comm=4e-5)
W = (COEF.a_n + COEF.beta) / COEF.a_kv


def test_the_term_is_the_count_imbalance_in_kv_tokens_and_sends_a_request_to_the_emptier_rank():
    """Two ranks with equal KV loads over the window, four requests on rank 0 and one
    on rank 1: the imbalance term cannot tell them apart (the tie goes to rank 0),
    the batch term's candidate cost is ``w`` times the change of the count imbalance
    and sends the request to rank 1; its value is ``w`` times the imbalance formula."""
    terms = ObjectiveTerms.build(5, 0.6)
    W1 = terms.window + 1
    loads = np.full((2, W1), 500.0)
    counts = np.array([[4.0] * W1, [1.0] * W1])
    lifetimes = np.array([W1])
    state = SimpleNamespace(step_costs=COEF)
    term = batch.for_call(state, np.array([0]), CallWindow(terms.weights, COEF, counts, lifetimes))
    assert term is not None and term.per_request == pytest.approx(W)
    entry = np.zeros(2, dtype=np.int64)
    add = np.tile(100.0 + np.arange(W1), (2, 1))
    cost = term.candidate_costs(0, loads, add, entry)
    before = imbalance_objective(counts, terms.weights)
    on0 = imbalance_objective(counts + np.array([[1.0], [0.0]]), terms.weights)
    on1 = imbalance_objective(counts + np.array([[0.0], [1.0]]), terms.weights)
    assert cost == pytest.approx([W * (on0 - before), W * (on1 - before)])
    assert cost[1] < cost[0]
    plain = bind(loads.copy(), [[0], [0]], np.array([0]), np.array([100]), lifetimes, terms)
    assert plain.tolist() == [0]  # KV tokens alone: a tie, the first rank
    fresh = batch.for_call(state, np.array([0]), CallWindow(terms.weights, COEF, counts, lifetimes))
    to = bind(loads.copy(), [[0], [0]], np.array([0]), np.array([100]), lifetimes, terms.with_terms(fresh))
    assert to.tolist() == [1]
    assert fresh.value(loads, to) == pytest.approx(W * on1)


def test_no_term_without_the_calibrated_step_or_the_window():
    weights = np.ones(3)
    counts = np.zeros((2, 3))
    assert batch.for_call(SimpleNamespace(step_costs=None), np.array([0]), CallWindow(weights, None, counts)) is None
    assert batch.for_call(SimpleNamespace(step_costs=COEF), np.array([0]), None) is None
    paper = SimpleNamespace(step_costs=None, prefill=None)
    assert call_terms(paper, np.array([0]), CallWindow(weights, None, counts)) == ()


def _dispatch_state(step_costs):
    """Rank 0 runs four requests of 75 tokens (300), rank 1 one of 400: rank 0 holds
    fewer KV tokens over the window (300 + 4h < 400 + h for h < 33), rank 1 fewer
    requests (a request weighs ~180 tokens with the calibrated step)."""
    w = Workload(np.array([75, 75, 75, 75, 400, 100]), np.array([500, 500, 500, 500, 500, 50]))
    sr = np.array([[0, 1, 2, 3], [4, -1, -1, -1]])
    return DispatchState(step=1, clock=0.0, workers=2, slots=4, waiting=np.zeros(2, dtype=np.int64),
                         waiting_tokens=np.zeros(2, dtype=np.int64), running=np.array([4, 1]),
                         loads=np.array([300, 400]), free=np.array([0, 3]), workload=w, slot_request=sr,
                         generated=np.zeros(6, dtype=np.int64), queue_head=np.full(2, -1),
                         queue_next=np.full(6, -1), step_costs=step_costs)


@pytest.mark.parametrize("predictor", ["oracle", "prompt_survival"])
def test_instant_bfio_weighs_requests_only_with_the_calibrated_step(predictor):
    """The same cluster, the same arrival: KV tokens alone (the paper's step, or
    ``step_terms: off``) send it to rank 0; the calibrated step's term to rank 1."""
    new = np.array([5])
    assert make_policy("bfio", predictor=predictor).dispatch(_dispatch_state(None), new).tolist() == [0]
    off = make_policy("bfio", predictor=predictor, step_terms="off")
    assert off.dispatch(_dispatch_state(COEF), new).tolist() == [0]
    assert make_policy("bfio", predictor=predictor).dispatch(_dispatch_state(COEF), new).tolist() == [1]


def test_step_terms_is_an_option_outside_the_default_identity():
    assert "step_terms" not in make_policy("bfio").describe()
    assert make_policy("bfio", step_terms="off").describe()["step_terms"] == "off"
    with pytest.raises(ConfigError, match="step_terms"):
        make_policy("bfio", step_terms="on")


def _arrivals(n=80, rate=40.0, seed=3):
    rng = np.random.default_rng(seed)
    return with_arrivals(Workload(rng.integers(20, 2000, n), rng.integers(1, 120, n)),
                         poisson_arrivals(n, rate, seed))


@pytest.mark.parametrize("dispatch", ["instant", "central"])
def test_paper_runs_do_not_see_the_option(dispatch):
    w = _arrivals()
    kw = dict(entry="arrivals", dispatch=dispatch, show_progress=False)
    a = simulate(w, 3, 8, "bfio", policy_options={"horizon": 6}, **kw)
    b = simulate(w, 3, 8, "bfio", policy_options={"horizon": 6, "step_terms": "off"}, **kw)
    assert a.requests.equals(b.requests) and a.series.equals(b.series)


@pytest.mark.parametrize("dispatch", ["instant", "central"])
def test_calibrated_runs_route_by_the_term(data_dir, monkeypatch, dispatch):
    """With the calibrated step the term changes where requests go (both dispatch
    forms; central: BF-IO places its admissions by the candidate costs), and
    ``step_terms: off`` is KV-token balancing."""
    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    w = _arrivals(n=150, rate=80.0)
    kw = dict(entry="arrivals", dispatch=dispatch, show_progress=False, step_model="calibrated")
    on = simulate(w, 4, 8, "bfio", policy_options={"horizon": 6}, **kw)
    off = simulate(w, 4, 8, "bfio", policy_options={"horizon": 6, "step_terms": "off"}, **kw)
    worker = "queue_worker" if dispatch == "instant" else "worker"
    assert not on.requests[worker].equals(off.requests[worker])


def test_an_exact_backend_refuses_the_term_by_name(data_dir, monkeypatch):
    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    w = _arrivals(n=30)
    kw = dict(entry="arrivals", show_progress=False, step_model="calibrated")
    with pytest.raises(ConfigError, match="objective term 'batch' cannot be expressed by solver 'highs'"):
        simulate(w, 2, 4, "bfio", policy_options={"horizon": 4, "solver": "highs"}, **kw)
    simulate(w, 2, 4, "bfio", policy_options={"horizon": 4, "solver": "highs", "step_terms": "off"}, **kw)
