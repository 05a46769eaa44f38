"""Step engines: what one step of the step loop does to the cluster (Section 3;
the time and power model of Section 6.2).

- :class:`DecodeEngine`, the paper's: every active request generates a token and
  the step lasts ``dt = C + t_l max_g L_g``; while no routing call can change
  anything (up to the entry's ``quiet_until``) the steps run in one kernel call
  (:func:`bfio.engine.kernels.run_steps`, "fast forward"), with the same records as one
  step at a time;
- :class:`PrefillEngine` (issue 32, :mod:`bfio.engine.prefill`): chunked prefill in the
  step and per-rank prefix caches; one step per call (a prefill's end feeds the
  caches);
- :class:`IndependentEngine` (issue 44, ``barrier: independent``): no barrier,
  each rank its own clock (the calibrated step model), decode only;
  :class:`IndependentPrefillEngine` the same with chunked prefill
  (:mod:`bfio.sim.rank_steps`).

With the calibrated step model (issue 44, :mod:`bfio.step_model`,
``docs/step_model.md``) both take its coefficients (``step_coef``) and the
kernels compute ``dt = max_g [alpha + a_kv L_g + a_n n_g + a_p P_g + a_p2 P_g^2]
+ beta max_g n_g + comm`` (:mod:`bfio.engine.step_time`) instead of the paper's; an
empty vector (the default) is the paper's ``dt``, the same float operations as
before. The power model is the paper's on either ``dt``.

Both write one row per step into their :class:`~bfio.engine.simulation_result.StepSeries`.
Their kernels retire finished requests and sum the loads in two scans written
alike (:func:`bfio.engine.kernels.advance_step`, :func:`bfio.engine.prefill.prefill_step`): a
shared per-slot kernel gave the same numbers but cost 2-10% of the decode
scan, the simulator's hottest loop, so each keeps its own.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.constants import PaperConstants
from bfio.engine.kernels import load_stats, run_steps, write_row
from bfio.engine.prefill import Prefill
from bfio.engine.simulation_result import StepSeries
from bfio.sim.rank_steps import end_rank_steps, start_rank_steps
from bfio.sim.state import ClusterState
from bfio.sim.transfer import KvTransfer, TransferEngine
from bfio.engine.step_time import advance_ranks, independent_dt


class DecodeEngine:
    """The paper's decode-only step (:func:`bfio.engine.kernels.run_steps`)."""

    def __init__(self, constants: PaperConstants, workers: int, slots: int, record_loads: bool,
                 step_coef: np.ndarray | None = None):
        c = constants
        #: the calibrated step model's coefficients (empty: the paper's ``dt``)
        self.step_coef = np.zeros(0) if step_coef is None else np.asarray(step_coef, dtype=np.float64)
        self.overhead = c.overhead(slots)
        self.t_l, self.p_idle, self.p_max, self.gamma = c.token_latency_s, c.p_idle_w, c.p_max_w, c.gamma
        self.record_loads = record_loads
        self.series = StepSeries(workers, record_loads)

    def run(self, state: ClusterState, until: float) -> int:
        """At least one step, more while the clock is below ``until`` and some
        request is active; advances ``state`` and returns the completions."""
        series = self.series
        series.reserve()
        s, o = state.workload.prefill, state.workload.decode
        clock, step, n_done, series.n = run_steps(
            state.slot_request, s, o, state.generated, state.finish, state.finish_step, state.loads, state.active,
            state.completed, state.finished, state.clock, state.step, self.overhead, self.t_l, self.p_idle,
            self.p_max, self.gamma, series.buf, series.n, self.record_loads, series.load_rows, until, self.step_coef)
        return _advance(state, clock, step, n_done)


