"""The KV of a migrated request (issue 45, third action, option ``kv`` of every
migration rule, :mod:`bfio.sim.migration`): how it reaches the new rank, what
that costs BF-IO's planner, and the counts.

- ``recompute`` (the default; ROLL's way): its KV is freed on the source and its
  prompt and the tokens it had generated go through the prefill model on its new
  rank, as a preempted request's do (:meth:`bfio.engine.prefill.Prefill.evict`, its
  ``_readmitted``: less the new rank's prefix-cache hit); needs the prefill
  model (refused by name without it: the paper's step has no prefill to
  charge). Counted: ``migration_recomputes``, ``migration_recomputed_tokens``.
- ``transfer``: its KV crosses a link of ``transfer_gbps`` at
  ``kv_bytes_per_token``, charged to the new rank's next step, the lockstep
  barrier waiting for it (:mod:`bfio.sim.transfer`). Without the prefill model
  its ``s_i + tau_i`` tokens are sent; with it its resident ones, ``s_i + tau_i -
  left_i`` (:meth:`bfio.engine.prefill.Prefill.hand_over`): on arrival they are resident
  at once, nothing is recomputed, its prompt needs no prefill there (only what
  it had still to compute, ``left_i``, 0 once its prefill is done) and its
  prefix-cache hit stays its first admission's (:mod:`bfio.engine.prefill_resume`).
  Counted: ``migration_transfers``, ``migration_transfer_tokens``,
  ``migration_transfer_s``, ``migration_transfer_wait_s`` (what the barrier waited).
- A migrated request that held no KV when it left (seated, nothing of its prompt
  computed or cached: it had still all its prefill to do) is neither: nothing is
  sent or recomputed, its prompt is computed on its new rank as it would have
  been on its old one. Counted: ``migration_free``, not among the recomputes or
  the transfers.
- ``choose`` (rule ``bfio`` with the prefill model; refused by name otherwise:
  ROLL's rule weighs no cost, and without the prefill model there is no
  recompute to weigh): BF-IO's planner costs each migration both ways in its
  objective's units (:meth:`KvWay.cost_model`: a recompute's tokens at the seconds
  the run's step charges for them, :meth:`KvWay.prefill_seconds`, a transfer's
  seconds beyond the destination's slack) and takes the cheaper, per migrated request and destination
  (:func:`bfio.solvers.migration_plan.kv_cost`, ties to the transfer); counted as
  both ways are.
"""

from __future__ import annotations

import numpy as np

from bfio.engine.kernels import queue_room
from bfio.engine.step_time import prefill_cost, prefill_vector
from bfio.policies.names import KV_WAYS
from bfio.sim.migration_screen import slack_seconds
from bfio.sim.state import ClusterState
from bfio.sim.transfer import DEFAULT_KV_BYTES_PER_TOKEN, DEFAULT_TRANSFER_GBPS, KvTransfer, share_offsets
from bfio.solvers.migration_plan import MigrationCost

#: how a migrated request's KV reaches its new rank (module docstring; the registry
#: of their names is :data:`bfio.policies.names.KV_WAYS`, the default first)
KV_MODES = KV_WAYS
#: the options of every migration rule: the KV's way and the link of ``transfer``
KV_DEFAULTS = {"kv": KV_WAYS[0], "transfer_gbps": DEFAULT_TRANSFER_GBPS,
               "kv_bytes_per_token": DEFAULT_KV_BYTES_PER_TOKEN}


def seat_room(dispatch) -> tuple[np.ndarray, float]:
    """Per rank, the KV tokens a request joining the tail of its queue may take and
    still be seated at once, as admission seats (:func:`bfio.engine.kernels.admit_queues`,
    :meth:`bfio.sim.dispatch.InstantDispatch.admission_memory`: the queued requests
    ahead take theirs first, each seated request keeps ``growth`` more, an idle rank
    seats anything): ``inf`` on a rank idle with an empty queue or without a KV bound,
    ``-inf`` where a queued request already waits for memory; and ``growth``. BF-IO's
    planner migrates a request only where it is seated at once (issue 45): a rank with
    a free slot and no room would keep it waiting, its KV charged when it is seated.
    The walk and the rule are admission's own (:func:`bfio.engine.kernels.queue_room`,
    :func:`bfio.engine.kernels.kv_admits`)."""
    st = dispatch.state
    if not dispatch.kv_cap:
        return np.full(st.workers, np.inf), 0.0
    committed, need, growth = dispatch.admission_memory()
    room = queue_room(dispatch.head, dispatch.next, st.active, np.asarray(committed, dtype=np.float64), need,
                      float(growth), float(dispatch.kv_cap), np.empty(st.workers))
    return room, float(growth)


