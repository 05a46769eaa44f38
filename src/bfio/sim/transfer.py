"""KV-cache transfers of migrated requests and their charge to the lockstep step
(issue 45, third action, ``migration_options kv: transfer``; :mod:`bfio.sim.migration`).

A running request migrated with ``kv: transfer`` (or ``choose``, when the
planner chose to send it; :mod:`bfio.sim.migration_kv`) keeps its KV cache: when
it is seated on its new rank ``g`` its ``K_i`` tokens are resident at once
(nothing recomputed), and their bytes, ``K_i x kv_bytes_per_token``, cross one
link of ``transfer_gbps`` gigabits per second: ``X_i = K_i kv_bytes_per_token /
(transfer_gbps 1e9 / 8)`` seconds. ``K_i = s_i + tau_i``; with the prefill model
its resident tokens ``s_i + tau_i - left_i`` (a request still in its prefill
sends what it has computed, and its new rank computes the rest in its chunks;
its prompt is not prefilled again: :mod:`bfio.engine.prefill_resume`). Rank ``g``
receives ``X_g``, the sum of its arrivals' ``X_i`` since its last step, before it
computes its next step (the request decodes in that step).

**The charge.** In the lockstep step each rank computes its share and the
barrier waits for the slowest: the paper's ``dt = C + t_l max_g L_g`` is
``C + max_g t_l L_g`` (share ``t_l L_g``), the calibrated ``dt = max_g
rank_cost(L_g, n_g, 0) + beta max_g n_g + comm`` (share ``rank_cost``,
:func:`bfio.engine.step_time.rank_cost`). A transfer lengthens its destination's share:
the step lasts ``dt + max(0, max_g (share_g + X_g) - max_g share_g)``. A
transfer into a lightly loaded rank is hidden by its slack behind the slowest
rank; one longer than that slack holds every rank at the barrier. Loads are the
step's own (before its tokens), as ``dt`` reads them. With the prefill model
(``prefill.py``'s step): the paper's ``dt = C + t_l max_g L_g + token_s max_g
P_g`` is a sum of two maxima, a decode phase and a prefill phase each waiting
for its slowest rank; the KV must be resident before its rank decodes, so it
lengthens the decode phase: share ``t_l L_g`` as without prefill (``L_g`` the
resident tokens). The calibrated ``dt = max_g rank_cost(L_g, n_g, P_g) + beta
max_g n_g + comm`` (:func:`bfio.engine.step_time.lockstep_prefill_dt`) has one maximum:
share ``rank_cost(L_g, n_g, P_g)``, ``n_g`` the rank's requests whose prefill is
done (they decode) and ``P_g`` its chunk of the step
(:func:`bfio.engine.prefill.allot_chunks`, as the step computes it). The extra seconds
are added to that step's ``dt`` and clock (its row of the per-step series, its
energy at the step's power, the completions and, with the prefill model, the
first tokens in it) and counted (``migration_transfer_wait_s``). Transfers are serial per rank (one link each);
the source's sending is not charged (it has already dropped the request), nor a
transfer's overlap with the steps before the request is seated.

Defaults and their sources: ``transfer_gbps`` = 400, one NDR InfiniBand or
400GbE port (NVIDIA ConnectX-7), the link issue 45 names; ``kv_bytes_per_token``
= 524,288 (512 KiB), Llama-2-7B's fp16 KV cache: 2 (K and V) x 32 layers x 4,096
hidden (32 KV heads x 128) x 2 bytes (its ``config.json``: ``num_hidden_layers``
32, ``hidden_size`` 4096, ``num_key_value_heads`` 32), the model of the project's
calibrated step.
"""

from __future__ import annotations

import numpy as np

from bfio.engine.kernels import S_CLOCK, S_DT, S_E_POST, S_E_PRE, S_PMEAN_POST, S_PMEAN_PRE
from bfio.engine.prefill import allot_chunks
from bfio.sim.state import ClusterState
from bfio.engine.step_time import rank_costs

#: one 400 Gb/s link per rank (NDR InfiniBand / 400GbE, NVIDIA ConnectX-7)
DEFAULT_TRANSFER_GBPS = 400.0
#: Llama-2-7B's fp16 KV cache per token: 2 x 32 layers x 4,096 x 2 bytes (512 KiB)
DEFAULT_KV_BYTES_PER_TOKEN = 2 * 32 * 4096 * 2


class KvTransfer:
    """The transfers of one run: per rank the seconds it receives before its next
    step (``pending``), and the totals."""

    def __init__(self, workers: int, gbps: float, bytes_per_token: int):
        self.bytes_per_s = float(gbps) * 1e9 / 8.0
        self.bytes_per_token = int(bytes_per_token)
        self.pending = np.zeros(workers)
        self.count = 0
        self.tokens = 0
        self.seconds = 0.0
        self.waited = 0.0

    def seconds_of(self, tokens: np.ndarray) -> np.ndarray:
        """``X_i``: the seconds ``tokens`` KV tokens take over one link."""
        return tokens * float(self.bytes_per_token) / self.bytes_per_s

    def arrive(self, ranks: np.ndarray, tokens: np.ndarray) -> None:
        """Requests of ``tokens`` KV tokens were seated on ``ranks``: their transfers
        are charged to those ranks' next step."""
        x = self.seconds_of(tokens.astype(np.float64))
        np.add.at(self.pending, ranks, x)
        self.count += int(tokens.shape[0])
        self.tokens += int(tokens.sum())
        self.seconds += float(x.sum())

    def charge(self, shares: np.ndarray) -> float:
        """The seconds a step with the ranks' ``shares`` lasts longer for the pending
        transfers (module docstring); the transfers are then done."""
        extra = max(0.0, float(np.max(shares + self.pending) - np.max(shares)))
        self.pending[:] = 0.0
        self.waited += extra
        return extra

    def metrics(self) -> dict:
        return {"migration_transfers": int(self.count), "migration_transfer_tokens": int(self.tokens),
                "migration_transfer_s": float(self.seconds), "migration_transfer_wait_s": float(self.waited)}


