"""Load reports that lag (issue 18): the ``report_interval`` option of every
instant-dispatch policy (:class:`bfio.policies.base.InstantPolicy`).

``report_interval=0`` must route exactly as before the option existed: the
fingerprints below were computed with the code before it (commit 69f85bc)."""

import hashlib

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import DispatchState, make_policy, supporting
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

#: sha256 (16 hex digits) of (worker, queue_worker, start_step, finish_step) and the
#: step times of the two runs of :func:`runs`, before the option existed.
BEFORE = {
    "jsq_requests": ("b225f2e562ac3e0b", "ec63dbc5b59d6f07"),
    "vllm_dp": ("7e704c7aa8124958", "ec63dbc5b59d6f07"),
    "least_tokens": ("9964356f30538947", "2b46bd427d0d2f5e"),
    "round_robin": ("fc0a17ce435026b2", "9b6284d9f7807840"),
    "power_of_two": ("3234c2581a55b7c6", "9d5d30a6982bbd0a"),
    "random": ("0d58e889e1babb49", "a14df01d4ca4d457"),
}


def fingerprint(r) -> str:
    cols = r.requests[["worker", "queue_worker", "start_step", "finish_step"]].to_numpy(dtype=np.int64)
    dt = np.asarray(r.series["dt"].to_numpy(), dtype=np.float64)
    return hashlib.sha256(cols.tobytes() + dt.tobytes()).hexdigest()[:16]


def workload() -> Workload:
    # overloaded (about 3x the cluster's rate): queues form, so the rules matter
    rng = np.random.default_rng(18)
    n = 600
    return Workload(rng.integers(1, 3000, n), rng.integers(1, 80, n), arrival_s=np.cumsum(rng.exponential(0.0015, n)))


def runs(policy, **options):
    """Two runs (arrivals, backlog); a policy that requires prompt blocks or the
    prefill model (``Policy.requires``) gets both (one fresh block per 512 tokens)."""
    from bfio.policies import policy_class
    from bfio.engine.prefill import PrefillModel
    from bfio.engine.prefix import PrefixBlocks, blocks_needed

    w = workload()
    extra, blocks = {}, None
    if policy_class(policy).requires:
        counts = blocks_needed(w.prefill, 512)
        blocks = PrefixBlocks(np.concatenate([[0], np.cumsum(counts)]), np.arange(counts.sum()), 512)
        w = Workload(w.prefill, w.decode, w.arrival_s, blocks=blocks)
        extra = {"prefill": PrefillModel(cache_blocks=1000)}
    a = simulate(w, 6, 8, policy, seed=3, entry="arrivals", dispatch="instant", policy_options=options, **extra)
    b = simulate(Workload(w.prefill, w.decode, blocks=blocks), 6, 8, policy, seed=3, dispatch="instant",
                 policy_options=options, **extra)
    return a, b


@pytest.mark.parametrize("policy", sorted(BEFORE))
@pytest.mark.parametrize("options", [{}, {"report_interval": 0}])
def test_report_interval_zero_is_bit_identical_to_before(policy, options):
    assert tuple(fingerprint(r) for r in runs(policy, **options)) == BEFORE[policy]


@pytest.mark.parametrize("policy", ["vllm_dp", "vllm_token_lb", "sglang_total_tokens", "least_tokens",
                                    "power_of_two"])
def test_lagging_reports_change_the_routing_of_load_reading_rules(policy):
    exact, stale = runs(policy)[0], runs(policy, report_interval=50)[0]
    assert not exact.requests.queue_worker.equals(stale.requests.queue_worker)


@pytest.mark.parametrize("policy", ["round_robin", "random"])
def test_rules_that_read_no_load_ignore_the_reports(policy):
    assert [fingerprint(r) for r in runs(policy, report_interval=50)] == list(BEFORE[policy])