class PrefillEngine(DecodeEngine):
    """The step with chunked prefill (:meth:`bfio.engine.prefill.Prefill.step`), one step a call."""

    def __init__(self, prefill: Prefill, constants: PaperConstants, workers: int, slots: int, record_loads: bool,
                 step_coef: np.ndarray | None = None):
        super().__init__(constants, workers, slots, record_loads, step_coef)
        self.prefill = prefill

    def run(self, state: ClusterState, until: float) -> int:
        series = self.series
        series.reserve()
        s, o = state.workload.prefill, state.workload.decode
        clock, step, n_done, series.n = self.prefill.step(
            state.slot_request, s, o, state.generated, state.finish, state.finish_step, state.loads, state.active,
            state.completed, state.finished, state.clock, state.step, self.overhead, self.t_l, self.p_idle,
            self.p_max, self.gamma, series, self.record_loads, state.worker_of, self.step_coef)
        return _advance(state, clock, step, n_done)


class IndependentEngine(DecodeEngine):
    """Ranks without a barrier (``barrier: independent``, dense data parallelism:
    vLLM's "Non-MoE DP ranks are completely independent"): each rank steps on its
    own clock, a step of ``independent_dt(L_g, n_g)`` (:mod:`bfio.engine.step_time`)
    from when it starts. A call starts a step on every rank that has requests and
    none under way (its batch: the requests seated now), then ends the step(s)
    that end first: the clock moves there, those ranks' requests generate a
    token (:func:`bfio.engine.step_time.advance_ranks`) and the loop routes. So a
    "step" of the series is such an event: ``dt`` the time since the previous
    one, ``active`` the tokens generated in it, energy ``sum_g P(L_g) dt``.
    Decode only (with the prefill model: :class:`IndependentPrefillEngine`); one event a call."""

    def __init__(self, constants: PaperConstants, workers: int, slots: int, record_loads: bool,
                 step_coef: np.ndarray):
        super().__init__(constants, workers, slots, record_loads, step_coef)
        self.in_step = np.zeros(workers, dtype=np.bool_)
        self.started = np.zeros(workers)
        self.ends = np.full(workers, np.inf)

    def run(self, state: ClusterState, until: float) -> int:
        series = self.series
        series.reserve()
        now = state.clock
        for g in np.flatnonzero(~self.in_step & (state.active > 0)):
            self.in_step[g] = True
            self.started[g] = now
            self.ends[g] = now + independent_dt(self.step_coef, state.loads[g], state.active[g])
        t = float(self.ends[self.in_step].min())
        stepping = self.in_step & (self.ends == t)
        pre = load_stats(state.loads, self.p_idle, self.p_max, self.gamma)
        if self.record_loads:
            series.load_rows[series.n] = state.loads
        step = state.step + 1
        done, tokens = advance_ranks(state.slot_request, state.workload.prefill, state.workload.decode,
                                     state.generated, state.finish, state.finish_step, t, step, state.loads,
                                     state.active, state.completed, state.finished, stepping, self.started,
                                     state.start)
        post = load_stats(state.loads, self.p_idle, self.p_max, self.gamma)
        write_row(series.buf, series.n, t, t - now, tokens, done, state.workers, pre, post)
        series.n += 1
        self.in_step[stepping] = False
        self.ends[stepping] = np.inf
        return _advance(state, t, step, state.finished + done)