class TransferEngine:
    """A step engine (:mod:`bfio.sim.engine`) whose next step after a transfer
    arrived is charged its time (module docstring); otherwise its ``inner`` engine,
    whose records (``series``, ``t_l``, ...) are its own."""

    def __init__(self, inner, transfer: KvTransfer):
        self.inner = inner
        self.transfer = transfer

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self, state: ClusterState, until: float) -> int:
        """As the inner engine's ``run``; with transfers pending, one step, charged."""
        if not self.transfer.pending.any():
            return self.inner.run(state, until)
        shares = self.shares(state)
        before = state.finished
        done = self.inner.run(state, -np.inf)  # one step
        extra = self.transfer.charge(shares)
        if extra > 0.0:
            self._delay(state, before, extra)
        return done

    def shares(self, state: ClusterState) -> np.ndarray:
        """Each rank's share of the coming step (module docstring): ``t_l L_g``, or the
        calibrated ``rank_cost(L_g, n_g, 0)``, with the prefill model
        ``rank_cost(L_g, n_g, P_g)`` (:func:`calibrated_batch`)."""
        coef = self.inner.step_coef
        if coef.shape[0] == 0:
            return self.inner.t_l * state.loads.astype(np.float64)
        n, p = step_batch(getattr(self.inner, "prefill", None), state)
        return rank_costs(coef, state.loads.astype(np.float64), n.astype(np.float64), p.astype(np.float64),
                          np.empty(state.workers))

    def _delay(self, state: ClusterState, before: int, extra: float) -> None:
        """The last step lasted ``extra`` seconds more: its row (clock, ``dt``, energy at
        its power), the clock and the requests that finished in it."""
        buf, r = self.inner.series.buf, self.inner.series.n - 1
        end = state.clock  # the step's end before the charge
        buf[S_CLOCK, r] += extra
        buf[S_DT, r] += extra
        buf[S_E_POST, r] = buf[S_PMEAN_POST, r] * state.workers * buf[S_DT, r]
        buf[S_E_PRE, r] = buf[S_PMEAN_PRE, r] * state.workers * buf[S_DT, r]
        state.clock += extra
        state.finish[state.completed[before:state.finished]] += extra
        prefill = getattr(self.inner, "prefill", None)
        if prefill is not None:  # first tokens of the step: prompts whose prefill ended in it (prefill.step)
            ended = prefill.prefilled[:prefill.ended]
            first = prefill.first_token
            ended = ended[first[ended] == end]
            first[ended] += extra


def step_batch(prefill, state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the ``n_g`` decoding requests and ``P_g`` prefill tokens of the coming
    step that a rank's calibrated share reads: without the prefill model every
    running request decodes and nothing prefills, with it :func:`calibrated_batch`."""
    if prefill is None:
        return state.active, np.zeros(state.workers, dtype=np.int64)
    return calibrated_batch(prefill, state.slot_request)


def share_offsets(coef: np.ndarray, prefill, state: ClusterState) -> np.ndarray:
    """``(3, G)``: per rank what its share of the coming step holds beyond ``t_l L_g``
    (:meth:`TransferEngine.shares`: ``rank_cost(L_g, n_g, P_g) = a_kv L_g + rank_cost(0,
    n_g, P_g)``, ``t_l = a_kv``), with one decoding request less (row 0: a migrated
    request's source), as now (row 1) and one more (row 2: its destination); the
    migrated request counted as decoding. Zeros with the paper's step (empty
    ``coef``: its share is ``t_l L_g``). What BF-IO's planner adds to its transfer
    cost's shares (:class:`bfio.solvers.migration_plan.MigrationCost`)."""
    G = state.workers
    out = np.zeros((3, G))
    if coef.shape[0] == 0:
        return out
    n, p = step_batch(prefill, state)
    zero, p = np.zeros(G), p.astype(np.float64)
    for row, delta in enumerate((-1, 0, 1)):
        rank_costs(coef, zero, np.maximum(n.astype(np.int64) + delta, 0).astype(np.float64), p, out[row])
    return out


def calibrated_batch(prefill, slot_request: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the requests that decode in the coming step (their prefill done) and
    the prefill tokens it computes (its chunk, :func:`bfio.engine.prefill.allot_chunks` as
    the step allots it): the ``n_g`` and ``P_g`` that
    :func:`bfio.engine.step_time.lockstep_prefill_dt` reads."""
    take = np.zeros_like(prefill.take)
    allot_chunks(slot_request, prefill.left, prefill.order, prefill.model.chunk_tokens, prefill.model.request_chunk,
                 take)
    busy = slot_request >= 0
    done = busy & (prefill.left[np.where(busy, slot_request, 0)] == 0)
    return done.sum(axis=1), take.sum(axis=1)
