"""KV preemption (issue 44): what a rank does when its running requests' next
step would take its KV memory beyond :class:`bfio.engine.prefill.PrefillModel`
``kv_tokens``. A part of the simulator (``docs/architecture.md``), chosen by
``PrefillModel.preemption``; the dispatch part runs it first in every routing
call (:meth:`bfio.sim.dispatch.CentralDispatch.routing_call`,
:meth:`bfio.sim.dispatch.InstantDispatch.routing_call`) and puts the evicted
requests back where it keeps its waiting ones.

The memory a rank's running requests hold or will hold is
``committed_g = sum (s_i + tau_i)`` (:meth:`bfio.engine.prefill.Prefill.committed`:
resident tokens plus prompt tokens still to compute); the next step adds at most
one token per running request, so a rank is over its memory when
``committed_g + |A_g| > kv_tokens``. Requests are then evicted, one at a time,
until the rest fit; a request alone always fits (a run whose request has
``s_i + o_i > kv_tokens`` is refused when it starts, :class:`bfio.engine.prefill.Prefill`).

An evicted request frees its KV, keeps its generated tokens (its output so far)
and, when admitted again, recomputes its prompt and those tokens through the
prefill model's chunks (:meth:`bfio.engine.prefill.Prefill.admitted`); its TTFT and
start stay those of its first admission.

Rules (read at their source, vLLM ``00024d31``, SGLang ``000eaffa``):

- ``vllm``: ``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``: when a
  running request cannot get its next KV block, ``preempted_req =
  self.running.pop()`` (FCFS policy: the last of the running list, the newest
  admitted; a resumed request is appended again) until it fits;
  ``Scheduler._preempt_request`` frees its blocks, sets ``num_computed_tokens =
  0``, counts ``num_preemptions`` and ``self.waiting.prepend_request(request)``
  (the *front* of the waiting queue, so of several victims the last evicted is
  first); a step that preempted admits no waiting request (``if not
  preempted_reqs``: the waiting loop is skipped).
- ``sglang``: ``python/sglang/srt/managers/schedule_batch.py``,
  ``ScheduleBatch.retract_decode``: the requests sorted by ``(len(output_ids),
  -len(origin_input_ids))`` descending and popped from the end while
  ``check_decode_mem`` fails, so the victim has the fewest output tokens, then
  the longest prompt (then, the sort being stable, the newest); never the last
  one. ``scheduler.py``, ``Scheduler.update_running_batch`` hands them to
  ``_extend_requests_to_queue``, ``self.waiting_queue.extend(reqs)``: the *back*
  of the waiting queue. Not modelled: ``check_decode_mem``'s headroom of
  ``retract_decode_steps`` tokens per request and the ``new_token_ratio``
  that makes SGLang's admission more cautious after a retraction (the same
  one-token growth test as ``vllm`` is used).

Not confirmed or not modelled: vLLM allocates in blocks (16 tokens), the model
counts tokens; a prefilling request is counted as growing like a decoding one.
"""

from __future__ import annotations

import numpy as np

from bfio.engine.prefill import Prefill
from bfio.sim.state import ClusterState, FirstStarts


class Preemption:
    """The evictions of one run: per request how often it was preempted
    (``times``), the total (``count``), and per rank whether it preempted in the
    current routing call (``blocked``: it admits nothing more in that call)."""

    #: whether an evicted request goes to the front of the waiting requests (else the back)
    front = True
    name = "none"

    def __init__(self, prefill: Prefill, state: ClusterState):
        self.prefill = prefill
        self.cap = prefill.kv_cap
        self.times = np.zeros(state.requests, dtype=np.int64)
        self.count = 0
        self.blocked = np.zeros(state.workers, dtype=bool)
        self.first = FirstStarts(state.requests)

    def victim(self, state: ClusterState, g: int) -> int:
        """The slot of rank ``g`` whose request is evicted next (rule-specific)."""
        raise NotImplementedError

    def run(self, state: ClusterState) -> list[int]:
        """Evict requests from every rank over its memory (module docstring) until the
        rest fit; returns the evicted ids in eviction order."""
        self.blocked[:] = False
        committed = self.prefill.committed(state.loads)
        over = np.flatnonzero(committed + state.active > self.cap)
        if over.size == 0:
            return []
        out = []
        for g in over.tolist():
            need = int(committed[g] + state.active[g])
            while need > self.cap and state.active[g] > 1:
                b = self.victim(state, g)
                i = int(state.slot_request[g, b])
                whole = self.prefill.evict(i, g, state.loads, state.generated)
                state.slot_request[g, b] = -1
                state.active[g] -= 1
                need -= whole + 1
                self.first.keep(i, state)
                self.times[i] += 1
                self.count += 1
                out.append(i)
            self.blocked[g] = True
        return out

    def admission_memory(self, state: ClusterState) -> np.ndarray:
        """Per rank, the KV tokens admission reads as taken: the running requests'
        ``committed`` plus their next token each; a rank that preempted in this call
        is full (vLLM admits nothing in a step with a preemption)."""
        committed = self.prefill.committed(state.loads) + state.active
        committed[self.blocked & (state.active > 0)] = self.cap
        return committed

    def need(self, workload) -> np.ndarray:
        """Per request, the KV tokens its admission takes: its prompt and the
        generated tokens it recomputes."""
        return self.prefill.need(workload.prefill)

    def readmitted(self, ids: np.ndarray, state: ClusterState) -> None:
        """Requests ``ids`` were seated: a preempted one keeps the start of its first
        admission (its wait is the wait before its first token)."""
        self.first.restore(ids, state)

    def metrics(self) -> dict:
        return {"preemptions": int(self.count), "preempted_requests": int((self.times > 0).sum())}


class VllmPreemption(Preemption):
    """vLLM's FCFS rule: the newest admitted running request (module docstring)."""

    name = "vllm"
    front = True

    def victim(self, state: ClusterState, g: int) -> int:
        row = state.slot_request[g]
        slots = np.flatnonzero(row >= 0)
        return int(slots[np.argmax(self.prefill.order[row[slots]])])


class SglangPreemption(Preemption):
    """SGLang's ``retract_decode`` order: fewest output tokens, then the longest
    prompt, then the newest (module docstring)."""

    name = "sglang"
    front = False

    def victim(self, state: ClusterState, g: int) -> int:
        row = state.slot_request[g]
        slots = np.flatnonzero(row >= 0)
        ids = row[slots]
        # np.lexsort: the last key is the primary one; the first of the order is evicted
        order = np.lexsort((-self.prefill.order[ids], -state.workload.prefill[ids], state.generated[ids]))
        return int(slots[order[0]])


RULES = {"vllm": VllmPreemption, "sglang": SglangPreemption}


def make_preemption(prefill: Prefill | None, state: ClusterState) -> Preemption | None:
    """The preemption part of a run (``None``: no preemption, the loop as before issue 44)."""
    if prefill is None or prefill.model.preemption == "none":
        return None
    return RULES[prefill.model.preemption](prefill, state)