class IndependentPrefillEngine(DecodeEngine):
    """Independent ranks with chunked prefill (``barrier: independent`` and a
    :class:`bfio.engine.prefill.PrefillModel`; :mod:`bfio.sim.rank_steps`, which cites
    vLLM's ``run_engine_core``): a call starts a step on every rank that has
    requests and none under way, its chunk and step time fixed then
    (:func:`~bfio.sim.rank_steps.start_rank_steps`), and ends the step(s) that
    end first (:func:`~bfio.sim.rank_steps.end_rank_steps`): the clock moves
    there, TTFT and finish times are read on it, prompts done enter their
    rank's prefix cache, and the loop routes (KV preemption and admission at
    every rank's step end). A row of the series is such an event, as for
    :class:`IndependentEngine`; its ``dt`` is the stepping rank's own step time
    when it started at the previous event (with one rank: the lockstep rows less
    ``comm``), else the time since that event."""

    def __init__(self, prefill: Prefill, constants: PaperConstants, workers: int, slots: int, record_loads: bool,
                 step_coef: np.ndarray):
        super().__init__(constants, workers, slots, record_loads, step_coef)
        self.prefill = prefill
        self.in_step = np.zeros(workers, dtype=np.bool_)
        self.started = np.zeros(workers)
        self.ends = np.full(workers, np.inf)
        self.dts = np.zeros(workers)
        #: per rank the admissions before its step started: its batch is ``order[i] < admitted_by[g]``
        self.admitted_by = np.zeros(workers, dtype=np.int64)
        self.batch_take = np.zeros(prefill.prefill.shape[0], dtype=np.int64)

    def run(self, state: ClusterState, until: float) -> int:
        series, chunked = self.series, self.prefill
        series.reserve()
        now = state.clock
        start_rank_steps(self.step_coef, state.slot_request, chunked.left, chunked.order, chunked.model.chunk_tokens,
                         chunked.model.request_chunk, chunked.take, state.loads, state.active, self.in_step,
                         self.started, self.ends, self.dts, self.admitted_by, self.batch_take, chunked.admissions,
                         now)
        t = float(self.ends[self.in_step].min())
        stepping = self.in_step & (self.ends == t)
        fresh = np.flatnonzero(stepping & (self.started == now))
        dt = float(self.dts[fresh[0]]) if fresh.size else t - now
        pre = load_stats(state.loads, self.p_idle, self.p_max, self.gamma)
        if self.record_loads:
            series.load_rows[series.n] = state.loads
        step = state.step + 1
        done, ended, tokens = end_rank_steps(
            state.slot_request, state.workload.prefill, state.workload.decode, state.generated, chunked.left,
            chunked.order, self.admitted_by, self.batch_take, stepping, state.finish, state.finish_step,
            chunked.first_token, t, step, state.loads, state.active, chunked.reserve, state.completed,
            state.finished, chunked.prefilled)
        post = load_stats(state.loads, self.p_idle, self.p_max, self.gamma)
        write_row(series.buf, series.n, t, dt, tokens, done, state.workers, pre, post)
        series.n += 1
        self.in_step[stepping] = False
        self.ends[stepping] = np.inf
        chunked.stepped(state.active, done, ended, state.worker_of)
        return _advance(state, t, step, state.finished + done)


def _advance(state: ClusterState, clock, step, n_done) -> int:
    """The clock, step and completion count after an engine call; returns the new completions."""
    state.clock, state.step = float(clock), int(step)
    done = int(n_done) - state.finished
    state.finished = int(n_done)
    return done


def make_engine(prefill: Prefill | None, constants: PaperConstants, workers: int, slots: int,
                record_loads: bool, step_coef: np.ndarray | None = None, barrier: str = "lockstep",
                transfer: KvTransfer | None = None) -> DecodeEngine:
    """The step engine of a run: decode only, or with the prefill step model;
    ``step_coef`` the calibrated step model's coefficients (``None``: the paper's ``dt``);
    ``barrier`` ``independent`` (calibrated): :class:`IndependentEngine`, with prefill
    :class:`IndependentPrefillEngine`;
    ``transfer``: migrated requests' KV transfers, charged to the step
    (:class:`bfio.sim.transfer.TransferEngine` around the decode engine; issue 45)."""
    if transfer is not None:
        return TransferEngine(make_engine(prefill, constants, workers, slots, record_loads, step_coef, barrier),
                              transfer)
    if barrier == "independent":
        if prefill is not None:
            return IndependentPrefillEngine(prefill, constants, workers, slots, record_loads, step_coef)
        return IndependentEngine(constants, workers, slots, record_loads, step_coef)
    if prefill is None:
        return DecodeEngine(constants, workers, slots, record_loads, step_coef)
    return PrefillEngine(prefill, constants, workers, slots, record_loads, step_coef)
