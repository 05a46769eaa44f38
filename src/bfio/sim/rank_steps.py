"""Kernels of independent ranks with chunked prefill (issue 44, ``barrier:
independent`` with :class:`bfio.engine.prefill.PrefillModel`; the engine is
:class:`bfio.sim.engine.IndependentPrefillEngine`).

Dense data parallelism in vLLM has no barrier: ``vllm/v1/engine/core.py``,
``EngineCoreProc.run_engine_core`` ("Non-MoE DP ranks are completely
independent, so treat like DP=1": each rank an ``EngineCoreProc`` of its own),
whose ``run_busy_loop`` steps its own scheduler and model
(``_process_engine_step`` -> ``EngineCore.step``: ``scheduler.schedule()``, then
the model's forward pass on that batch). So a rank's step is its own batch
alone, charged on its own clock: ``alpha + a_kv L_g + a_n n_g + a_p P_g + a_p2
P_g^2 + beta n_g`` (:func:`bfio.engine.step_time.rank_step_dt`: decode and the prefill
chunk fused in one batch, the batch padded to itself, no DP collective), where
the chunk ``P_g`` is :func:`bfio.engine.prefill.allot_chunks`'s for that rank (the
chunk budget, oldest admission first) and ``n_g`` its seated requests whose
prompt is done.

A step is fixed when it starts (:func:`start_rank_steps`): its batch is the
requests seated then (admission serial ``order[i] < admitted_by[g]``), each
with its chunk ``batch_take[i]``. It is applied when it ends
(:func:`end_rank_steps`), as :func:`bfio.engine.prefill.prefill_step` applies a
lockstep step: chunks computed, a prompt done yields its first token, decoding
requests a token each, finished ones retire. A request seated while its rank is
mid-step joins the rank's next step (vLLM queues it until the next
``schedule()``); one preempted mid-step is out of its slot and loses its chunk.
"""

from __future__ import annotations

from bfio.ground.jit import kernel
from bfio.engine.kernels import retire
from bfio.engine.prefill import allot_chunks
from bfio.engine.step_time import rank_step_dt


@kernel
def start_rank_steps(coef, slot_request, left, order, chunk, cap, take, loads, active, in_step, started, ends,
                     dts, admitted_by, batch_take, admissions, clock):
    """Every rank with seated requests and no step under way starts one at
    ``clock``: its chunk (:func:`bfio.engine.prefill.allot_chunks` on its row), its
    step time ``rank_step_dt(L_g, n_g, P_g)`` read before the step is applied
    (``dts[g]``, ending at ``ends[g]``), ``admitted_by[g] = admissions`` (the
    admissions so far: its batch) and ``batch_take[i]`` per seated request.
    Invariant: a rank under way is not touched; ``sum_b take[g, b] <= chunk``."""
    G, B = slot_request.shape
    for g in range(G):
        if in_step[g] or active[g] == 0:
            continue
        allot_chunks(slot_request[g:g + 1], left, order, chunk, cap, take[g:g + 1])
        n = 0
        p = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            batch_take[i] = take[g, b]
            if left[i] > 0:
                p += take[g, b]
            else:
                n += 1
        dt = rank_step_dt(coef, loads[g], n, p)
        in_step[g] = True
        started[g] = clock
        dts[g] = dt
        ends[g] = clock + dt
        admitted_by[g] = admissions


@kernel
def end_rank_steps(slot_request, prefill, decode, generated, left, order, admitted_by, batch_take, stepping,
                   finish, finish_step, first_token, clock, step, loads, active, reserve, completed, n_completed,
                   prefilled):
    """The steps of the ranks with ``stepping[g]`` end at ``clock``: each request of
    the rank's batch (``order[i] < admitted_by[g]``) computes its chunk
    (``batch_take[i]``, leaving the rank's ``reserve``) or, its prompt done,
    decodes a token; a prompt that ends yields its first token (``first_token``,
    written to ``prefilled``); those with ``tau_i >= o_i`` retire. Invariant, as
    :func:`bfio.engine.prefill.prefill_step`: ``loads[g]`` afterwards is ``sum (s_i -
    left_i + tau_i)`` of its seated requests, ``active[g]`` their count.
    Returns ``(completions, prefills ended, output tokens)``."""
    G, B = slot_request.shape
    done = 0
    ended = 0
    tokens = 0
    for g in range(G):
        if not stepping[g]:
            continue
        total = 0
        n = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            if order[i] >= admitted_by[g]:  # seated mid-step: resident, not in this batch
                total += prefill[i] + generated[i] - left[i]
                n += 1
                continue
            if left[i] > 0:
                got = batch_take[i]
                left[i] -= got
                reserve[g] -= got
                if left[i] == 0:  # the last chunk yields the first token (a recompute's next one)
                    tokens += 1
                    generated[i] += 1
                    if generated[i] == 1:
                        first_token[i] = clock
                    prefilled[ended] = i
                    ended += 1
                else:
                    total += prefill[i] + generated[i] - left[i]
                    n += 1
                    continue
            else:
                tokens += 1
                generated[i] += 1
            t = generated[i]
            if t >= decode[i]:
                retire(slot_request, g, b, finish, finish_step, clock, step, completed, n_completed + done)
                done += 1
            else:
                total += prefill[i] + t
                n += 1
        loads[g] = total
        active[g] = n
    return done, ended, tokens
