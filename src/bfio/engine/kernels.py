"""Numba kernels of the step loop (``../shared/spec/semantics.md``, "The step loop").

State is slot based: ``slot_request[g, b]`` holds the request in slot ``b`` of
worker ``g`` or -1. Loads are ``L_g = sum_{i in A_g} (s_i + tau_i)`` (Eq. (workload)).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper, kernel
from bfio.ground.power import worker_power
from bfio.engine.step_time import N_COEF, balanced_dt, lockstep_dt


@kernel
def retire(slot_request, g, b, finish, finish_step, clock, step, completed, position):
    """The request in slot ``b`` of worker ``g`` finished at ``clock`` / ``step``: it
    leaves its slot and is recorded at ``completed[position]`` (completion order)."""
    i = slot_request[g, b]
    finish[i] = clock
    finish_step[i] = step
    slot_request[g, b] = -1
    completed[position] = i


@kernel
def advance_step(slot_request, prefill, decode, generated, finish, finish_step, clock, step,
                 loads, active, completed, n_completed):
    """One decode step: every active request generates a token (``tau_i += 1``),
    requests with ``tau_i >= o_i`` finish at ``clock`` and leave their slot.
    Finished request ids are appended to ``completed`` from position
    ``n_completed`` (completion order). Rewrites ``loads`` and ``active`` with
    the post-completion values and returns the number of completions.
    ``active[g]`` must count the occupied slots of worker ``g`` on entry (the
    scan of a worker's slots stops once it has seen them all)."""
    G, B = slot_request.shape
    done = 0
    for g in range(G):
        total = 0
        n = 0
        todo = active[g]  # occupied slots of worker g: stop scanning once all are seen
        for b in range(B):
            if todo == 0:
                break
            i = slot_request[g, b]
            if i >= 0:
                todo -= 1
                t = generated[i] + 1
                generated[i] = t
                if t >= decode[i]:
                    retire(slot_request, g, b, finish, finish_step, clock, step, completed, n_completed + done)
                    done += 1
                else:
                    total += prefill[i] + t
                    n += 1
        loads[g] = total
        active[g] = n
    return done


@kernel
def seat(slot_request, g, i, prefill, loads, active, worker_of):
    """Request ``i`` takes the first free slot of worker ``g`` (its load gains ``s_i``)."""
    for b in range(slot_request.shape[1]):
        if slot_request[g, b] < 0:
            slot_request[g, b] = i
            break
    loads[g] += prefill[i]
    active[g] += 1
    worker_of[i] = g


@kernel
def place(slot_request, requests, workers, prefill, loads, active, worker_of):
    """Put each admitted request into the first free slot of its worker."""
    for j in range(requests.shape[0]):
        seat(slot_request, workers[j], requests[j], prefill, loads, active, worker_of)


@kernel
def admit_assigned(pool, assign, slot_request, prefill, loads, active, worker_of, start, start_step, clock,
                   step, rest):
    """Carry out a checked routing decision: pool entry ``j`` with
    ``assign[j] >= 0`` takes the first free slot of that worker (in pool order,
    as :func:`place`) and starts at ``clock`` / ``step``; the others are copied,
    in order, to ``rest``. Returns ``(admitted, kept)``: the remaining pool is
    ``rest[:kept]``."""
    n = 0
    k = 0
    for j in range(pool.shape[0]):
        if assign[j] >= 0:
            i = pool[j]
            seat(slot_request, assign[j], i, prefill, loads, active, worker_of)
            start[i] = clock
            start_step[i] = step
            n += 1
        else:
            rest[k] = pool[j]
            k += 1
    return n, k


@kernel
def load_stats(loads, p_idle, p_max, gamma):
    """``(max_g L_g, sum_g L_g, sum_g P(L_g / max L))`` of one step."""
    m = 0
    total = 0
    for g in range(loads.shape[0]):
        total += loads[g]
        if loads[g] > m:
            m = loads[g]
    psum = 0.0
    for g in range(loads.shape[0]):
        psum += worker_power(loads[g], m, p_idle, p_max, gamma)
    return m, total, psum


# -- per-worker FIFO queues (dispatch="instant") ------------------------------------------
# Queue g is a singly linked list of request ids: q_head[g] -> q_next[i] -> ... -> q_tail[g]
# (-1 terminates / marks empty). q_len[g] and q_tokens[g] (sum of queued s_i) are kept in step.


@kernel
def enqueue(requests, workers, prefill, q_head, q_tail, q_next, q_len, q_tokens):
    """Append each request to the tail of its worker's queue, in order."""
    for j in range(requests.shape[0]):
        i = requests[j]
        g = workers[j]
        q_next[i] = -1
        if q_tail[g] < 0:
            q_head[g] = i
        else:
            q_next[q_tail[g]] = i
        q_tail[g] = i
        q_len[g] += 1
        q_tokens[g] += prefill[i]


@helper
def kv_admits(active, committed, need, growth, kv_cap):
    """The KV bound of admission (``kv_cap > 0``): whether a worker with ``active``
    seated requests and ``committed`` KV tokens taken seats a queue head whose
    admission takes ``need`` tokens plus ``growth``: an idle worker seats anything,
    else only within ``kv_cap``. Invariant: the one memory rule of admission
    (:func:`admit_queues`) and of a migration's seat check (:func:`queue_room`)."""
    return active == 0 or committed + need + growth <= kv_cap


@kernel
def admit_queues(slot_request, q_head, q_tail, q_next, q_len, q_tokens, prefill, loads, active,
                 worker_of, out, kv_cap, committed, need, growth):
    """Every worker moves requests from the head of its own queue into its free
    slots, in queue order, until the queue or the slots run out, or (``kv_cap >
    0``) until the head's KV tokens ``need[i]`` (its prompt; with preemption its
    prompt and generated tokens) plus ``growth`` (with preemption: room for its
    next token, 1; else 0) would take the worker's KV tokens ``committed[g]``
    beyond ``kv_cap`` (an idle worker seats it anyway; ``committed`` gains each
    seated ``need[i] + growth``; :func:`kv_admits`). Admitted ids are written to
    ``out``; returns how many."""
    G, B = slot_request.shape
    n = 0
    for g in range(G):
        while active[g] < B and q_head[g] >= 0:
            i = q_head[g]
            if kv_cap > 0:
                if not kv_admits(active[g], committed[g], need[i], growth, kv_cap):
                    break  # the head waits for KV memory (FIFO: nothing behind it overtakes)
                committed[g] += need[i] + growth
            q_head[g] = q_next[i]
            if q_head[g] < 0:
                q_tail[g] = -1
            q_len[g] -= 1
            q_tokens[g] -= prefill[i]
            seat(slot_request, g, i, prefill, loads, active, worker_of)
            out[n] = i
            n += 1
    return n


@kernel
def queue_room(q_head, q_next, active, committed, need, growth, kv_cap, room):
    """``room[g]``: the KV tokens a request joining the tail of worker ``g``'s queue may
    take and still be seated at once by :func:`admit_queues`' memory rule
    (:func:`kv_admits`, ``kv_cap > 0``), every request queued ahead of it seated
    first (slots aside): ``committed[g]`` plus each queued ``need[j] + growth``, less
    ``growth`` for its own next token; ``inf`` where the worker would still be idle
    (none seated, none queued: it seats anything), ``-inf`` where a queued request
    waits for memory (FIFO: nothing behind it is seated). Invariant: a request of
    ``need`` tokens joining the tail passes :func:`kv_admits` after the queue iff
    ``need <= room[g]``."""
    for g in range(room.shape[0]):
        c, n, blocked = committed[g], active[g], False
        j = q_head[g]
        while j >= 0:
            if not kv_admits(n, c, need[j], growth, kv_cap):
                blocked = True
                break
            c += need[j] + growth
            n += 1
            j = q_next[j]
        if blocked:
            room[g] = -np.inf
        elif n == 0:
            room[g] = np.inf
        else:
            room[g] = kv_cap - c - growth
    return room


# -- runs of steps without a routing decision (the step loop's fast path) -----------------
# Rows of the per-step series buffer written by ``run_steps``, in this order
# (``bfio.engine.simulation_result.SERIES_FIELDS``).
S_CLOCK, S_DT, S_ACTIVE, S_COMPLETIONS, S_IMB_POST, S_IMB_PRE, S_E_POST, S_E_PRE, S_PMEAN_POST, \
    S_PMEAN_PRE, S_MAXLOAD_PRE, S_SUMLOAD_PRE, S_PSUM_PRE = range(13)


@kernel
def write_row(series, n_rows, clock, dt, n_active, done, G, pre, post):
    """Row ``n_rows`` of the per-step series: the step's clock and ``dt``, active and
    completed requests, and the load statistics (``load_stats``) before and after it."""
    pre_max, pre_sum, pre_psum = pre
    post_max, post_sum, post_psum = post
    series[S_CLOCK, n_rows] = clock
    series[S_DT, n_rows] = dt
    series[S_ACTIVE, n_rows] = n_active
    series[S_COMPLETIONS, n_rows] = done
    series[S_IMB_POST, n_rows] = G * post_max - post_sum
    series[S_IMB_PRE, n_rows] = G * pre_max - pre_sum
    series[S_E_POST, n_rows] = post_psum * dt
    series[S_E_PRE, n_rows] = pre_psum * dt
    series[S_PMEAN_POST, n_rows] = post_psum / G
    series[S_PMEAN_PRE, n_rows] = pre_psum / G
    series[S_MAXLOAD_PRE, n_rows] = pre_max
    series[S_SUMLOAD_PRE, n_rows] = pre_sum
    series[S_PSUM_PRE, n_rows] = pre_psum


@kernel
def run_steps(slot_request, prefill, decode, generated, finish, finish_step, loads, active, completed,
              n_completed, clock, step, overhead, t_l, p_idle, p_max, gamma, series, n_rows,
              record_loads, load_rows, until_clock, step_coef):
    """Run decode steps of the paper's step loop (``../shared/spec/semantics.md``)
    with no routing call between them, writing one row per step into
    ``series[:, n_rows:]`` (and the gating loads into ``load_rows[n_rows:]`` when
    ``record_loads``).

    Always runs one step; runs the next one only while a routing call after the
    step would be a no-op, which the caller guarantees up to ``until_clock``
    (nothing waits and the next arrival is later than ``until_clock``): some
    request is still active, the clock is below ``until_clock`` and the buffer
    has room. Every number is computed exactly as one step at a time
    (``load_stats``, ``dt``, ``advance_step``, the same float operations in the
    same order). ``step_coef``: empty for the paper's ``dt = C + t_l max_g L_g``,
    else the calibrated step model's coefficients
    (:func:`bfio.engine.step_time.lockstep_dt`), or the balanced reference's
    (:func:`bfio.engine.step_time.balanced_dt`). Returns ``(clock, step,
    n_completed, n_rows)``."""
    G = loads.shape[0]
    capacity = series.shape[1]
    while True:
        pre_max, pre_sum, pre_psum = load_stats(loads, p_idle, p_max, gamma)
        if record_loads:
            for g in range(G):
                load_rows[n_rows, g] = loads[g]
        n_active = 0
        for g in range(G):
            n_active += active[g]
        if step_coef.shape[0] == 0:
            dt = overhead + t_l * pre_max
        elif step_coef.shape[0] == N_COEF:
            dt = lockstep_dt(step_coef, loads, active)
        else:  # the balanced reference (its generated and slot_request stand in for the unread left and take)
            dt = balanced_dt(step_coef, slot_request, prefill, generated, generated, slot_request, loads, False)
        clock += dt
        step += 1
        done = advance_step(slot_request, prefill, decode, generated, finish, finish_step, clock, step,
                            loads, active, completed, n_completed)
        post_max, post_sum, post_psum = load_stats(loads, p_idle, p_max, gamma)
        write_row(series, n_rows, clock, dt, n_active, done, G, (pre_max, pre_sum, pre_psum),
                  (post_max, post_sum, post_psum))
        n_rows += 1
        n_completed += done
        if n_rows >= capacity or not (clock < until_clock):
            break
        busy = False
        for g in range(G):
            if active[g] > 0:
                busy = True
                break
        if not busy:
            break
    return clock, step, n_completed, n_rows


@kernel
def assignment_fault(assign, free):
    """First fault of a routing decision ``assign`` (one worker or -1 per pool
    entry) against the free slots ``free``: ``(0, -1)`` if none,
    ``(1, j)`` if entry ``j`` names no worker (outside ``-1..G-1``),
    ``(2, g)`` if worker ``g`` got more requests than it has free slots."""
    G = free.shape[0]
    for j in range(assign.shape[0]):
        if assign[j] < -1 or assign[j] >= G:
            return 1, j
    counts = np.zeros(G, dtype=np.int64)
    for j in range(assign.shape[0]):
        if assign[j] >= 0:
            counts[assign[j]] += 1
    for g in range(G):
        if counts[g] > free[g]:
            return 2, g
    return 0, -1


@kernel
def first_outside(workers, G):
    """Index of the first entry of ``workers`` outside ``0..G-1``, or -1."""
    for j in range(workers.shape[0]):
        if workers[j] < 0 or workers[j] >= G:
            return j
    return -1
