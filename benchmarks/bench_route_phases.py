"""Where a BF-IO routing call's time goes, phase by phase, as the cluster grows (issue 40).

BurstGPT as ``bench_scaling.py`` draws it (``N = 1,500 G`` requests, ``200 G`` at
``G >= 4096``, ``B = 72``, seed 42, oracle predictor), BF-IO with the library
defaults (``placement: auto``, ``admission: drain:100``, ``H = 20``). Every
routing call is timed with ``time.perf_counter`` wrappers set on the policy's
helpers from here (monkeypatching; the library is not changed), split into:

- **rebuild**: what a call recomputes from scratch over all ``G`` workers or
  all waiting requests, the state issue 40 asks to keep across calls: the
  tracked loads' window read and its ``O(G)`` check (``TrackedLoads._read`` and
  the rest of ``loads`` but the events), ``drain``'s copy of the loads and its
  envelope, and the placement's set-up (``solver_loads``, ``touched_workers``:
  touched loads and envelope; ``waiting_order``: candidate order; the initial
  keys and heapify; ``_waiting_tree`` of the exchanges). The placement's and
  ``drain``'s set-ups run inside numba kernels, so they are *replayed* on the
  same inputs right after the call (timed apart, not counted in the call) and
  subtracted from the kernel's time: replayed on warm caches, they are if
  anything underestimated;
- **placement**: the placement kernel (``place_terms``) less its set-up;
- **drain**: ``plan_drain`` less its set-up;
- **loads events**: the tracker's completions and calendar moves (``complete``, ``advance``);
- **predictor**: ``_decode_estimate`` and the waiting requests' lifetimes (``ObjectiveTerms.for_call``);
- **bookkeeping**: the tracker's admissions, the sequential pass's check for
  extra terms, and the NumPy glue of ``route`` (the call less every phase above).

Per ``G``: the mean call, each phase's share of it, ``U`` (placements per call,
drain's and the placement's), ns per placement, the modelled decode step (mean
``dt`` of the run), the call as % of the step, and the *free-rebuild bound*: the
call less its rebuild phases, as % of the step: what the call would cost if
every rebuilt piece were kept across calls for free.

With ``--greedy-replay K`` (default 8) it also replays ``K`` placement calls of
each run, evenly spaced, with the greedy (``solve_sharded_terms``, as ``auto``
would run it) and reports its seconds per unit of modelled work ``U n_T``
(:data:`bfio.solvers.placement.GREEDY_S_PER_UNIT`'s unit) and what ``auto`` would
choose on those calls with the measured constant in place of the library's.

With ``--paired R`` it instead times the heap's exchange pass with its skip pointer
against the pass without it (``tests/heap_upsize_reference.py``: the library's
``_solve_heap`` with the old pass rebound): ``R`` rounds per ``G``, each running the
same simulation once with each kernel (which first alternates); the placements are
the same, so call ``i`` of one run is call ``i`` of the other and the calls are
compared pair by pair: the ratio of mean calls per round and the median of the
per-call ratios, for the whole call and for the placement phase.

    python benchmarks/bench_route_phases.py [--workers 256,1024,4096] [--per-worker 1500]
                                            [--per-worker-large 200] [--greedy-replay 8] [--paired R]
"""

from __future__ import annotations

import argparse
import io
import time
from collections import defaultdict

import numpy as np
from numba import njit

import bfio.lookahead.tracked_loads as tl
import bfio.policies.bfio as bfio_policy
import bfio.solvers.call_view as call_view
import bfio.solvers.central as central
from bfio.pipeline.kernels_warmup import DEFAULT_SCENARIOS, warm as warm_kernels
from bfio.policies.bfio_options import LOCAL_SEARCH_ROUNDS
from bfio.simulator import simulate
from bfio.solvers import placement as placement_mod
from bfio.solvers.terms.kernel import cumulative_weights
from bfio.solvers.heap import _heapify, _key, _waiting_tree, heavy_light
from bfio.solvers.shards import DEFAULT_SHARD_WORKERS, solve_sharded_terms
from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.touched import solver_loads, touched_workers, waiting_order
from bfio.traces import load_trace
from bfio.workloads.workload import Workload, draw_workload
# the run bench_scaling.py times (sizes, seed) and its CPU record; run as a script, benchmarks/ is on sys.path
from bench_scaling import PER_WORKER, PER_WORKER_LARGE, SEED, SLOTS, cpu_model

