"""Pausing ranks' admissions (issue 45, second action): with instant dispatch a
*paused* rank admits nothing from its queue for ``k`` steps (routing calls at
steps ``t .. t + k - 1``; a pause lapses while the whole cluster is idle, where
no step would end it). A part of the simulator (``docs/architecture.md``),
chosen by ``simulate(rank_pause=..., rank_pause_options=...)``
(``RunSpec.rank_pause``, CLI ``--rank-pause``, ``--rank-pause-option
KEY=VALUE``), off (``none``) by default; instant dispatch only (a rank's
admissions are its own queue's).

:meth:`bfio.sim.dispatch.InstantDispatch.routing_call` runs the rule first
(after preemption): :meth:`RankPause.run` may pause ranks
(:meth:`RankPause.pause_rank`), pause running requests
(:meth:`bfio.sim.dispatch.InstantDispatch.pause_request`) and admit queued
ones (:meth:`~bfio.sim.dispatch.InstantDispatch.admit_ids`); the dispatch's
``admit`` then leaves paused ranks out. Counted: ``rank_pauses``,
``paused_rank_steps`` (the engine steps its pauses cover, within the run),
``request_pauses``, ``paused_requests`` and, per request, the ``pauses``
column. A paused running request leaves its slot and its rank's load, keeps its
generated tokens and its KV (no recompute: without the prefill model no memory
is modelled, with it the rule is refused), waits at the head of its rank's queue
and, when admitted again, adds ``s_i + tau_i`` back; its start stays its first
admission's. It is never moved to another rank (:mod:`bfio.sim.moves`).

Rules (``RULES``):

- ``dyntra_lb``: DyntraLB, vllm-project/vllm-ascend PR #12292 (merged
  2026-08-12, commit ``ffa55704fb``; read at snapshot ``182b75ea84``:
  ``vllm_ascend/patch/platform/patch_dyntra_lb_core.py``
  ``DyntraLBDPEngineCoreProc.run_balance_load``/``_do_lb_allgather``/``add_request``,
  ``vllm_ascend/core/dyntra_lb_scheduler.py``
  ``DyntraLBPolicyMixin._apply_load_balance_modifications``/``_lb_pause_request``/
  ``_can_admit_waiting_request``, defaults in ``vllm_ascend/ascend_config.py``
  ``DyntraLBConfig``, ``docs/source/user_guide/feature_guide/dyntra_lb.md``).
  **Signal**: per DP rank the KV-block counts ``ceil((s_i + tau_i) / block)``
  of its running requests and of its admissible waiting ones (at most ``2 B -
  running``, queue order), gathered from all ranks after every step. **Plan**
  (:mod:`bfio.sim.dyntra_lb`): fill free slots from the queue heads, then swap
  running and waiting requests on the least and the most loaded rank and pause
  ("drop") running requests of the most loaded one while the bubble ``max -
  mean`` block load is at least ``bubble_threshold`` (5 blocks; below 1 a
  ratio ``(max - mean) / max``). **Applied** in the next step's schedule, here
  in this routing call: ``out`` pauses the first running request (admission
  order) of each planned block count, keeping its KV, at the head of the queue;
  ``in`` admits the first candidate of each planned block count; a rank admits
  nothing else in that step (a request arriving after the snapshot waits), and
  ``freeze`` (nothing planned in) pauses its admissions for one step (``k = 1``;
  a new plan every step). **When**: ``mode`` ``dynamic`` (the default) plans
  only after a request of more than ``long_req_block_threshold`` (700) blocks
  entered, until ``dynamic_max_step`` (256) plans without another; ``static``
  plans every step; both only from step ``start_step`` (250) of a wave (steps
  since the cluster was last idle) to ``end_step`` (-1: no end). ``block_tokens``
  (128) is the attention block size (not in the config: the source reads
  ``cache_config.block_size``; its docs quote 700 blocks as about 89,600 tokens
  at 128). The source's defaults are the defaults here; the PR calls them
  hand-tuned. Counted: a ``freeze`` of a rank with a free slot is a rank pause
  (a full rank's withholds nothing); ``dyntra_lb_plans``, the steps with a plan.
  Not modelled: P/D disaggregation (every queued request's KV counts as
  arrived), the order vLLM's skipped-waiting queue gives requests a plan did not
  admit (the queue stays FIFO), the one-step lag of the async scheduler. The
  planner itself is the source's, step for step (its ties and its list
  semantics; ``tests/test_rank_pause.py`` holds the source's unit-test cases).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.sim.dyntra_lb import balance_load, plan_requests, rank_rows
from bfio.sim.rule_options import checked_rule, out_of_range
from bfio.sim.state import ClusterState, FirstStarts

#: DyntraLB's options and their defaults (``DyntraLBConfig``; ``block_tokens``: the block size)
DYNTRA_DEFAULTS = {"mode": "dynamic", "start_step": 250, "end_step": -1, "bubble_threshold": 5.0,
                   "long_req_block_threshold": 700, "dynamic_max_step": 256, "block_tokens": 128}
#: the planner's rounds per plan (``_balance_load``'s ``max_iters``)
DYNTRA_MAX_ITERS = 1000


class RankPause:
    """The pauses of one run: per rank the step from which it admits again
    (``until``), the counted pauses and the steps they cover; per request its
    pauses (``times``). :meth:`run` is the rule."""

    name = "none"
    #: the rule's options and defaults (the registry of its option names)
    defaults: dict = {}

    def __init__(self, state: ClusterState, policy, options: dict | None = None):
        G, N = state.workers, state.requests
        self.policy = policy
        self.options = {**self.defaults, **(options or {})}
        self.until = np.zeros(G, dtype=np.int64)
        self._counted_until = np.zeros(G, dtype=np.int64)
        self.count = 0
        self.rank_steps = 0
        self.times = np.zeros(N, dtype=np.int64)
        self.request_count = 0
        self.order = np.zeros(N, dtype=np.int64)  # admission order: a rank's running order
        self._admissions = 0
        self.first = FirstStarts(N)

    def run(self, dispatch) -> int:
        """The rule's actions at the start of a routing call; returns the admissions it made."""
        raise NotImplementedError

    def quiet(self) -> bool:
        """Whether the rule does nothing in routing calls while nothing waits (the loop
        may then run steps without them)."""
        return True

    def entered(self, new: np.ndarray, state: ClusterState) -> None:
        """Requests ``new`` were bound to queues (rules that watch arrivals)."""

    def pause_rank(self, g, steps: int, step: int, counted=True) -> None:
        """Rank ``g`` (or each of the distinct ranks of an array ``g``) admits nothing in
        routing calls at steps ``step .. step + steps - 1``; ``counted`` (for every rank
        or per rank): a pause of the metrics (else a rule's closing of a rank)."""
        g = np.atleast_1d(np.asarray(g, dtype=np.int64))
        end = step + int(steps)
        self.until[g] = np.maximum(self.until[g], end)
        c = g[np.broadcast_to(np.asarray(counted, dtype=bool), g.shape)]
        if c.size:
            self.count += int(c.size)
            self.rank_steps += int(np.maximum(0, end - np.maximum(self._counted_until[c], step)).sum())
            self._counted_until[c] = np.maximum(self._counted_until[c], end)

    def closed(self, state: ClusterState) -> np.ndarray:
        """The ranks that admit nothing now (none while the whole cluster is idle)."""
        if not state.active.any():
            return np.zeros(state.workers, dtype=bool)
        return self.until > state.step

    def paused(self, i: int, state: ClusterState) -> None:
        """Running request ``i`` was paused (:meth:`bfio.sim.dispatch.InstantDispatch.pause_request`)."""
        self.first.keep(i, state)
        self.times[i] += 1
        self.request_count += 1

    def admitted(self, ids: np.ndarray, state: ClusterState) -> None:
        """Requests ``ids`` were seated, in this order: a paused one resumes with its
        generated tokens' load and the start of its first admission."""
        self.order[ids] = self._admissions + np.arange(ids.shape[0])
        self._admissions += int(ids.shape[0])
        back = ids[self.times[ids] > 0]
        if back.size:
            np.add.at(state.loads, state.worker_of[back], state.generated[back])
            self.first.restore(back, state)

    def metrics(self, state: ClusterState) -> dict:
        over = int(np.maximum(self._counted_until - state.step, 0).sum())  # pauses outliving the run
        return {"rank_pauses": int(self.count), "paused_rank_steps": int(self.rank_steps - over),
                "request_pauses": int(self.request_count), "paused_requests": int((self.times > 0).sum())}


