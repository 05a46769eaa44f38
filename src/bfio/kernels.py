"""Numba kernels of the step loop (``../shared/spec/semantics.md``, "The step loop").

State is slot based: ``slot_request[g, b]`` holds the request in slot ``b`` of
worker ``g`` or -1. Loads are ``L_g = sum_{i in A_g} (s_i + tau_i)`` (Eq. (workload)).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bfio.power import worker_power


@njit(cache=True)
def advance_step(slot_request, prefill, decode, generated, finish, finish_step, clock, step,
                 loads, active, completed, n_completed):
    """One decode step: every active request generates a token (``tau_i += 1``),
    requests with ``tau_i >= o_i`` finish at ``clock`` and leave their slot.
    Finished request ids are appended to ``completed`` from position
    ``n_completed`` (completion order). Rewrites ``loads`` and ``active`` with
    the post-completion values and returns the number of completions."""
    G, B = slot_request.shape
    done = 0
    for g in range(G):
        total = 0
        n = 0
        for b in range(B):
            i = slot_request[g, b]
            if i >= 0:
                t = generated[i] + 1
                generated[i] = t
                if t >= decode[i]:
                    finish[i] = clock
                    finish_step[i] = step
                    slot_request[g, b] = -1
                    completed[n_completed + done] = i
                    done += 1
                else:
                    total += prefill[i] + t
                    n += 1
        loads[g] = total
        active[g] = n
    return done


@njit(cache=True)
def seat(slot_request, g, i, prefill, loads, active, worker_of):
    """Request ``i`` takes the first free slot of worker ``g`` (its load gains ``s_i``)."""
    for b in range(slot_request.shape[1]):
        if slot_request[g, b] < 0:
            slot_request[g, b] = i
            break
    loads[g] += prefill[i]
    active[g] += 1
    worker_of[i] = g


@njit(cache=True)
def place(slot_request, requests, workers, prefill, loads, active, worker_of):
    """Put each admitted request into the first free slot of its worker."""
    for j in range(requests.shape[0]):
        seat(slot_request, workers[j], requests[j], prefill, loads, active, worker_of)


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def admit_queues(slot_request, q_head, q_tail, q_next, q_len, q_tokens, prefill, loads, active,
                 worker_of, out):
    """Every worker moves requests from the head of its own queue into its free
    slots, in queue order, until the queue or the slots run out. Admitted ids
    are written to ``out``; returns how many."""
    G, B = slot_request.shape
    n = 0
    for g in range(G):
        while active[g] < B and q_head[g] >= 0:
            i = q_head[g]
            q_head[g] = q_next[i]
            if q_head[g] < 0:
                q_tail[g] = -1
            q_len[g] -= 1
            q_tokens[g] -= prefill[i]
            seat(slot_request, g, i, prefill, loads, active, worker_of)
            out[n] = i
            n += 1
    return n