HORIZON = 20
PHASES = ("rebuild", "placement", "drain", "loads events", "predictor", "bookkeeping")
clock = time.perf_counter


@njit(cache=False)
def _initial_keys(P, E, G, w):
    """The heap's initial keys of every touched worker and its heapify (``_solve_heap``'s set-up)."""
    H1 = w.shape[0]
    W = cumulative_weights(w)[0][H1]
    heavy, light = heavy_light(w, G, W)
    cbuf = np.empty(H1, dtype=np.float64)
    ibuf = np.empty(H1, dtype=np.int64)
    nT = P.shape[0]
    hk = np.empty(nT, dtype=np.float64)
    hi = np.arange(nT)
    for t in range(nT):
        hk[t] = _key(P, E, t, G, w, W, heavy, light, cbuf, ibuf)
    _heapify(hk, hi, nT)
    return hk[0] if nT else 0.0


@njit(cache=False)
def _envelope(base):
    """``drain``'s envelope over every worker (``_drain_core``'s first loop)."""
    G, H1 = base.shape
    E = np.zeros(H1)
    for g in range(G):
        for h in range(H1):
            if base[g, h] > E[h]:
                E[h] = base[g, h]
    return E


class Recorder:
    """Per-call phase times (seconds); ``cur`` is the call in progress."""

    def __init__(self):
        self.calls: list[dict] = []
        self.cur: dict | None = None
        self.captured: list[tuple] = []  # placement calls kept for the greedy replay
        self.stride = 1  # capture every stride-th call
        self.constants = (2e-8,)  # greedy seconds per unit at which auto's choice is reported (--constants)
        self.estimates = 0  # calls of the predictor's decode_estimate (a copy each for the oracle)

    def add(self, phase: str, dt: float) -> None:
        if self.cur is not None:
            self.cur[phase] += dt


REC = Recorder()


def _timed(phase, fn):
    def wrapper(*a, **k):
        t0 = clock()
        out = fn(*a, **k)
        REC.add(phase, clock() - t0)
        return out
    return wrapper