class DyntraLbPause(RankPause):
    """DyntraLB (vllm-ascend PR #12292), module docstring."""

    name = "dyntra_lb"
    defaults = DYNTRA_DEFAULTS
    summary = "vllm-ascend PR #12292's DyntraLB: a per-step plan over the ranks' KV-block counts; docs/online.md"

    def __init__(self, state: ClusterState, policy, options: dict | None = None):
        super().__init__(state, policy, options)
        o = self.options
        self.static = o["mode"] == "static"
        self.enabled = False  # dynamic mode: a long request switched the planner on
        self.pending = False  # a long request entered since the last plan
        self.idle_plans = 0  # dynamic mode: plans since the last long request
        self.wave = 0  # the step at which the cluster was last idle
        self.plans = 0
        self._rows = None  # the planner's arrays (plan)

    def quiet(self) -> bool:
        return not (self.static or self.enabled or self.pending)

    def entered(self, new: np.ndarray, state: ClusterState) -> None:
        if not self.static and new.size and (self._blocks(new, state) > self.options["long_req_block_threshold"]).any():
            self.pending = True

    def _blocks(self, ids: np.ndarray, state: ClusterState) -> np.ndarray:
        """:func:`bfio.sim.dyntra_lb.kv_blocks` of each request's ``s_i + tau_i``, in NumPy (the
        kernel's formula: a numba call here would compile an array specialization at run time)."""
        b = self.options["block_tokens"]
        return (state.workload.prefill[ids] + state.generated[ids] + b - 1) // b

    def run(self, dispatch) -> int:
        """``run_balance_load``: the wave's step counter, dynamic mode's switch, then
        the plan (:meth:`plan`) when active; returns its admissions."""
        st, o = dispatch.state, self.options
        if not st.active.any() and dispatch.queued == 0:
            self.wave = st.step  # no rank has a request: a new wave, no plan
            return 0
        switched = False
        if not self.static and not self.enabled:
            if self.pending:
                self.enabled, self.idle_plans, switched = True, 0, True
            self.pending = False
        since = st.step - self.wave
        if not ((self.static or self.enabled) and since >= o["start_step"]
                and (o["end_step"] < 0 or since < o["end_step"])):
            return 0
        fresh, self.pending = self.pending, False
        n = self.plan(dispatch)
        if self.enabled:
            if switched or fresh:
                self.idle_plans = 0
            else:
                self.idle_plans += 1
                if self.idle_plans >= o["dynamic_max_step"]:
                    self.enabled = False
        return n

    def plan(self, dispatch) -> int:
        """One plan (:func:`bfio.sim.dyntra_lb.balance_load` on the ranks' block
        counts) applied: pauses, planned admissions, every rank closed for the rest
        of the call and a frozen rank with a free slot counted as paused."""
        st = dispatch.state
        G, B = st.workers, st.slots
        if self._rows is None:  # the kernels read only the prefixes they (or rank_rows) wrote: kept across plans
            M = max(2 * B, 1)
            K = 2 * DYNTRA_MAX_ITERS + M + 1
            self._rows = ([np.zeros((G, M), np.int64) for _ in range(4)] + [np.zeros(G, np.int64) for _ in range(4)]
                          + [np.zeros((G, K), np.int64) for _ in range(2)] + [np.zeros(G, np.bool_)]
                          + [np.zeros(G * M, np.int64) for _ in range(2)])
        run_ids, run_b, wait_ids, wait_b, n_run, n_wait, n_out, n_in, out_b, in_b, freeze, paused, admit = self._rows
        rank_rows(st.slot_request, self.order, st.workload.prefill, st.generated, dispatch.head, dispatch.next,
                  dispatch.length, self.options["block_tokens"], run_ids, run_b, n_run, wait_ids, wait_b, n_wait)
        balance_load(run_b, n_run, wait_b, n_wait, B, DYNTRA_MAX_ITERS, float(self.options["bubble_threshold"]),
                     out_b, n_out, in_b, n_in, freeze)
        self.plans += 1
        p, a = plan_requests(run_ids, run_b, n_run, wait_ids, wait_b, n_wait, out_b, n_out, in_b, n_in, freeze,
                             paused, admit)
        for i in paused[:p].tolist():
            dispatch.pause_request(i)
            self.paused(i, st)
        n = dispatch.admit_ids(admit[:a].copy())
        self.pause_rank(np.arange(G), 1, st.step, counted=freeze & (st.active < B))
        return n

    def metrics(self, state: ClusterState) -> dict:
        return {**super().metrics(state), "dyntra_lb_plans": int(self.plans)}


