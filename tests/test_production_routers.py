"""The production data-parallel routers of issue 18 (``docs/online.md``) on
hand-made states: the documented score picks the documented rank, ties go
where the source sends them, and the central modes equal their twins."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bfio.ground.errors import ConfigError
from bfio.policies import DispatchState, make_policy, policy_label
from bfio.simulator import simulate
from bfio.workloads.workload import Workload


def dstate(waiting=None, running=None, loads=None, waiting_tokens=None, prefill=(1,), slots=8, step=0):
    G = len(next(x for x in (waiting, running, loads, waiting_tokens) if x is not None))
    z = lambda x: np.asarray(x if x is not None else [0] * G, dtype=np.int64)  # noqa: E731
    s = np.asarray(prefill, dtype=np.int64)
    return DispatchState(step=step, clock=0.0, workers=G, slots=slots, waiting=z(waiting),
                         waiting_tokens=z(waiting_tokens), running=z(running), loads=z(loads),
                         free=slots - z(running), workload=Workload(s, np.ones_like(s))), np.arange(len(s))


def pick(name, st_, reqs, **options):
    return make_policy(name, **options).dispatch(st_, reqs).tolist()


# -- vLLM token-level DP load balancing (pull request #40795) ---------------------------


def test_vllm_token_lb_on_the_pull_requests_own_example():
    # rank 0: one queued request of 10,000 prompt tokens; rank 1: two of 1,000 each.
    # Request-level LB (vllm_dp) scores 4 < 8 and sends the next request to rank 0;
    # token-level LB scores 40,000 > 8,000 and sends it to rank 1.
    st_, reqs = dstate(waiting=[1, 2], waiting_tokens=[10_000, 2_000], prefill=[500])
    assert pick("vllm_dp", st_, reqs) == [0]
    assert pick("vllm_token_lb", st_, reqs) == [1]


def test_vllm_token_lb_scores_four_waiting_tokens_plus_running_tokens():
    # running_tokens = tokens still to compute = 1 per running (decoding) request
    st_, reqs = dstate(waiting_tokens=[0, 2, 0], running=[9, 0, 5], loads=[10, 10**9, 10], prefill=[3, 1, 1])
    # scores 9, 8, 5 -> w2 (+4*3 = 17); 9, 8, 17 -> w1 (+4 = 12); 9, 12, 17 -> w0
    assert pick("vllm_token_lb", st_, reqs) == [2, 1, 0]
    # the resident KV reading counts L_g instead of |A_g|: 10, 8 + 1e9, 10 -> w0 (tie with w2: lowest index)
    assert pick("vllm_token_lb", st_, reqs, running_tokens="resident")[0] == 0


def test_vllm_token_lb_ties_go_to_the_lowest_rank():
    st_, reqs = dstate(waiting_tokens=[4, 4, 4], running=[1, 1, 1], prefill=[1, 1, 1])
    # 17, 17, 17 -> w0 (+4); 21, 17, 17 -> w1; 21, 21, 17 -> w2
    assert pick("vllm_token_lb", st_, reqs) == [0, 1, 2]


def test_vllm_token_lb_refuses_an_unknown_running_tokens_reading():
    with pytest.raises(ConfigError, match="running_tokens: expected uncomputed | resident"):
        make_policy("vllm_token_lb", running_tokens="kv")
    assert make_policy("vllm_token_lb").describe() == {"name": "vllm_token_lb"}
    assert make_policy("vllm_token_lb", running_tokens="resident").describe()["running_tokens"] == "resident"


# -- SGLang DP controller: total_requests and total_tokens --------------------------------


def test_sglang_total_requests_is_fewest_running_plus_waiting_lowest_rank_on_ties():
    st_, reqs = dstate(waiting=[5, 0, 3], running=[0, 2, 0], loads=[0, 10**9, 0], prefill=[7, 7, 7])
    # SGLang: total_requests.index(min(total_requests)), then += 1
    # 5, 2, 3 -> w1 (3); 5, 3, 3 -> w1 (tie: first index); 5, 4, 3 -> w2
    assert pick("sglang_total_requests", st_, reqs) == [1, 1, 2]


def test_sglang_total_tokens_breaks_token_ties_by_requests_then_lowest_rank():
    # SGLang's own unit tests (test_dispatch_total_tokens_*): min tokens wins ...
    st_, reqs = dstate(loads=[500, 200, 800], running=[1, 1, 1])
    assert pick("sglang_total_tokens", st_, reqs) == [1]
    # ... and equal tokens fall back to fewer running + waiting requests
    st_, reqs = dstate(loads=[100, 100, 100], running=[5, 1, 3])
    assert pick("sglang_total_tokens", st_, reqs) == [1]
    # where least_tokens (lowest index on ties) and SGLang differ
    st_, reqs = dstate(loads=[60, 40, 100], waiting_tokens=[0, 20, 0], running=[3, 1, 0], waiting=[0, 1, 0])
    assert pick("least_tokens", st_, reqs) == [0]
    assert pick("sglang_total_tokens", st_, reqs) == [1]  # (60, 3) vs (60, 2)
    # a full tie goes to the lowest rank; each binding adds s_i tokens and one request
    st_, reqs = dstate(loads=[10, 10], running=[1, 1], prefill=[5, 5, 5])
    # (10,1),(10,1) -> w0 (15,2); -> w1 (15,2); tie -> w0
    assert pick("sglang_total_tokens", st_, reqs) == [0, 1, 0]


def test_sglang_total_tokens_counts_resident_kv_plus_queued_prompts():
    # num_total_tokens = KV tokens in use (L_g) + seqlen of the waiting requests (their s_i)
    st_, reqs = dstate(loads=[100, 50], waiting_tokens=[0, 60], waiting=[0, 1], running=[3, 3], prefill=[30])
    assert pick("sglang_total_tokens", st_, reqs) == [0]  # 100 < 110


def test_round_robin_is_sglangs_counter():
    p = make_policy("round_robin")
    p.reset(3, 8)
    st_, _ = dstate(running=[0, 8, 0])
    assert [p.dispatch(st_, np.arange(1)).tolist()[0] for _ in range(5)] == [0, 1, 2, 0, 1]


def test_labels_name_the_engines():
    assert policy_label("vllm_token_lb").startswith("vLLM ")
    assert policy_label("sglang_total_tokens").startswith("SGLang ")
    assert policy_label("atom_least_requests").startswith("ATOM ")


def test_tables_and_figures_name_every_router_alike():
    """One name per router (bfio.policies.names): a table's label is the figure's
    legend, and neither is a raw key."""
    from bfio.figures.series import SERIES
    from bfio.policies import registered

    for name in registered():
        assert policy_label(name) == SERIES["router"][name].label, name
        assert "_" not in policy_label(name) and "#" not in policy_label(name), name


# -- central modes and twins ----------------------------------------------------------------


@st.composite
def workloads(draw, arrivals=False):
    n = draw(st.integers(1, 50))
    s = draw(st.lists(st.integers(1, 400), min_size=n, max_size=n))
    o = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    arr = np.cumsum(draw(st.lists(st.sampled_from([0.0, 0.002, 0.03]), min_size=n, max_size=n))) if arrivals else None
    return Workload(np.array(s), np.array(o), arrival_s=arr)


@given(w=workloads(), workers=st.integers(1, 4), slots=st.integers(1, 4))
@settings(max_examples=15, deadline=None)
def test_central_modes_equal_their_twins(w, workers, slots):
    # one shared pool: nothing is queued per worker, so waiting_tokens = 0
    for name, options, twin in (("vllm_token_lb", {}, "jsq_requests"),
                                ("vllm_token_lb", {"running_tokens": "resident"}, "jsq_tokens"),
                                ("sglang_total_requests", {}, "jsq_requests")):
        a = simulate(w, workers, slots, name, policy_options=options).requests
        assert a.equals(simulate(w, workers, slots, twin).requests), (name, options)


@given(w=workloads(arrivals=True), workers=st.integers(1, 4), slots=st.integers(1, 4),
       k=st.sampled_from([0, 1, 3, 10]))
@settings(max_examples=15, deadline=None)
def test_sglang_total_requests_is_jsq_requests_also_on_stale_reports(w, workers, slots, k):
    kw = dict(entry="arrivals", dispatch="instant", policy_options={"report_interval": k})
    a = simulate(w, workers, slots, "sglang_total_requests", **kw).requests
    assert a.equals(simulate(w, workers, slots, "jsq_requests", **kw).requests)


def test_sglang_total_tokens_central_is_jsq_tokens_up_to_ties():
    # distinct prompt lengths: the only ties are between empty workers (equal loads and
    # equal request counts), which both rules give to the lowest index
    w = Workload(np.array([101, 233, 377, 509, 641, 787, 911, 1049]), np.array([3, 5, 7, 11, 13, 17, 19, 23]))
    a = simulate(w, 3, 2, "sglang_total_tokens").requests
    b = simulate(w, 3, 2, "jsq_tokens").requests
    assert a.equals(b)


# -- the study's routers table and figure (results/tables/online_routers.*) ---------------


def router_runs(rng):
    import pandas as pd

    from bfio.studies.online_summary import ONLINE_METRICS

    rows = []
    spec = [("fcfs", "central", "fcfs", 0), ("bfio_h40", "central", "bfio", 0),
            ("vllm_dp", "instant", "vllm_dp", 0), ("vllm_dp_r10", "instant", "vllm_dp", 10),
            ("sglang_total_tokens", "instant", "sglang_total_tokens", 0),
            ("sglang_total_tokens_r10", "instant", "sglang_total_tokens", 10), ("round_robin", "instant", "round_robin", 0)]
    for setting, mode, loads in (("p", "poisson", (0.5, 0.95)), ("r", "trace", (0.03, 0.85))):
        for load in loads:
            for seed in range(4):
                ref = float(rng.uniform(5, 6))
                for row, dispatch, policy, k in spec:
                    rec = {"setting": setting, "trace": "burstgpt", "requests": 100, "workers": 4, "slots": 8,
                           "arrival_mode": mode, "load": load, "time_scale": 0.1 if mode == "trace" else 1.0,
                           "dispatch": dispatch, "row": row, "policy": policy, "report_interval": k, "seed": seed}
                    rec.update({m: float(rng.uniform(1, 2)) for m in ONLINE_METRICS})
                    # every router is exactly (2 + k/10) x the reference's p99, seed by seed
                    rec["e2e_s_p99"] = ref if row == "bfio_h40" else ref * (2 + k / 10)
                    rows.append(rec)
    return pd.DataFrame(rows)


def test_routers_table_pairs_every_instant_row_with_the_reference():
    from bfio.studies.routers_summary import routers_markdown, summarize_routers

    s = summarize_routers(router_runs(np.random.default_rng(3)), "bfio_h40")
    inst = s[s["role"] == "instant"]
    assert set(inst["row"]) == {"vllm_dp", "vllm_dp_r10", "sglang_total_tokens", "sglang_total_tokens_r10",
                                "round_robin"}
    assert set(s.loc[s["role"] == "reference", "row"]) == {"bfio_h40"}  # fcfs is not a router row
    expect = 2 + inst["report_interval"] / 10
    assert np.allclose(inst["vs_reference_mean"], expect)
    assert np.allclose(inst["vs_reference_ci_lo"], expect) and np.allclose(inst["vs_reference_ci_hi"], expect)
    assert (s["n_seeds"] == 4).all()
    assert "SGLang total tokens, reports every 10 steps (instant)" in set(s["label"])
    md = routers_markdown(s, {"p": {"trace": "burstgpt", "requests": 100, "workers": 4}})
    assert "| k=0 " in md and "| k=10 " in md and "BF-IO (H=40) (central)" in md
    assert "(3 [3, 3])" in md  # the paired ratio of a k = 10 row
    # a router with one interval only has an empty cell for the others
    assert "Round robin (instant)" in md
    with pytest.raises(ConfigError, match="online.reference: row 'bfio_h0'"):
        summarize_routers(router_runs(np.random.default_rng(3)), "bfio_h0")


def test_routers_figure_renders_colour_blind_safe(tmp_path):
    """Issue 31: one colour of the colour-blind palette and one marker per router."""
    from bfio.figures import save
    from bfio.figures.online_routers import figure_loads, plot_online_routers
    from bfio.figures.style import text_overlaps
    from bfio.studies.routers_summary import summarize_routers

    s = summarize_routers(router_runs(np.random.default_rng(4)), "bfio_h40")
    assert figure_loads(s, 0.95) == {"p": 0.95, "r": 0.85}
    fig = plot_online_routers(s, load=0.95)
    styles = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            line = handle.lines[0] if hasattr(handle, "lines") else handle  # errorbar container: its data line
            if line.get_marker() not in (None, "None", ""):
                styles.setdefault(label, (str(line.get_color()), line.get_marker()))
    assert len(styles) >= 2
    assert len({c for c, _ in styles.values()}) == len(styles) and len({m for _, m in styles.values()}) == len(styles)
    assert text_overlaps(fig) == []
    save(fig, tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0


def test_online_runs_record_the_report_interval():
    from bfio.studies.online import online_runs

    study = {"loads": [0.5], "central": ["fcfs"], "instant": ["vllm_dp", "vllm_dp_r10"], "load_basis": "saturation",
             "variants": {"vllm_dp_r10": {"policy": "vllm_dp", "report_interval": 10}}}
    runs, extra = online_runs({"trace": "burstgpt", "requests": 100, "workers": 4}, "poisson", 200.0, study, [1], 72)
    assert [(r.row, e["report_interval"]) for r, e in zip(runs, extra)] == [("fcfs", 0), ("vllm_dp", 0),
                                                                          ("vllm_dp_r10", 10)]


# -- ROCm ATOM least_requests (issue 30): the rule of its own tests ------------------------------
def _atom_state(reqs, tokens, running_tokens=None):
    from bfio.policies.base import DispatchState

    G = len(reqs)
    w = Workload(np.full(10, 100), np.full(10, 5))
    return DispatchState(step=0, clock=0.0, workers=G, slots=8, waiting=np.array(reqs),
                         waiting_tokens=np.array(tokens), running=np.zeros(G, dtype=np.int64), loads=np.zeros(G),
                         free=np.full(G, 8), workload=w,
                         running_prompt_tokens=np.zeros(G, dtype=np.int64) if running_tokens is None
                         else np.array(running_tokens))


@pytest.mark.parametrize("reqs, tokens, arrivals, expect", [
    ([0, 0, 0, 0], [0, 0, 0, 0], 8, [0, 1, 2, 3, 0, 1, 2, 3]),  # test_least_requests_spreads_uniformly
    ([1, 1], [500, 100], 1, [1]),                               # ..._tiebreak_prefers_fewer_prompt_tokens
    ([1, 3], [10_000, 100], 1, [0]),                            # ..._count_dominates_token_tiebreak
    ([1, 1], [1000, 100], 2, [1, 0]),                           # ..._tiebreak_then_count_primacy_over_route
])
def test_atom_least_requests_matches_atoms_own_tests(reqs, tokens, arrivals, expect):
    p = make_policy("atom_least_requests")
    p.reset(len(reqs), 8)
    assert p.dispatch(_atom_state(reqs, tokens), np.arange(arrivals)).tolist() == expect


def test_atom_counts_running_prompt_tokens_and_is_instant_only():
    p = make_policy("atom_least_requests")
    p.reset(2, 8)
    # equal in-flight counts (waiting 0, running 0 in the state): the running prompts decide
    assert p.dispatch(_atom_state([0, 0], [0, 0], running_tokens=[900, 100]), np.arange(1)).tolist() == [1]
    with pytest.raises(ConfigError, match="does not support dispatch='central'"):
        simulate(Workload(np.array([5, 5]), np.array([2, 2])), 2, 2, "atom_least_requests")


def test_vllm_rotating_tie_break_takes_turns_across_calls():
    """vLLM after PR #47420: fully tied engines are scanned from a start index that
    advances after every selection; the older rule (vllm_dp) gives every tie to rank 0."""
    state = _atom_state([0, 0, 0, 0], [0, 0, 0, 0])
    old, new = make_policy("vllm_dp"), make_policy("vllm_dp_rotating")
    old.reset(4, 8)
    new.reset(4, 8)
    assert [old.dispatch(state, np.arange(1)).tolist() for _ in range(3)] == [[0], [0], [0]]
    assert [new.dispatch(state, np.arange(1)).tolist() for _ in range(3)] == [[0], [1], [2]]
    busy = _atom_state([1, 0, 0, 0], [0, 0, 0, 0])  # the score still decides first
    assert new.dispatch(busy, np.arange(1)).tolist() == [3]


# -- vLLM after pull request #49204: in-flight floor, KV-pressure penalty ---------------


def _vllm_49204_reference(start, waiting, running, usage, inflight, arrivals):
    """vLLM's ``get_core_engine_for_request`` loop as written in its source
    (commit 00080ee), one client: lists, a strict ``<``, the start rotated."""
    waiting, inflight, out = list(waiting), list(inflight), []
    n = len(waiting)
    for _ in range(arrivals):
        min_score, eng = float("inf"), 0
        for i in range(n):
            idx = (start + i) % n
            score = max(1 * inflight[idx], waiting[idx] + running[idx])
            if waiting[idx]:
                score += waiting[idx] * 6.0 * max(0.0, usage[idx] - 0.5)
            if score < min_score:
                min_score, eng = score, idx
        waiting[eng] += 1
        start = (start + 1) % n
        inflight[eng] += 1
        out.append(eng)
    return out


def test_vllm_dp_kv_a_kv_bound_queue_repels_new_requests():
    cap = 1000
    # w0: 2 waiting + 1 running at 100% KV: 3 + 2 * 6 * 0.5 = 9; w1: 5 running, no queue: 5
    st_, reqs = dstate(waiting=[2, 0], running=[1, 5], loads=[cap, 10], prefill=[1])
    assert pick("vllm_dp_kv", st_, reqs, kv_tokens_per_rank=cap) == [1]
    # the same queue at 50% usage costs nothing: 3 < 5
    st_, reqs = dstate(waiting=[2, 0], running=[1, 5], loads=[cap // 2, 10], prefill=[1])
    assert pick("vllm_dp_kv", st_, reqs, kv_tokens_per_rank=cap) == [0]
    # without KV pressure it counts in-flight requests (no 4 x waiting): vllm_dp would pick w1 (4*2+1 = 9 > 5)
    assert pick("vllm_dp", st_, reqs) == [1]


def test_vllm_dp_kv_usage_is_capped_at_one_as_vllms():
    """Issue 44: two queues at 2x and 10x the KV budget both read as full (vLLM's
    usage is 1 - free / total blocks), so equal counts tie and the rotation's start
    wins; uncapped, the 10x rank would repel the request (3 + 2*6*9.5 > 3 + 2*6*1.5)."""
    cap = 1000
    st_, reqs = dstate(waiting=[2, 2], running=[1, 1], loads=[10 * cap, 2 * cap], prefill=[1])
    assert pick("vllm_dp_kv", st_, reqs, kv_tokens_per_rank=cap) == [0]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(lambda G: st.tuples(
    st.lists(st.integers(0, 5), min_size=G, max_size=G), st.lists(st.integers(0, 8), min_size=G, max_size=G),
    st.lists(st.integers(0, 2000), min_size=G, max_size=G), st.integers(1, 12), st.integers(0, 3))))
def test_vllm_dp_kv_follows_the_source_loop(case):
    waiting, running, loads, arrivals, calls = case
    cap = 1000
    p = make_policy("vllm_dp_kv", kv_tokens_per_rank=cap)
    G = len(waiting)
    p.reset(G, 8)
    start = 0
    for _ in range(calls):  # the start index carries over between calls
        st_, _ = dstate(waiting=waiting, running=running, loads=loads, prefill=[1])
        got = p.dispatch(st_, np.arange(arrivals)).tolist()
        usage = [min(1.0, x / cap) for x in loads]  # vLLM's BlockPool.get_usage is at most 1
        inflight = [w + r for w, r in zip(waiting, running)]
        assert got == _vllm_49204_reference(start, waiting, running, usage, inflight, arrivals)
        start = (start + arrivals) % G


def test_vllm_dp_kv_inflight_floor_is_exact_on_stale_reports():
    """With load reports every K steps the coordinator's counts lag, but the front
    end's own in-flight count is exact: a rank that the stale report shows empty
    is not chosen when the requests bound to it since are still in flight."""
    p = make_policy("vllm_dp_kv", report_interval=10)
    p.reset(2, 8)
    first, _ = dstate(waiting=[0, 0], running=[0, 0], step=0)
    assert p.dispatch(first, np.arange(1)).tolist() == [0]
    # step 1, same report window: the router's view is the report plus its dispatch (w0: 1 waiting);
    # the exact state has 3 running on w1 that the report does not show -> the floor sends to w0
    later, _ = dstate(waiting=[1, 0], running=[0, 3], step=1)
    assert p.dispatch(later, np.arange(1)).tolist() == [0]
    assert make_policy("vllm_dp_kv").describe() == {"name": "vllm_dp_kv"}
    assert make_policy("vllm_dp_kv", kv_tokens_per_rank=5).describe()["kv_tokens_per_rank"] == 5
    with pytest.raises(ConfigError, match="kv_tokens_per_rank"):
        make_policy("vllm_dp_kv", kv_tokens_per_rank=0)


def test_streamed_rows_are_their_own_line_labelled_and_recorded():
    """Issue 44: a lagged row with ``completions: streamed`` is recorded as such by
    the online study, labelled so in the tables, and kept off the reported row's line."""
    import pandas as pd

    from bfio.studies.online import online_runs
    from bfio.studies.routers_summary import routers_markdown, summarize_routers

    study = {"loads": [0.5], "central": ["fcfs"], "instant": ["vllm_dp_r10", "vllm_dp_r10_streamed"],
             "load_basis": "saturation",
             "variants": {"vllm_dp_r10": {"policy": "vllm_dp", "report_interval": 10},
                          "vllm_dp_r10_streamed": {"policy": "vllm_dp", "report_interval": 10,
                                                   "completions": "streamed"}}}
    runs, extra = online_runs({"trace": "burstgpt", "requests": 100, "workers": 4}, "poisson", 200.0, study, [1], 72)
    assert [(r.row, e["completions"]) for r, e in zip(runs, extra)] == [
        ("fcfs", "reported"), ("vllm_dp_r10", "reported"), ("vllm_dp_r10_streamed", "streamed")]

    frame = router_runs(np.random.default_rng(5))
    frame["completions"] = "reported"
    stream = frame[frame["row"] == "sglang_total_tokens_r10"].assign(row="sglang_total_tokens_r10_streamed",
                                                                      completions="streamed")
    s = summarize_routers(pd.concat([frame, stream], ignore_index=True), "bfio_h40")
    labels = set(s["label"])
    assert "SGLang total tokens, reports every 10 steps, completions streamed (instant)" in labels
    assert "SGLang total tokens, reports every 10 steps (instant)" in labels
    md = routers_markdown(s, {"p": {"trace": "burstgpt", "requests": 100, "workers": 4}})
    lines = [ln for ln in md.splitlines()
             if ln.strip("| ").startswith("0.95 ") and "SGLang total tokens" in ln][:2]  # setting p's
    assert len(lines) == 2, lines
    streamed_line = next(ln for ln in lines if "completions streamed" in ln)
    cells = [c.strip() for c in streamed_line.strip("|").split("|")]
    assert "[" not in cells[1]  # its own line by the option, not by row names
    assert cells[2] == "-"  # no exact-state cell: k = 0 belongs to the reported line