def install():
    """Wrap the policy's helpers (once per process)."""
    route0 = bfio_policy.BFIO.route

    def route(self, state):
        REC.cur = defaultdict(float)
        t0 = clock()
        out = route0(self, state)
        total = clock() - t0
        c = REC.cur
        REC.cur = None
        if state.admissible:
            c["total"] = total - c.pop("replay", 0.0)
            c["U"] = int(state.admissible)
            REC.calls.append(dict(c))
        return out

    bfio_policy.BFIO.route = route

    est0 = call_view.CallView.decode_estimate

    def decode_estimate(self, workload):
        t0 = clock()
        if self._estimate_key != (id(workload), len(workload)):
            REC.estimates += 1
        out = est0(self, workload)
        REC.add("predictor", clock() - t0)
        return out

    call_view.CallView.decode_estimate = decode_estimate
    ObjectiveTerms.for_call = _timed("predictor", ObjectiveTerms.for_call)
    # the tracker: events (completions, calendar) vs the window's read; loads() less both is its check
    tl.complete = _timed("loads events", tl.complete)
    tl.advance = _timed("loads events", tl.advance)
    tl.read = _timed("tracker read", tl.read)
    loads0 = tl.TrackedLoads.loads

    def loads(self, state, estimate):
        before = {k: REC.cur[k] for k in ("loads events", "tracker read")} if REC.cur is not None else None
        t0 = clock()
        out = loads0(self, state, estimate)
        dt = clock() - t0
        if before is not None:
            inner = sum(REC.cur[k] - before[k] for k in before)
            REC.add("tracker check", dt - inner)
        return out

    tl.TrackedLoads.loads = loads
    tl.TrackedLoads.admitted = _timed("bookkeeping", tl.TrackedLoads.admitted)
    central.CentralCall.place_sequential = _timed("bookkeeping", central.CentralCall.place_sequential)

    drain0 = central.plan_drain

    def plan_drain(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all):
        t0 = clock()
        out = drain0(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all)
        dt = clock() - t0
        REC.add("drain", dt)
        if (ages >= due_steps).any():  # its set-up: the loads' float copy and the envelope
            r0 = clock()
            t1 = clock()
            b = base.astype(np.float64)
            _envelope(b)
            setup = clock() - t1
            REC.add("drain setup", setup)
            REC.add("replay", clock() - r0)
        return out

    central.plan_drain = plan_drain

    place0 = central.place_terms

    def place_terms(base, free, sizes, forced, U, terms, placement, max_rounds, shard_workers, step_s):
        t0 = clock()
        out = place0(base, free, sizes, forced, U, terms, placement, max_rounds, shard_workers, step_s)
        dt = clock() - t0
        REC.add("placement", dt)
        r0 = clock()
        chosen = placement_mod.resolve_placement(placement, free, U, step_s)
        REC.add(f"chose {chosen}", 1.0)
        REC.add(f"time {chosen}", dt)  # the in-run seconds per unit of U n_T (cold caches, as auto meets them)
        REC.add(f"work {chosen}", float(U) * float(np.count_nonzero(free)))
        REC.add("auto work", float(U) * float(np.count_nonzero(free)))  # auto's inputs: its choice at any constant
        REC.add("auto step", float(step_s))
        w = terms.kernel_terms(base, sizes.shape[0]).w
        t1 = clock()  # the set-up, replayed on the same inputs
        b = solver_loads(base)
        tw, P, capl, _, E = touched_workers(b, free)
        order = waiting_order(sizes)
        if chosen == "heap":
            _initial_keys(P, E, b.shape[0], np.ascontiguousarray(w, dtype=np.float64))
            if U < sizes.shape[0]:
                _waiting_tree(np.where(out[0] >= 0, 0, -1).astype(np.int64), order)
        REC.add("placement setup", clock() - t1)
        if REC.cur is not None and len(REC.calls) % REC.stride == 1 % REC.stride:  # not the run's first call
            REC.captured.append((base.copy(), np.array(free), sizes.copy(), forced.copy(), int(U), terms,
                                 float(step_s)))
        REC.add("replay", clock() - r0)
        return out

    central.place_terms = place_terms


def summarize(calls: list[dict]) -> dict:
    tot = np.array([c["total"] for c in calls])
    U = np.array([c["U"] for c in calls], dtype=float)
    get = lambda k: np.array([c.get(k, 0.0) for c in calls])  # noqa: E731
    rebuild = get("tracker read") + get("tracker check") + get("drain setup") + get("placement setup")
    ph = {
        "rebuild": rebuild,
        "placement": get("placement") - get("placement setup"),
        "drain": get("drain") - get("drain setup"),
        "loads events": get("loads events"),
        "predictor": get("predictor"),
    }
    ph["bookkeeping"] = tot - sum(ph.values())
    parts = {"tracker read": get("tracker read").mean(), "tracker check": get("tracker check").mean(),
             "drain setup": get("drain setup").mean(), "placement setup": get("placement setup").mean()}
    chose = {k[6:]: int(get(k).sum()) for k in {k for c in calls for k in c if k.startswith("chose ")}}
    greedy_work = get("work greedy").sum()
    in_run = get("time greedy").sum() / greedy_work if greedy_work else float("nan")
    work, step_s = get("auto work"), get("auto step")
    placed = work > 0
    would = {c: float(np.mean(c * work[placed] <= placement_mod.AUTO_STEP_SHARE * step_s[placed]))
             for c in REC.constants}
    return {"calls": len(calls), "mean": tot.mean(), "greedy_s_per_unit": in_run, "would": would,
            "p99": np.percentile(tot, 99), "U": U.mean(),
            "ns_per_U": 1e9 * tot.sum() / U.sum(), "phases": {k: v.mean() for k, v in ph.items()},
            "rebuild_parts": parts, "chose": chose}