RULES = {"dyntra_lb": DyntraLbPause}
RANK_PAUSES = ("none", *RULES)


def check_dyntra_options(o: dict) -> None:
    """DyntraLB's options within the ranges its config accepts (``DyntraLBConfig``)."""
    def bad(key, must):
        out_of_range("rank_pause_options", "dyntra_lb", key, o[key], must)

    if o["mode"] not in ("static", "dynamic"):
        bad("mode", "'static' or 'dynamic'")
    if o["start_step"] < 0:
        bad("start_step", ">= 0")
    if o["end_step"] != -1 and o["end_step"] <= o["start_step"]:
        bad("end_step", f"-1 or greater than start_step ({o['start_step']})")
    for key in ("bubble_threshold", "long_req_block_threshold", "dynamic_max_step", "block_tokens"):
        if o[key] <= 0:
            bad(key, "> 0")


def check_rank_pause(rank_pause, options, dispatch: str, prefill, barrier: str) -> tuple[str, dict]:
    """``rank_pause`` and its options checked against the run: a known rule, its
    known options in range, instant dispatch, and for ``dyntra_lb`` neither the
    prefill model nor independent ranks. Returns the rule and its full options."""
    rank_pause, full = checked_rule("rank_pause", rank_pause, RULES, options, dispatch, "pause",
                                    "pauses ranks' admissions from their own queues")
    if rank_pause == "dyntra_lb":
        check_dyntra_options(full)
        if prefill is not None:
            raise ConfigError("rank_pause: 'dyntra_lb' pauses running requests that keep their KV cache, which the "
                              "prefill model's KV accounting does not hold (run it without prefill=...)")
        if barrier == "independent":
            raise ConfigError("rank_pause: 'dyntra_lb' evens out the ranks of a lockstep barrier; "
                              "step_model.barrier 'independent' has none")
    return rank_pause, full


def make_pause(rank_pause: str, options: dict, state: ClusterState, policy) -> RankPause | None:
    """The pause part of a run (``None``: no pauses, the loop as before)."""
    if rank_pause == "none":
        return None
    return RULES[rank_pause](state, policy, options)