class KvWay:
    """The KV's way of one run's migrations: ``transfer`` (a
    :class:`~bfio.sim.transfer.KvTransfer`, or ``None`` with ``recompute``), per
    request whether its last migration sent its KV (``sent``) and how many tokens
    (``sent_tokens``), and the recompute counts."""

    def __init__(self, state: ClusterState, prefill, options: dict):
        N = state.requests
        self.mode = options["kv"]
        self.prefill = prefill
        self.state = state
        self.transfer = None
        if self.mode != "recompute":
            self.transfer = KvTransfer(state.workers, options["transfer_gbps"], options["kv_bytes_per_token"])
            if prefill is not None:
                prefill.track_received()
        if self.mode != "transfer" and prefill is not None:
            prefill.track_resumes()
        #: the run's step as it prices a rank's prefill tokens (:func:`prefill_cost`), and its
        #: calibrated coefficients (empty: the paper's step; a transfer's shares, :func:`share_offsets`)
        self.prefill_coef = None if prefill is None else prefill_vector(state.step_costs, prefill.model.token_s)
        self.step_coef = np.zeros(0) if state.step_costs is None else np.asarray(state.step_costs.array())
        self.sent = np.zeros(N, dtype=bool)
        self.sent_tokens = np.zeros(N, dtype=np.int64)
        self.held = np.zeros(N, dtype=bool)  # per request, whether it held KV when it last left
        self.recomputes = 0
        self.recomputed_tokens = 0
        self.free = 0

    def left(self, dispatch, i: int, dst: int, sent: bool | None) -> None:
        """Running request ``i`` leaves for rank ``dst``'s queue
        (:meth:`bfio.sim.dispatch.InstantDispatch.migrate`), its KV sent (``sent``;
        ``None``: the rule's way, ``transfer`` or ``recompute``)."""
        sent = self.mode == "transfer" if sent is None else bool(sent)
        self.held[i] = self.prefill is None or \
            int(self.prefill.sent_tokens(np.array([i]), self.state.generated)[0]) > 0
        self.sent_tokens[i] = dispatch.migrate(i, dst, sent)
        self.sent[i] = sent

    def arrived(self, back: np.ndarray, state: ClusterState) -> None:
        """Migrated requests ``back`` were seated: a recomputed one's tokens to compute
        are counted (the prefill model has set them), a sent one's KV is resident (with
        the prefill model :meth:`bfio.engine.prefill.Prefill.admitted` has made it so; without
        it its generated tokens join the ``s_i`` it was seated with) and its transfer
        is charged to its rank's next step."""
        sent, held = self.sent[back], self.held[back]
        self.free += int((~held).sum())
        again = back[~sent & held]
        if again.size:
            self.recomputes += int(again.shape[0])
            self.recomputed_tokens += int(self.prefill.left[again].sum())
        got = back[sent & held]
        if got.size:
            ranks = state.worker_of[got]
            if self.prefill is None:
                np.add.at(state.loads, ranks, state.generated[got])
            self.transfer.arrive(ranks, self.sent_tokens[got])

    def stall_floor(self, dispatch, size: np.ndarray, generated: np.ndarray | None, sent: np.ndarray | None,
                    t_l: float, transfer: np.ndarray | None = None) -> np.ndarray:
        """A lower bound of the seconds the barrier waits for each running request's KV
        (sizes ``size``, generated ``generated``, tokens a transfer sends ``sent``,
        ``None``: ``size``) over the destinations (:meth:`bfio.sim.migration.BfioMigration.floor`):
        the smaller of :meth:`recompute_floor` and :meth:`transfer_floor` (``transfer``:
        the latter already computed in this state, else computed here)."""
        if transfer is None:
            transfer = self.transfer_floor(dispatch, size, sent, t_l)
        if self.mode == "transfer":  # the recompute's floor is inf: min(inf, x) is x
            return transfer
        return np.minimum(self.recompute_floor(size, generated), transfer)

    def recompute_floor(self, size: np.ndarray, generated: np.ndarray | None) -> np.ndarray:
        """A recompute's seconds at least (``inf`` with ``transfer``): its ``size`` tokens at
        :meth:`prefill_seconds`, or with prefix caches ``generated + 1`` (a hit on some rank may
        spare all its prompt but the last token; :meth:`cached_floor` reads the
        ranks' caches)."""
        if self.mode == "transfer":
            return np.full(np.shape(size), np.inf)
        cached = self.prefill.caches is not None
        return self.prefill_seconds((generated + 1.0) if cached else size)

    def transfer_floor(self, dispatch, size: np.ndarray, sent: np.ndarray | None, t_l: float,
                       offsets: np.ndarray | None = None) -> np.ndarray:
        """A transfer's charge at least (``inf`` with ``recompute``): ``max(0, X_i -
        t_l (M - m) - spread - max_g pending_g)`` (:meth:`bfio.sim.migration.BfioMigration.floor`;
        ``spread`` the range of the shares' parts beyond ``t_l L_g``, :func:`share_offsets`,
        0 with the paper's step; ``offsets``: those parts already computed in this state,
        else computed here)."""
        if self.transfer is None:
            return np.full(np.shape(size), np.inf)
        x = self.transfer.seconds_of(size if sent is None else sent)
        return np.maximum(0.0, x - self.transfer_slack(dispatch, t_l, offsets))

    def transfer_slack(self, dispatch, t_l: float, offsets: np.ndarray | None = None) -> float:
        """What :meth:`transfer_floor` takes off a transfer's seconds: ``t_l (M - m) +
        spread + max_g pending_g`` (``offsets``: :meth:`share_offsets` already computed
        in this state, else computed here)."""
        if offsets is None:
            offsets = self.share_offsets()
        return slack_seconds(dispatch.state.loads, dispatch.tokens, offsets, self.transfer.pending, t_l)

    def cached_floor(self, ids: np.ndarray) -> np.ndarray:
        """Per running request of ``ids``, a recompute's seconds on the rank that would
        compute the fewest of its tokens, its own rank left out (a migration leaves
        it): :meth:`bfio.engine.prefill.Prefill.resume_tokens`, the formula the planner's
        cost and the simulator's charge read, at :meth:`prefill_seconds`. Exact where
        :meth:`recompute_floor` assumes a hit: what the ranks' caches hold now."""
        tokens = self.prefill.resume_tokens_of(ids, self.state.generated).astype(np.float64)
        tokens[np.arange(ids.shape[0]), self.state.worker_of[ids]] = np.inf
        return self.prefill_seconds(tokens.min(axis=1))

    def prefill_seconds(self, tokens) -> np.ndarray:
        """The seconds computing ``tokens`` (per entry, any shape) prompt tokens of one
        request adds to its rank's share of the steps, as the run's step charges them
        (:func:`bfio.engine.step_time.prefill_cost`: the paper's ``token_s`` a token, or
        the calibrated step's ``a_p`` a token and ``a_p2`` a chunk's square, chunks of
        the prefill model's ``request_chunk``): a recompute's cost, and the prefill a
        transferred request has left."""
        t = np.array(tokens, dtype=np.float64)
        flat = np.ascontiguousarray(t.reshape(-1))
        out = np.empty_like(flat)
        prefill_cost(self.prefill_coef, flat, float(self.prefill.model.request_chunk), out)
        return out.reshape(t.shape)

    def cost_model(self, t_l: float, w: float, offsets: np.ndarray | None = None, room: np.ndarray | None = None,
                   growth: float = 0.0) -> MigrationCost:
        """:meth:`bfio.sim.migration.BfioMigration.cost_model` (its docstring): the
        recompute's fixed part, the transfer's link and the tokens it sends, and
        whether the planner chooses between them (``offsets``: :meth:`share_offsets`
        already computed in this state, else computed here; ``room``, ``growth``: the
        seat check's, :func:`seat_room`)."""
        G, fixed, sent = self.state.workers, None, None
        if self.mode != "transfer":
            prefill, generated, seconds = self.prefill, self.state.generated, self.prefill_seconds

            def fixed(ids: np.ndarray) -> np.ndarray:
                tokens = prefill.resume_tokens_of(ids, generated).astype(np.float64)
                return w * G * seconds(tokens.reshape(len(ids), G)) / t_l

            if self.mode == "recompute":
                return MigrationCost(fixed=fixed, room=room, growth=growth)
        rest = None
        if self.prefill is not None:
            prefill, generated, seconds = self.prefill, self.state.generated, self.prefill_seconds

            def sent(ids: np.ndarray) -> np.ndarray:
                return prefill.sent_tokens(np.asarray(ids, dtype=np.int64), generated).astype(np.float64)

            def rest(ids: np.ndarray) -> np.ndarray:
                return w * G * seconds(prefill.left[np.asarray(ids, dtype=np.int64)]) / t_l

        return MigrationCost(fixed=fixed, seconds=self.transfer.seconds_of, pending=self.transfer.pending, weight=w,
                             token_latency_s=t_l, sent_tokens=sent, transfer_fixed=rest, choose=self.mode == "choose",
                             share_offsets=self.share_offsets() if offsets is None else offsets,
                             share_loads=self.state.loads.astype(np.float64), room=room, growth=growth)

    def share_offsets(self) -> np.ndarray:
        """The ranks' shares of the coming step beyond ``t_l L_g`` (:func:`bfio.sim.transfer.share_offsets`)."""
        return share_offsets(self.step_coef, self.prefill, self.state)

    def metrics(self) -> dict:
        out = {"migration_free": int(self.free)}
        if self.mode != "transfer":
            out["migration_recomputes"] = int(self.recomputes)
            out["migration_recomputed_tokens"] = int(self.recomputed_tokens)
        if self.transfer is not None:
            out.update(self.transfer.metrics())
        return out