def greedy_replay(captured: list[tuple], k: int) -> list[dict]:
    """``k`` evenly spaced captured placement calls, each run with the greedy and the heap
    (interleaved, best of 3): seconds, ``U n_T``, and the call's modelled step."""
    if not captured or k <= 0:
        return []
    idx = np.unique(np.linspace(0, len(captured) - 1, min(k, len(captured))).round().astype(int))
    out = []
    for i in idx:
        base, free, sizes, forced, U, terms, step_s = captured[i]
        g_t, h_t = [], []
        for _ in range(3):
            t0 = clock()
            solve_sharded_terms(base, free, sizes, forced, U, terms, LOCAL_SEARCH_ROUNDS, DEFAULT_SHARD_WORKERS)
            g_t.append(clock() - t0)
            t0 = clock()
            placement_mod.solve_heap_terms(base, free, sizes, forced, U, terms)
            h_t.append(clock() - t0)
        out.append({"greedy_s": min(g_t), "heap_s": min(h_t), "work": float(U) * float(np.count_nonzero(free)),
                    "step_s": step_s})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="256,1024,4096")
    ap.add_argument("--per-worker", type=int, default=PER_WORKER)
    ap.add_argument("--per-worker-large", type=int, default=PER_WORKER_LARGE)
    ap.add_argument("--greedy-replay", type=int, default=8)
    ap.add_argument("--constants", default="2e-8,8e-8,2e-7",
                    help="greedy seconds per unit at which auto's choice over the run's calls is reported")
    ap.add_argument("--paired", type=int, default=0, help="rounds of the skip pointer's paired timing (0: none)")
    ap.add_argument("--clock", choices=("perf", "process"), default="perf",
                    help="perf: time.perf_counter (wall); process: time.process_time (CPU, less sensitive to a "
                         "loaded machine)")
    args = ap.parse_args()
    global clock
    REC.constants = tuple(float(c) for c in args.constants.split(","))
    clock = time.perf_counter if args.clock == "perf" else time.process_time
    t = load_trace("burstgpt")
    warm_kernels(DEFAULT_SCENARIOS, stream=io.StringIO())
    install()
    _initial_keys(np.zeros((2, 3)), np.zeros(3), 2, np.ones(3))  # compile the replays' kernels
    _envelope(np.zeros((2, 3)))
    _waiting_tree(np.array([0, -1], dtype=np.int64), np.array([1, 0], dtype=np.int64))
    warm = Workload(t.prefill[:4000], t.decode[:4000])
    simulate(warm, 16, SLOTS, "bfio", policy_options={"horizon": HORIZON}, show_progress=False)
    greedy_replay(REC.captured[:2], 2)  # compile the greedy's kernels out of the timings
    if args.paired:
        return paired(t, args)
    print(f"BurstGPT, N = {args.per_worker:,} G ({args.per_worker_large:,} G at G >= 4096), B = {SLOTS}, "
          f"seed {SEED}, BF-IO library defaults (placement auto, admission drain:100, H = {HORIZON}); "
          f"time.{clock.__name__} per phase")
    print("| G | calls | U / call | mean call | ns / placement | step | call / step | "
          + " | ".join(PHASES) + " | free-rebuild bound | auto chose |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(PHASES) + "---|---|")
    replays = {}
    details = {}
    for G in (int(g) for g in args.workers.split(",")):
        per = args.per_worker if G < 4096 else args.per_worker_large
        w = draw_workload(t.prefill, t.decode, per * G, SEED)
        REC.calls, REC.captured, REC.estimates = [], [], 0
        REC.stride = 5 if G >= 4096 else 25
        r = simulate(w, G, SLOTS, "bfio", seed=SEED, policy_options={"horizon": HORIZON}, show_progress=False)
        calls = REC.calls[1:]  # the first call pays the tracker's fill and page faults (reported apart)
        first = REC.calls[0]["total"]
        s = summarize(calls)
        step = float(r.series["dt"].mean())
        shares = " | ".join(f"{s['phases'][p] / s['mean']:.0%}" for p in PHASES)
        bound = (s["mean"] - s["phases"]["rebuild"]) / step
        print(f"| {G} | {s['calls']} | {s['U']:,.0f} | {s['mean'] * 1e3:.3f} ms | {s['ns_per_U']:.0f} | "
              f"{step * 1e3:.2f} ms | {s['mean'] / step:.1%} | {shares} | {bound:.1%} | "
              f"{', '.join(f'{k} {v}' for k, v in sorted(s['chose'].items()))} |", flush=True)
        details[G] = (s, first, REC.estimates, r.metrics["solver_s_total"] / r.metrics["solver_calls"])
        replays[G] = greedy_replay(REC.captured, args.greedy_replay)
    print()
    print("Phase means (ms) and the rebuild's parts:")
    for G, (s, first, est, lib) in details.items():
        ph = ", ".join(f"{p} {s['phases'][p] * 1e3:.3f}" for p in PHASES)
        rp = ", ".join(f"{k} {v * 1e3:.3f}" for k, v in s["rebuild_parts"].items())
        print(f"- G = {G}: {ph}; rebuild = {rp}; p99 call {s['p99'] * 1e3:.2f} ms; first call {first * 1e3:.1f} ms "
              f"(left out); library's own mean call {lib * 1e3:.3f} ms (first included); "
              f"predictor decode_estimate computed {est}x in the run"
              + (f"; greedy in the run (its calls, set-up included) {s['greedy_s_per_unit']:.2e} s per unit of U n_T"
                 if np.isfinite(s["greedy_s_per_unit"]) else "")
              + "; auto would run the greedy on " + ", ".join(f"{v:.0%} of the calls at {c:g} s/unit"
                                                            for c, v in s["would"].items()))
    if any(replays.values()):
        print()
        print(f"Greedy replay (best of 3, interleaved with the heap; library GREEDY_S_PER_UNIT = "
              f"{placement_mod.GREEDY_S_PER_UNIT:g}, AUTO_STEP_SHARE = {placement_mod.AUTO_STEP_SHARE:g}):")
        print("| G | calls | U n_T mean | greedy mean | heap mean | greedy s / unit (median) | min | max | "
              "auto with measured: greedy calls | greedy / step (mean) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        allc = []
        for G, rs in replays.items():
            if not rs:
                continue
            per = np.array([x["greedy_s"] / x["work"] for x in rs])
            allc.extend(per.tolist())
            c = float(np.median(per))
            greedy_calls = sum(c * x["work"] <= placement_mod.AUTO_STEP_SHARE * x["step_s"] for x in rs)
            share = np.mean([x["greedy_s"] / x["step_s"] for x in rs])
            print(f"| {G} | {len(rs)} | {np.mean([x['work'] for x in rs]):,.0f} | "
                  f"{np.mean([x['greedy_s'] for x in rs]) * 1e3:.2f} ms | "
                  f"{np.mean([x['heap_s'] for x in rs]) * 1e3:.2f} ms | "
                  f"{c:.2e} | {per.min():.2e} | {per.max():.2e} | {greedy_calls}/{len(rs)} | {share:.1%} |")
    print(f"CPU: {cpu_model()}")


def paired(t, args) -> None:
    """``--paired``: the skip pointer's kernel against the old pass, run for run (module docstring)."""
    import sys
    from pathlib import Path

    from bfio.solvers import heap

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from heap_upsize_reference import reference_solve_heap

    kernels = {"skip": heap._solve_heap, "old": reference_solve_heap}
    print(f"Paired: heap exchange pass with the skip pointer ('skip') against without ('old'), {args.paired} "
          f"rounds per G, BurstGPT N = {args.per_worker:,} G ({args.per_worker_large:,} G at G >= 4096), defaults, "
          f"time.{clock.__name__}")
    print("| G | round | calls | old mean call | skip mean call | skip / old (means) | per-call ratio median | "
          "placement phase skip / old (means) | per-call placement ratio median |")
    print("|---|---|---|---|---|---|---|---|---|")
    replay = {}
    warm = Workload(t.prefill[:4000], t.decode[:4000])
    for kern in kernels.values():  # compiled out of the timings (the reference is compiled in this process)
        heap._solve_heap = kern
        simulate(warm, 16, SLOTS, "bfio", policy_options={"horizon": HORIZON, "placement": "heap"},
                 show_progress=False)
    heap._solve_heap = kernels["skip"]
    for G in (int(g) for g in args.workers.split(",")):
        per = args.per_worker if G < 4096 else args.per_worker_large
        w = draw_workload(t.prefill, t.decode, per * G, SEED)
        for rnd in range(args.paired):
            out = {}
            for name in (("skip", "old") if rnd % 2 == 0 else ("old", "skip")):
                heap._solve_heap = kernels[name]
                if rnd == 0 and name == "skip":  # the heap's inputs of every 4th call, replayed below
                    seen = []

                    def spy(*a, _seen=seen):
                        if len(REC.calls) % 4 == 0:
                            _seen.append(tuple(np.copy(x) if isinstance(x, np.ndarray) else x for x in a))
                        return kernels["skip"](*a)

                    heap._solve_heap = spy
                    replay[G] = seen
                REC.calls, REC.captured, REC.estimates, REC.stride = [], [], 0, 10 ** 9
                r = simulate(w, G, SLOTS, "bfio", seed=SEED, policy_options={"horizon": HORIZON},
                             show_progress=False)
                out[name] = (REC.calls[1:], r.metrics["throughput"], r.metrics["avg_imbalance"])
            heap._solve_heap = kernels["skip"]
            (cs, ts, is_), (co, to, io_) = out["skip"], out["old"]
            assert len(cs) == len(co) and ts == to and is_ == io_, "the two kernels placed differently"
            tot = lambda cc, k: np.array([c.get(k, 0.0) for c in cc])  # noqa: E731
            a, b = tot(cs, "total"), tot(co, "total")
            pa = tot(cs, "placement") - tot(cs, "placement setup")
            pb = tot(co, "placement") - tot(co, "placement setup")
            print(f"| {G} | {rnd + 1} | {len(cs)} | {b.mean() * 1e3:.3f} ms | {a.mean() * 1e3:.3f} ms | "
                  f"{a.mean() / b.mean():.3f} | {np.median(a / b):.3f} | {pa.mean() / pb.mean():.3f} | "
                  f"{np.median(pa / pb):.3f} |", flush=True)
    print()
    print("Kernel replay: every 4th heap call of the first round, each solved by both kernels in turn, "
          "best of 5 per call and kernel:")
    print("| G | calls replayed | old kernel mean | skip kernel mean | skip / old (sums) | per-call ratio median | "
          "p10 | p90 |")
    print("|---|---|---|---|---|---|---|---|")
    for G, seen in replay.items():
        ts = {"skip": [], "old": []}
        for a in seen:
            best = {"skip": np.inf, "old": np.inf}
            for rep in range(5):
                for name in (("skip", "old") if rep % 2 == 0 else ("old", "skip")):
                    c = tuple(np.copy(x) if isinstance(x, np.ndarray) else x for x in a)
                    t0 = clock()
                    kernels[name](*c)
                    best[name] = min(best[name], clock() - t0)
            for k in ts:
                ts[k].append(best[k])
        s_, o_ = np.array(ts["skip"]), np.array(ts["old"])
        q = np.percentile(s_ / o_, [50, 10, 90])
        print(f"| {G} | {len(seen)} | {o_.mean() * 1e3:.3f} ms | {s_.mean() * 1e3:.3f} ms | "
              f"{s_.sum() / o_.sum():.3f} | "
              f"{q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} |", flush=True)
    print(f"CPU: {cpu_model()}")


if __name__ == "__main__":
    main()
