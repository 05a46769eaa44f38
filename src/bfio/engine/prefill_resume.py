"""Requests taken out of their slots and seated again, in the prefill model's
accounting (:class:`bfio.engine.prefill.Prefill`, which takes these methods from
:class:`Resumes`): KV preemption (issue 44, :mod:`bfio.sim.preemption`) and
migration (issue 45, :mod:`bfio.sim.migration`) take a running request out of
its slot; when it is seated again its KV is either

- **recomputed** (:meth:`Resumes.evict`, then :meth:`Resumes._readmitted`): its
  KV was freed, so its prompt and the tokens it had generated go through the
  chunks again, less the new rank's cached prefix (vLLM's resume of a preempted
  request, ``num_tokens - num_computed_tokens``; :func:`resumed_tokens`, the one
  formula of the charge and of a migration planner's cost, :meth:`Resumes.resume_tokens`);
- or **received** (:meth:`Resumes.hand_over`, then :meth:`Resumes._received`;
  a migration with ``kv: transfer``, :mod:`bfio.sim.transfer`): its resident
  tokens, ``s_i + tau_i - left_i`` (:meth:`Resumes.sent_tokens`), leave the
  source and are resident on the destination at once; nothing is recomputed,
  and only what it had still to compute (``left_i``, 0 once its prefill is
  done) is computed on the destination, in its chunks. Its prefix-cache hit
  (``cached``) stays its first admission's (the destination's cache is not
  looked up: nothing is computed that a hit could spare), and a prompt
  received whole enters the destination's prefix cache on arrival, as a prompt
  computed there enters it when its prefill ends (the blocks are resident
  there; vLLM's scheduler caches the blocks of a request whose KV arrived
  through a KV connector once they are loaded: ``vllm/v1/core/sched/scheduler.py``,
  ``Scheduler._update_waiting_for_remote_kv``, "When the kv transfer is ready,
  we cache the blocks"). The transfer's seconds are
  charged to the step by :mod:`bfio.sim.transfer`, not here.

In either way the bookkeeping keeps the prefill model's invariants: a rank's
``loads`` is its requests' resident tokens ``sum (s_i + tau_i - left_i)``, its
``reserve`` the tokens they have still to compute ``sum left_i``, and a
request's KV need at admission (:meth:`Resumes.need`) what it will hold once
its prefill is done (``s_i`` plus the generated tokens it recomputes or brings).
"""

from __future__ import annotations

import numpy as np


def resumed_tokens(prompt, cached, generated):
    """The tokens a request taken out of its slot computes when seated again (vLLM's
    ``num_tokens - num_computed_tokens`` after ``_preempt_request``): its prompt less
    the cached prefix of its new rank, and the tokens it had generated (their KV
    was freed with the slot). The one formula of the simulator's charge
    (:meth:`Resumes._readmitted`) and of a migration planner's cost
    (:meth:`Resumes.resume_tokens`)."""
    return prompt - cached + generated


