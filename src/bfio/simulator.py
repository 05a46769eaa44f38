"""The step loop of barrier-synchronized data-parallel decode (Sections 3 and 6.2).

``G`` workers with ``B`` slots each; every step all active requests generate one
token, the step lasts ``dt = C + t_l max_g L_g`` (the barrier waits for the most
loaded worker) and requests stay on the worker they were first placed on.
The loop, the backlog pool of ``4 G`` requests and the metric window follow
``../shared/spec/semantics.md`` to the letter (the "paper convention").

Two entry modes (``entry``; "admission" means only BF-IO's rule): ``backlog``
(the paper's: no arrival times, the pool is topped up to ``pool_factor * G`` before every routing call) and ``arrivals``
(online: a request enters the system when the clock passes its arrival time;
when nothing is active or waiting the clock jumps to the next arrival without
counting a step). While nothing waits, the steps up to the next arrival (or all
remaining steps, once every request has entered) need no routing call and run
in one kernel call (:func:`bfio.kernels.run_steps`, ``fast_forward``), with the
same per-step records as one step at a time.

Two dispatch interfaces (``docs/online.md``): ``central`` (the paper's: one
shared pool, the policy's ``route`` picks which waiting requests each worker
admits at every routing call) and ``instant`` (as vLLM / SGLang data-parallel
routers: each request is bound to one worker's FIFO queue by the policy's
``dispatch`` when it enters the system, never moved afterwards, and every worker
admits from the head of its own queue into its free slots).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from bfio.closed_loop import ClosedLoopArrivals
from bfio.constants import PaperConstants
from bfio.errors import ConfigError, PolicyError
from bfio.jit import run_clock
from bfio.limits import MAX_DECODE, MAX_PREFILL, MAX_SLOTS
from bfio.kernels import admit_assigned, admit_queues, enqueue, run_steps
from bfio.prefill import CacheView, Prefill, PrefillModel
from bfio.metrics import latency_stats, run_metrics, run_totals, wait_stats, window_metrics
from bfio.policies import DispatchState, Policy, RoutingState, make_policy
from bfio.policies.base import CENTRAL_ONLY, DISPATCH_MODES, REQUIREMENTS
from bfio.progress import progress
from bfio.routing_checks import check_assignment, check_dispatch
from bfio.simulation_result import (  # noqa: F401  (SERIES_FIELDS, window_warnings re-exported)
    SERIES_FIELDS, SimulationResult, StepSeries, window_warnings)
from bfio.workload import ENTRY_MODES, Workload

ADMISSION_MODES = ENTRY_MODES  # deprecated alias of ENTRY_MODES, removed in the next release


def whole_number(key: str, value) -> int:
    """``value`` as an ``int`` if it is a whole number (``2``, ``np.int64(2)``,
    ``2.0``), else :class:`ConfigError` naming ``key``: ``2.5`` workers is an
    error, never 2 (the same rule as the instance and trace loaders)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or float(value) != int(value):
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    return int(value)