def _reporting_policies() -> list[str]:
    """The instant policies that route on load reports (BF-IO reads the exact state)."""
    from bfio.policies import policy_class

    return [p for p in supporting("instant") if "report_interval" in {o.name for o in policy_class(p).options}]


@pytest.mark.parametrize("policy", _reporting_policies())
def test_every_instant_policy_takes_the_option_and_is_deterministic(policy):
    a = runs(policy, report_interval=7)
    b = runs(policy, report_interval=7)
    for x, y in zip(a, b):
        assert x.requests.equals(y.requests) and x.series.equals(y.series)
    assert make_policy(policy, report_interval=7).describe()["report_interval"] == 7
    assert "report_interval" not in make_policy(policy).describe()


def test_a_policy_object_starts_each_simulation_from_a_fresh_report():
    p = make_policy("vllm_dp", report_interval=20)
    w = workload()
    a = simulate(w, 6, 8, p, entry="arrivals", dispatch="instant")
    b = simulate(w, 6, 8, p, entry="arrivals", dispatch="instant")
    assert a.requests.equals(b.requests)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10", None])
def test_invalid_intervals_are_refused_by_name(bad):
    with pytest.raises(ConfigError, match="report_interval: expected an integer >= 0"):
        make_policy("vllm_dp", report_interval=bad)


def test_central_only_policies_have_no_such_option():
    with pytest.raises(ConfigError, match="report_interval: not an option of policy 'fcfs'"):
        make_policy("fcfs", report_interval=10)


# -- the router's view, on hand-made states -------------------------------------------------


def state(step, waiting, running, waiting_tokens=None, loads=None, prefill=(5,)):
    G = len(waiting)
    a = lambda x: np.asarray(x if x is not None else [0] * G, dtype=np.int64)  # noqa: E731
    s = np.asarray(prefill, dtype=np.int64)
    return DispatchState(step=step, clock=0.01 * step, workers=G, slots=8, waiting=a(waiting),
                         waiting_tokens=a(waiting_tokens), running=a(running), loads=a(loads),
                         free=8 - a(running), workload=Workload(s, np.ones_like(s))), np.arange(len(s))


def test_the_router_sees_the_last_report_plus_its_own_dispatches():
    p = make_policy("vllm_dp", report_interval=10)
    # step 3: first call of window 0 -> report of this state; scores 2, 0
    st_, reqs = state(3, waiting=[0, 0], running=[2, 0], prefill=[5, 9])
    assert p.dispatch(st_, reqs).tolist() == [1, 0]  # 2,0 -> w1 (2,4) -> w0
    # step 7: the ranks changed (w0 idle, w1 busy), but no report since step 3
    st_, reqs = state(7, waiting=[0, 0], running=[0, 9], prefill=[4])
    view = p.router_view(st_)
    assert view.waiting.tolist() == [1, 1] and view.waiting_tokens.tolist() == [9, 5]
    assert view.running.tolist() == [2, 0] and view.step == 7
    assert p.dispatch(st_, reqs).tolist() == [1]      # stale scores 6, 4
    assert make_policy("vllm_dp").dispatch(st_, reqs).tolist() == [0]  # exact scores 0, 9
    # step 10: a new window, a new report: the exact state again
    st_, reqs = state(10, waiting=[0, 0], running=[0, 9], prefill=[4])
    assert p.router_view(st_).waiting.tolist() == [0, 0]
    assert p.dispatch(st_, reqs).tolist() == [0]


def test_token_rules_add_the_prompt_of_their_own_dispatches():
    p = make_policy("sglang_total_tokens", report_interval=5)
    st_, reqs = state(0, waiting=[0, 0], running=[1, 1], loads=[100, 130], prefill=[50])
    assert p.dispatch(st_, reqs).tolist() == [0]  # 100 < 130; w0 now 150 in the router's copy
    # one step later w0's request finished (the ranks' truth: 0 tokens), unreported
    st_, reqs = state(1, waiting=[0, 0], running=[0, 1], loads=[0, 131], prefill=[10])
    assert p.dispatch(st_, reqs).tolist() == [1]  # router: 150 vs 130
    assert make_policy("sglang_total_tokens").dispatch(st_, reqs).tolist() == [0]