class Resumes:
    """The part of :class:`bfio.engine.prefill.Prefill` for requests seated again (module
    docstring). Per request: ``resume`` the generated tokens its next admission
    recomputes and ``requeued`` whether it waits for that recompute
    (:meth:`track_resumes`); ``carry`` the generated tokens whose KV it brings and
    ``received`` whether it waits to be seated with them (:meth:`track_received`);
    each ``None`` until a part asks for it."""

    resume: np.ndarray | None = None
    requeued: np.ndarray | None = None
    carry: np.ndarray | None = None
    received: np.ndarray | None = None

    def track_resumes(self) -> None:
        """Keep, per request, the generated tokens its next admission recomputes
        (:meth:`evict`; preemption, issue 44, and migration, issue 45, take requests
        out of their slots)."""
        if self.resume is None:
            n = self.prefill.shape[0]
            self.resume = np.zeros(n, dtype=np.int64)
            self.requeued = np.zeros(n, dtype=bool)

    def track_received(self) -> None:
        """Keep, per request, the generated tokens whose KV it brings to its next
        admission (:meth:`hand_over`; a migration's transfer, issue 45)."""
        if self.carry is None:
            n = self.prefill.shape[0]
            self.carry = np.zeros(n, dtype=np.int64)
            self.received = np.zeros(n, dtype=bool)

    def need(self, prompt: np.ndarray) -> np.ndarray:
        """Per request, the KV tokens its admission takes: its prompt (``prompt``) and
        the generated tokens it recomputes (:meth:`evict`) or brings (:meth:`hand_over`)."""
        out = prompt if self.resume is None else prompt + self.resume
        return out if self.carry is None else out + self.carry

    def _readmitted(self, ids: np.ndarray, worker_of: np.ndarray, loads: np.ndarray) -> None:
        """:meth:`bfio.engine.prefill.Prefill.admitted` when some of ``ids`` were preempted: as
        vLLM resumes a preempted request (``Scheduler.schedule``, its waiting loop:
        ``num_new_tokens = request.num_tokens - num_computed_tokens``, the prefix cache
        looked up again), its prompt *and* the tokens it had generated are computed
        again, less the leading prompt blocks its new rank's cache holds (``cached``
        is then the last admission's hit)."""
        if self.caches is not None:
            for i in ids.tolist():
                self.cached[i] = self._prefix_hit(i, int(worker_of[i]), lookup=True)
        prompt_left = self.prefill[ids] - self.cached[ids]
        left = resumed_tokens(self.prefill[ids], self.cached[ids], self.resume[ids])
        again = self.requeued[ids]
        self.recomputed_tokens += int(left[again].sum())
        self.resume[ids] = 0
        self.requeued[ids] = False
        self.left[ids] = left
        # seated with s_i; resident is the cached prefix (the kernel counts s_i + tau_i - left_i)
        np.subtract.at(loads, worker_of[ids], prompt_left)
        np.add.at(self.reserve, worker_of[ids], left)

    def _received(self, ids: np.ndarray, worker_of: np.ndarray, loads: np.ndarray) -> None:
        """Requests ``ids``, handed over with their KV (:meth:`hand_over`), were seated
        (their loads counted ``s_i``): resident at once are the tokens they brought,
        ``s_i + tau_i - left_i``; what they had still to compute (``left_i``, kept)
        is this rank's to compute; a prompt received whole enters this rank's prefix
        cache (module docstring)."""
        ranks = worker_of[ids]
        left = self.left[ids]
        np.add.at(loads, ranks, self.carry[ids] - left)
        np.add.at(self.reserve, ranks, left)
        self.carry[ids] = 0
        self.received[ids] = False
        if self.caches is not None:
            for i in ids[left == 0].tolist():
                self.caches[worker_of[i]].insert(self.blocks.blocks_of(i))

    def resume_tokens(self, i: int, generated: int) -> np.ndarray:
        """Per rank, the tokens request ``i`` (running, ``generated`` tokens so far) would
        compute if it were taken out of its slot now and seated there (a migration's
        recompute, issue 45, :mod:`bfio.sim.migration`): :func:`resumed_tokens` of its
        prompt less that rank's cached prefix (probed,
        :meth:`bfio.engine.prefill.Prefill._probed_hits`) and its generated tokens, what
        :meth:`_readmitted` charges when it is seated."""
        return resumed_tokens(self.prefill[i], self._probed_hits(i), generated)

    def resume_tokens_of(self, ids: np.ndarray, generated: np.ndarray) -> np.ndarray:
        """:meth:`resume_tokens` of each running request of ``ids`` (``generated`` per
        request), ``(n, G)``: the caches' versions read once (a probe changes no
        cache), each request's probe as :meth:`resume_tokens` reads it."""
        ids = np.asarray(ids, dtype=np.int64)
        versions = self.cache_versions()
        hits = np.zeros((ids.shape[0], self.reserve.shape[0]), dtype=np.int64)
        for k, i in enumerate(ids.tolist()):
            hits[k] = self._probed_hits(i, versions)
        return resumed_tokens(self.prefill[ids][:, None], hits, generated[ids][:, None])

    def sent_tokens(self, ids: np.ndarray, generated: np.ndarray) -> np.ndarray:
        """Per request of ``ids`` (running; ``generated`` per request), the KV tokens a
        transfer would send now: its resident ones, ``s_i + tau_i - left_i``. The one
        formula of :meth:`hand_over` and of a migration planner's transfer cost."""
        return self.prefill[ids] + generated[ids] - self.left[ids]

    def evict(self, i: int, g: int, loads: np.ndarray, generated: np.ndarray) -> int:
        """Request ``i`` on rank ``g`` is preempted: its resident tokens leave ``loads[g]``
        and its prefill still to do leaves the rank's reserve; it keeps its generated
        tokens (its output so far), which its next admission recomputes with its
        prompt (vLLM ``Scheduler._preempt_request``: blocks freed,
        ``num_computed_tokens = 0``). Returns the KV tokens it held or had reserved
        (``s_i + tau_i``)."""
        left = int(self.left[i])
        whole = int(self.prefill[i]) + int(generated[i])
        loads[g] -= whole - left
        self.reserve[g] -= left
        self.left[i] = 0
        self.resume[i] = generated[i]
        self.requeued[i] = True
        return whole

    def hand_over(self, i: int, g: int, loads: np.ndarray, generated: np.ndarray) -> int:
        """Request ``i`` on rank ``g`` leaves with its KV (a migration's transfer): its
        resident tokens leave ``loads[g]`` and what it had still to compute leaves the
        rank's reserve, but it keeps ``left_i`` (the destination computes it) and its
        generated tokens, whose KV it brings (:meth:`_received` when seated). Returns
        the KV tokens sent (:meth:`sent_tokens`)."""
        sent = int(self.sent_tokens(np.array([i]), generated)[0])
        loads[g] -= sent
        self.reserve[g] -= int(self.left[i])
        self.carry[i] = generated[i]
        self.received[i] = True
        return sent