def simulate(workload: Workload, workers: int, slots: int, policy="fcfs", *, seed: int = 0,
             constants: PaperConstants | None = None, entry: str = "backlog",
             record_loads: bool = False, show_progress: bool | None = None,
             policy_options: dict | None = None, dispatch: str = "central",
             fast_forward: bool = True, admission_mode: str | None = None,
             prefill: PrefillModel | None = None) -> SimulationResult:
    """Run ``workload`` on ``workers`` x ``slots`` under ``policy`` (a name or a
    :class:`~bfio.policies.Policy`) and return a :class:`SimulationResult`.

    ``seed`` seeds randomized policies (the workload is drawn separately, see
    :func:`bfio.workload.draw_workload`). ``entry``: ``backlog`` (the
    paper's pool of ``pool_factor * G``) or ``arrivals`` (requests enter at
    ``workload.arrival_s``); ``admission_mode`` is its former name, accepted with
    a ``DeprecationWarning`` for one release. ``dispatch``: ``central`` (the paper's shared pool)
    or ``instant`` (per-worker FIFO queues bound at arrival; the policy must list
    ``"instant"`` in its ``dispatch_modes``). With ``backlog`` and ``instant``,
    topped-up requests are dispatched when they enter the pool.

    ``fast_forward`` (default on) runs the steps between two routing calls that
    can change anything (nothing waits: until the next arrival, or to the end
    once every request has entered) in one kernel call instead of one step at a
    time; the results are identical, bit for bit (``False`` is the plain step
    loop, kept for checking that).

    ``prefill`` (:class:`bfio.prefill.PrefillModel`, issue 32): chunked prefill
    in the step and, with ``cache_blocks`` and a workload with ``blocks``,
    per-rank prefix caches; adds TTFT and cache metrics. ``None`` (the default)
    is the paper's step loop, unchanged.

    A workload with ``follow_ups`` (:mod:`bfio.closed_loop`) and ``entry="arrivals"``
    is a closed loop: a request that follows another arrives ``think_s`` after that
    one completes (the steps then run one at a time while such a release is
    pending). With ``entry="backlog"`` arrival times, and so follow-ups, are not read.
    """
    t_wall = time.perf_counter()
    if not isinstance(workload, Workload):
        raise ConfigError(f"workload: expected a bfio.workload.Workload (bfio.workload.draw_workload builds one), "
                          f"got {type(workload).__name__}")
    if len(workload) == 0:
        raise ConfigError("workload: no requests (an empty workload has no metrics)")
    workers, slots = whole_number("workers", workers), whole_number("slots", slots)
    if workers < 1:
        raise ConfigError(f"workers: must be >= 1, got {workers}")
    if slots < 1:
        raise ConfigError(f"slots: must be >= 1, got {slots}")
    if not isinstance(policy, (str, Policy)):
        raise ConfigError(f"policy: expected a policy name or a bfio.policies.Policy, got {type(policy).__name__}")
    if workers * slots > MAX_SLOTS:
        raise ConfigError(f"workers x slots: G * B = {workers} * {slots} = {workers * slots:,} exceeds the bound "
                          f"of {MAX_SLOTS:,} slots (bfio.limits: keeps loads exact and memory bounded)")
    _check_lengths(workload)
    if admission_mode is not None:
        warnings.warn("simulate(admission_mode=...) is renamed entry=... ('admission' now means only BF-IO's "
                      "rule); admission_mode will be removed in the next release", DeprecationWarning, stacklevel=2)
        entry = admission_mode
    if entry not in ENTRY_MODES:
        raise ConfigError(f"entry: must be {' or '.join(map(repr, ENTRY_MODES))}, got {entry!r}")
    if dispatch not in DISPATCH_MODES:
        raise ConfigError(f"dispatch: must be {' or '.join(map(repr, DISPATCH_MODES))}, got {dispatch!r}")
    if prefill is not None and not isinstance(prefill, PrefillModel):
        raise ConfigError(f"prefill: expected a bfio.prefill.PrefillModel or None, got {type(prefill).__name__}")
    if entry == "arrivals" and workload.arrival_s is None:
        raise ConfigError("entry: 'arrivals' needs a workload with arrival times (arrival column)")
    c = constants or PaperConstants()
    if isinstance(policy, str):
        policy = make_policy(policy, seed=seed, **(policy_options or {}))
    elif policy_options:
        raise ConfigError("policy_options: only valid with a policy name")
    if dispatch not in getattr(policy, "dispatch_modes", CENTRAL_ONLY):
        raise ConfigError(f"dispatch: policy '{policy.name}' does not support dispatch='{dispatch}' "
                          f"(it supports: {', '.join(policy.dispatch_modes)})")
    for need in getattr(policy, "requires", ()):
        if (need == "prefill" and prefill is None) or (need == "blocks" and workload.blocks is None):
            raise ConfigError(f"policy '{policy.name}' needs {REQUIREMENTS[need]}")
    instant = dispatch == "instant"
    G, B = int(workers), int(slots)
    N = len(workload)
    s, o = workload.prefill, workload.decode
    overhead = c.overhead(B)
    t_l, p_idle, p_max, gamma = c.token_latency_s, c.p_idle_w, c.p_max_w, c.gamma
    pool_target = c.pool_factor * G

    slot_request = np.full((G, B), -1, dtype=np.int64)
    generated = np.zeros(N, dtype=np.int64)
    worker_of = np.full(N, -1, dtype=np.int64)
    start = np.full(N, np.nan)
    finish = np.full(N, np.nan)
    start_step = np.full(N, -1, dtype=np.int64)
    finish_step = np.full(N, -1, dtype=np.int64)
    enter_step = np.full(N, -1, dtype=np.int64)
    enter_clock = np.full(N, np.nan)
    completed = np.full(N, -1, dtype=np.int64)
    loads = np.zeros(G, dtype=np.int64)
    active = np.zeros(G, dtype=np.int64)
    series = StepSeries(G, record_loads)
    route_times: list[float] = []
    # per-worker FIFO queues of instant dispatch (see bfio.kernels.enqueue)
    q_head = np.full(G, -1, dtype=np.int64)
    q_tail = np.full(G, -1, dtype=np.int64)
    q_next = np.full(N, -1, dtype=np.int64)
    q_len = np.zeros(G, dtype=np.int64)
    q_tokens = np.zeros(G, dtype=np.int64)
    queue_worker = np.full(N, -1, dtype=np.int64)
    admitted_buf = np.empty(max(1, min(N, G * B)), dtype=np.int64)

    chunked = Prefill(prefill, workload, G, B) if prefill is not None else None
    if chunked is not None and chunked.kv_cap and not instant:
        raise ConfigError("prefill.kv_tokens: the KV bound of admission is modelled for dispatch='instant' (per-rank "
                          "queues); central dispatch lets the pool policy choose admissions")
    no_memory = np.zeros(G, dtype=np.int64)  # admit_queues' KV tokens when admission is not bounded
    loop = None  # closed-loop arrivals (bfio.closed_loop)
    if entry == "arrivals" and workload.follow_ups is not None:
        loop = ClosedLoopArrivals(workload.arrival_s, workload.follow_ups)

    state = {"pool": np.empty(0, dtype=np.int64), "next": 0, "clock": 0.0, "step": 0, "finished": 0,
             "queued": 0, "idle_s": 0.0}
    policy.reset(G, B)

    def waiting() -> int:
        return state["queued"] if instant else int(state["pool"].shape[0])

    def top_up():
        if loop is not None:
            new = loop.due(state["clock"])
            if new.size == 0:
                return
            enter_step[new] = state["step"]
            enter_clock[new] = loop.time[new]
            state["next"] += int(new.size)  # requests entered so far
        else:
            nxt = state["next"]
            if nxt >= N:
                return
            if entry == "backlog":
                need = pool_target - waiting()
                if need <= 0:
                    return
                stop = min(N, nxt + need)
            else:
                stop = int(workload.arrival_s.searchsorted(state["clock"], side="right"))
                if stop <= nxt:
                    return
            new = np.arange(nxt, stop, dtype=np.int64)
            enter_step[nxt:stop] = state["step"]
            enter_clock[nxt:stop] = state["clock"] if entry == "backlog" else workload.arrival_s[nxt:stop]
            state["next"] = stop
        if instant:
            bind(new)
        else:
            state["pool"] = np.concatenate([state["pool"], new])

    def bind(new: np.ndarray) -> None:
        """Instant dispatch: the policy binds each new request to one worker's queue."""
        ds = DispatchState(step=state["step"], clock=state["clock"], workers=G, slots=B, waiting=q_len,
                           waiting_tokens=q_tokens, running=active, loads=loads, free=B - active,
                           workload=workload, slot_request=slot_request, generated=generated, queue_head=q_head,
                           queue_next=q_next,
                           running_prompt_tokens=np.where(slot_request >= 0, s[slot_request], 0).sum(axis=1),
                           prefill=None if chunked is None else CacheView(chunked, slot_request, q_tokens, t_l,
                                                                             q_head, q_next))
        t0 = run_clock()
        to = np.asarray(policy.dispatch(ds, new))
        route_times.append(run_clock() - t0)
        check_dispatch(to, new.shape[0], G, policy.name, state["step"])
        to = to.astype(np.int64)
        enqueue(new, to, s, q_head, q_tail, q_next, q_len, q_tokens)
        queue_worker[new] = to
        state["queued"] += int(new.shape[0])

    def admit_from_queues() -> int:
        if state["queued"] == 0:
            return 0
        kv_cap = chunked.kv_cap if chunked is not None else 0
        committed = chunked.committed(loads) if kv_cap else no_memory
        n = int(admit_queues(slot_request, q_head, q_tail, q_next, q_len, q_tokens, s, loads, active,
                             worker_of, admitted_buf, kv_cap, committed))
        if n:
            admitted = admitted_buf[:n]
            start[admitted] = state["clock"]
            start_step[admitted] = state["step"]
            state["queued"] -= n
            if chunked is not None:
                chunked.admitted(admitted.copy(), worker_of, loads)
        return n

    def next_arrival() -> float:
        """The next arrival still to come (``entry="arrivals"``, some request not entered)."""
        if loop is None:
            return float(workload.arrival_s[state["next"]])
        t = loop.next_time()
        if t is None:  # cannot be: a request not entered follows one not completed, which is active
            raise PolicyError(f"closed loop: no arrival to come at step {state['step']} with "
                              f"{N - state['next']} requests not entered")
        return t

    def route() -> int:
        if instant:
            # queued requests take the slots freed by the last step, then new
            # arrivals are bound and may start at once on workers with room
            n = admit_from_queues()
            top_up()
            return n + admit_from_queues()
        top_up()
        pool = state["pool"]
        if pool.shape[0] == 0:
            return 0
        free = B - active
        if not free.any():
            return 0
        rs = RoutingState(step=state["step"], clock=state["clock"], workers=G, slots=B, pool=pool,
                          free=free, loads=loads, active=active, workload=workload,
                          slot_request=slot_request, generated=generated, enter_step=enter_step,
                          completed=completed[:state["finished"]], idle_s=state["idle_s"],
                          prefill=None if chunked is None else CacheView(chunked, slot_request, q_tokens, t_l))
        t0 = run_clock()
        assign = np.asarray(policy.route(rs))
        route_times.append(run_clock() - t0)
        check_assignment(assign, pool.shape[0], free, policy.name, state["step"])
        rest = np.empty_like(pool)
        n, kept = admit_assigned(pool, assign, slot_request, s, loads, active, worker_of, start, start_step,
                                 state["clock"], state["step"], rest)
        if n:
            if chunked is not None:
                chunked.admitted(pool[assign >= 0], worker_of, loads)
            state["pool"] = rest[:kept]
        return int(n)

    finished = 0
    last_admission_step = 0
    route()
    bar = progress(total=N, desc=f"simulate {policy.name}", enabled=show_progress, unit="req")
    while finished < N:
        if not active.any():
            if entry == "arrivals" and waiting() == 0 and state["next"] < N:
                nxt_arrival = next_arrival()
                if nxt_arrival > state["clock"]:
                    state["idle_s"] += nxt_arrival - state["clock"]
                    state["clock"] = nxt_arrival
            if route() > 0:
                last_admission_step = state["step"]
            if not active.any():
                if waiting() and (B - active).any():
                    raise PolicyError(f"policy '{policy.name}' admitted nothing at step {state['step']} "
                                      f"while every worker was idle and {waiting()} requests waited")
                break
        # the steps until the next routing call that can change anything: while
        # nothing waits, a routing call is a no-op until the next arrival (or for
        # good, once every request has entered), so these steps run in one kernel
        # call; otherwise one step, then a routing call (as the step loop reads)
        until = -np.inf
        if fast_forward and waiting() == 0:
            if state["next"] >= N:
                until = np.inf
            elif loop is not None and loop.unreleased:
                until = -np.inf  # a completion may release an arrival before the next known one
            elif entry == "arrivals":
                until = next_arrival()
        series.reserve()
        if chunked is None:
            clock, step, n_done, series.n = run_steps(
                slot_request, s, o, generated, finish, finish_step, loads, active, completed, finished,
                state["clock"], state["step"], overhead, t_l, p_idle, p_max, gamma, series.buf, series.n,
                record_loads, series.load_rows, until)
        else:  # one step at a time: prefill endings feed the prefix caches
            clock, step, n_done, series.n = chunked.step(
                slot_request, s, o, generated, finish, finish_step, loads, active, completed, finished,
                state["clock"], state["step"], overhead, t_l, p_idle, p_max, gamma, series, record_loads, worker_of)
        state["clock"], state["step"] = float(clock), int(step)
        done = int(n_done) - finished
        finished = int(n_done)
        state["finished"] = finished
        if done:
            bar.update(done)
            if loop is not None:
                ids = completed[finished - done:finished]
                loop.completed(ids, finish[ids])
        if route() > 0:
            last_admission_step = state["step"]
    bar.close()

    if finished < N:
        raise PolicyError(f"simulation stopped with {N - finished} of {N} requests unfinished")
    arrays = series.arrays()
    tpot = float(np.mean((finish - start) / o))
    wait_st = (start_step - enter_step).astype(float)
    wait_sec = start - enter_clock
    metrics = window_metrics(arrays, last_admission_step, tpot)
    metrics.update(run_totals(arrays, t_l, p_idle, p_max, gamma))
    metrics.update(wait_stats(wait_st, wait_sec))
    metrics.update(latency_stats(enter_clock, start, finish, o))
    metrics.update(run_metrics(arrays, state["clock"], state["idle_s"], G, p_idle))
    if route_times:
        rt = np.asarray(route_times)
        metrics.update({"route_calls": int(rt.size), "route_s_p50": float(np.percentile(rt, 50)),
                        "route_s_p99": float(np.percentile(rt, 99)), "route_s_total": float(rt.sum())})
    metrics.update(policy.stats())
    if chunked is not None:
        metrics.update(chunked.metrics(enter_clock, finish, o))
    requests = pd.DataFrame({"prefill": s, "decode": o, "worker": worker_of, "start_s": start,
                             "finish_s": finish, "start_step": start_step, "finish_step": finish_step,
                             "enter_step": enter_step, "wait_steps": wait_st, "wait_s": wait_sec,
                             "arrival_s": enter_clock, "tpot_s": (finish - start) / o,
                             "e2e_s": finish - enter_clock, "queue_worker": queue_worker})
    if chunked is not None:
        requests["ttft_s"] = chunked.first_token - enter_clock
        requests["cached_tokens"] = chunked.cached
    frame = pd.DataFrame(arrays)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="step")
    config = {"workers": G, "slots": B, "requests": N, "seed": seed, "policy": policy.name,
              "policy_options": policy.describe(), "entry": entry, "dispatch": dispatch,
              "overhead_s": overhead, **{k: v for k, v in c.to_dict().items() if k != "overhead_s"}}
    if chunked is not None:
        config["prefill"] = prefill.to_dict()
    warns = window_warnings(int(last_admission_step), arrays["active"], G, B, entry)
    return SimulationResult(config=config, metrics=metrics, steps=int(state["step"]),
                            window_steps=int(last_admission_step), requests=requests, series=frame,
                            loads=series.loads(),
                            wall_s=time.perf_counter() - t_wall, warnings=warns)


def _check_lengths(workload: Workload) -> None:
    """The kernels' inputs, checked once: token lengths within :mod:`bfio.limits`
    (a :class:`Workload` enforces this; a hand-made object might not)."""
    for field_, arr, maximum in (("prefill", workload.prefill, MAX_PREFILL), ("decode", workload.decode, MAX_DECODE)):
        if arr.size and (arr.dtype != np.int64 or arr.min() < 1 or arr.max() > maximum):
            raise ConfigError(f"workload.{field_}: token lengths must be int64 in 1..{maximum:,} (bfio.limits), "
                              f"got dtype {arr.dtype}, range {arr.min()}..{arr.max()}")