def test_an_invalid_answer_is_left_for_the_simulator():
    # the report bookkeeping must not raise before the simulator names the fault
    from bfio.ground.errors import PolicyError
    from bfio.policies.base import InstantPolicy

    class Bad(InstantPolicy):
        name = "bad_instant"

        def route(self, state):  # pragma: no cover - instant only here
            raise AssertionError

        def select(self, state, requests):
            return np.full(requests.shape[0], 7)

    with pytest.raises(PolicyError, match="outside 0..1"):
        simulate(Workload(np.array([5, 5]), np.array([2, 2])), 2, 1, Bad(report_interval=3), dispatch="instant")


# -- configuration and CLI -------------------------------------------------------------------


def test_config_rows_with_report_intervals_are_checked_by_key(tmp_path):
    from copy import deepcopy
    from pathlib import Path

    import yaml

    from bfio.pipeline.config import validate_config

    repo = Path(__file__).resolve().parents[1]
    schema = repo / "workflow" / "schemas" / "config.schema.yaml"
    base = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    validate_config(deepcopy(base), schema)
    bad = deepcopy(base)
    bad["online"]["variants"]["vllm_dp_r10"]["report_interval"] = -3
    with pytest.raises(ConfigError, match=r"online.variants.vllm_dp_r10.report_interval"):
        validate_config(bad, schema)
    bad = deepcopy(base)
    bad["online"]["variants"]["x"] = {"policy": "fcfs", "report_interval": 10}
    with pytest.raises(ConfigError, match=r"online.variants.x.*not an option of policy 'fcfs'"):
        validate_config(bad, schema)
    bad = deepcopy(base)
    bad["online"]["reference"] = "vllm_dp"
    with pytest.raises(ConfigError, match=r"online.reference.*not a central row"):
        validate_config(bad, schema)
    bad = deepcopy(base)
    bad["online"]["figure_rows"] = ["fcfs", "vllm_dp_r99"]
    with pytest.raises(ConfigError, match=r"online.figure_rows.1.*'vllm_dp_r99' is not a row of the online study"):
        validate_config(bad, schema)
    bad["online"]["figure_rows"] = [f"r{i}" for i in range(8)]  # 7 named + the band: at most 8 series
    with pytest.raises(ConfigError, match=r"online.figure_rows"):
        validate_config(bad, schema)


def test_cli_report_interval(tmp_path, capsys):
    import json

    from bfio.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("input_length,output_length\n" + "".join(f"{10 + 37 * i % 500},{1 + i % 9}\n" for i in range(60)))
    base = ["simulate", "--trace", str(trace), "--requests", "200", "--workers", "3", "--slots", "2"]
    out = tmp_path / "r.json"
    assert main(base + ["--policy", "vllm_token_lb", "--dispatch", "instant", "--report-interval", "10",
                        "--json", str(out)]) == 0
    assert json.loads(out.read_text())["policy_options"] == {"name": "vllm_token_lb", "report_interval": 10}
    capsys.readouterr()
    assert main(base + ["--policy", "vllm_dp", "--dispatch", "central", "--report-interval", "10"]) != 0
    assert "--report-interval: only valid with --dispatch instant" in capsys.readouterr().err
    # an engine's router runs bound at arrival unless told otherwise (issue 42)
    assert main(base + ["--policy", "vllm_dp", "--report-interval", "10", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["dispatch"] == "instant"
    capsys.readouterr()
    assert main(base + ["--policy", "fcfs", "--dispatch", "instant", "--report-interval", "10"]) != 0
    assert "--report-interval: only valid with --policy jsq_requests | " in capsys.readouterr().err
