"""The model's request capacity and the step time any router loses to imbalance (issue 44).

Two router-independent quantities of Section 3's step model
``dt = C + t_l max_g L_g`` (Eq. (workload): ``L_g = sum_{i in A_g} (s_i + tau_i)``):

- :func:`capacity`: the highest request rate the cluster sustains, for *any*
  router, with every slot busy and every worker equally loaded. A request of
  prompt ``s`` and decode ``o`` holds a slot for ``o`` steps with loads
  ``s, s + 1, ..., s + o - 1`` (its work ``W = o s + o (o - 1) / 2``), so at full
  occupancy a slot's mean load is ``E[W] / E[o]``, a balanced step lasts
  ``C + t_l B E[W] / E[o]`` and ``G B / E[o]`` requests finish per step. Loads
  scaled to it are loads of the model, not of one router's backlog runs (the
  online study's saturation measures FCFS's, whose window over-counts short
  requests).
- :func:`bfio.ground.imbalance_share.imbalance_share`: of a run's busy step time ``sum dt``, the share spent
  waiting at the barrier for the most loaded worker,
  ``sum t_l (max_g L_g - mean_g L_g) / sum dt``; a perfectly balanced router
  would not spend it. The summed pre-step loads are the workload's total work
  whatever the router, so this is the headroom a router can gain on a run;
- :func:`indivisible_floor`: the part of that share no router can remove,
  because a request cannot be split across workers: in a step the most loaded
  worker holds at least ``max(mean_g L_g, largest request load)``, so the step
  loses at least ``t_l (max(mean L, largest) - mean L)`` (:data:`bfio.ground.imbalance_share.IMBALANCE_FLOOR`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError
from bfio.ground.jit import kernel
from bfio.engine.step_time import rank_cost


@dataclass(frozen=True)
class Capacity:
    """The model's capacity for a workload on ``workers`` x ``slots``
    (:func:`capacity`): ``requests_per_s`` and ``tokens_per_s`` (generated),
    the balanced full step ``step_s``, the mean decode length ``mean_decode``
    a busy slot's mean load ``slot_load`` (``E[W] / E[o]``, tokens) and the mean
    busy slots a rank ``occupancy`` at the capacity (``B`` unless KV memory or the
    prefill chunk binds)."""

    requests_per_s: float
    tokens_per_s: float
    step_s: float
    mean_decode: float
    slot_load: float
    occupancy: float = float("nan")

    def to_dict(self) -> dict:
        return asdict(self)


def request_work(prefill: np.ndarray, decode: np.ndarray) -> np.ndarray:
    """Each request's work ``W = o s + o (o - 1) / 2``: the sum of its loads
    ``s + tau`` over the ``o`` steps it decodes (``tau = 0 .. o - 1``, the
    pre-step loads that gate the barrier)."""
    s = np.asarray(prefill, dtype=np.float64)
    o = np.asarray(decode, dtype=np.float64)
    return o * s + o * (o - 1.0) / 2.0


def capacity(prefill, decode, workers: int, slots: int, constants: PaperConstants | None = None, *,
             coefficients=None, kv_tokens: int | None = None, prefill_model=None) -> Capacity:
    """The request capacity of ``workers`` x ``slots`` for requests drawn like
    ``(prefill, decode)`` under the paper's step model (``constants``; the
    paper's by default): every slot busy, every worker at the mean load. No
    router sustains a higher rate in this model (the barrier step can only be
    longer than the balanced one).

    The physical regime (issue 44), each optional:

    - ``coefficients`` (:class:`bfio.step_model.fit.StepCoefficients`): the
      calibrated step instead of the paper's, its balanced step read from the one
      formula, :func:`bfio.engine.step_time.rank_cost` at the mean rank, ``+ beta n + comm``;
    - ``prefill_model`` (:class:`bfio.engine.prefill.PrefillModel`): every prompt token
      is computed in some step (no prefix-cache hit assumed: an upper bound only
      without caches), ``E[s] / E[o]`` tokens a busy slot and step, at most
      ``chunk_tokens`` a rank; its ``kv_tokens`` bounds the KV memory;
    - ``kv_tokens``: a rank's KV memory (tokens); by Little's law a rank holds
      ``n slot_load`` tokens on average at ``n`` busy slots, so ``n <= kv_tokens /
      slot_load``.

    Then the capacity is the best rate ``G n / (E[o] dt(n))`` over the mean
    decoding slots ``n`` a rank the bounds allow (requests in prefill hold slots
    and KV too, left out: a lower step, so an upper bound; every step lasts at
    least the balanced step at its state, and the step time is convex in the
    state, so the mean state's step bounds the mean step from below: Jensen).
    ``step_s`` is ``dt(n)`` there and ``occupancy`` ``n``."""
    s = np.asarray(prefill)
    o = np.asarray(decode)
    if s.shape != o.shape or s.size == 0:
        raise ConfigError(f"capacity: prefill and decode must be non-empty and of one length, got {s.shape} "
                          f"and {o.shape}")
    if workers < 1 or slots < 1:
        raise ConfigError(f"capacity: workers and slots must be >= 1, got {workers} and {slots}")
    if (o < 1).any() or (s < 0).any():
        raise ConfigError("capacity: decode lengths must be >= 1 and prompt lengths >= 0")
    c = constants or PaperConstants()
    mean_o = float(np.mean(o))
    slot_load = float(np.mean(request_work(s, o))) / mean_o
    if coefficients is None and kv_tokens is None and prefill_model is None:
        step = c.overhead(slots) + c.token_latency_s * slots * slot_load
        rps = workers * slots / (mean_o * step)
        return Capacity(requests_per_s=rps, tokens_per_s=rps * mean_o, step_s=step, mean_decode=mean_o,
                        slot_load=slot_load, occupancy=float(slots))
    n_max = float(slots)
    kv = kv_tokens if kv_tokens is not None else getattr(prefill_model, "kv_tokens", None)
    if kv is not None:
        n_max = min(n_max, kv / slot_load)
    prompt_rate = 0.0  # prefill tokens a busy slot needs per step
    if prefill_model is not None:
        prompt_rate = float(np.mean(s)) / mean_o
        if prompt_rate > 0:
            n_max = min(n_max, prefill_model.chunk_tokens / prompt_rate)
    n = np.unique(np.append(np.linspace(0.0, n_max, 2001)[1:], n_max))
    step = _balanced_step(n, slot_load, prompt_rate, slots, c, coefficients, prefill_model)
    rate = workers * n / (mean_o * step)
    best = int(np.argmax(rate))
    rps = float(rate[best])
    return Capacity(requests_per_s=rps, tokens_per_s=rps * mean_o, step_s=float(step[best]), mean_decode=mean_o,
                    slot_load=slot_load, occupancy=float(n[best]))


def _balanced_step(n: np.ndarray, slot_load: float, prompt_rate: float, slots: int, c: PaperConstants,
                   coefficients, prefill_model) -> np.ndarray:
    """The step with every rank at ``n`` busy slots of mean load ``slot_load`` and
    ``n prompt_rate`` prefill tokens: the paper's ``C + t_l L (+ token_s P)``, or
    the calibrated step's one formula (:func:`bfio.engine.step_time.rank_cost`)."""
    load, tokens = n * slot_load, n * prompt_rate
    if coefficients is None:
        token_s = prefill_model.token_s if prefill_model is not None else 0.0
        return c.overhead(slots) + c.token_latency_s * load + token_s * tokens
    coef = coefficients.array()
    cost = np.array([rank_cost(coef, float(L), float(m), float(p)) for L, m, p in zip(load, n, tokens)])
    return cost + coefficients.beta * n + coefficients.comm


def trace_capacity(frame, workers: int, slots: int, constants: PaperConstants | None = None, **regime) -> Capacity:
    """:func:`capacity` of a canonical trace table (``prefill_tokens``,
    ``decode_tokens``): the capacity for requests drawn from the trace;
    ``regime``: :func:`capacity`'s keywords."""
    return capacity(frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy(), workers, slots,
                    constants, **regime)


@kernel
def largest_request_loads(first, last, base, order, steps):
    """Per step ``k = 1 .. steps`` the largest pre-step load of one request,
    ``max {base_i + k : first_i <= k <= last_i}`` (``-1`` where no request is
    counted), at ``out[k - 1]``. ``order`` lists the requests by ``base``
    descending, so the first request to reach a step is its largest: each step
    is written once (a "next unwritten step" forest with path halving), in
    ``O((N + steps) alpha)``. Invariant: ``out[k - 1] >= base_i + k`` for every
    counted request ``i`` active at ``k``, with equality for one of them."""
    out = np.full(steps, -1.0)
    nxt = np.arange(steps + 2)  # nxt[k]: a step >= k not yet written (steps + 1: none)
    for j in range(order.shape[0]):
        i = order[j]
        k = max(first[i], 1)
        stop = min(last[i], steps)
        if k > stop:
            continue
        while True:
            while nxt[k] != k:  # find the next unwritten step, halving the path
                nxt[k] = nxt[nxt[k]]
                k = nxt[k]
            if k > stop:
                break
            out[k - 1] = base[i] + k
            nxt[k] = k + 1
            k += 1
    return out


def indivisible_floor(sum_load_pre, first, last, base, workers: int) -> float:
    """``sum_k max(0, G largest_k - sum_g L_g)`` over a run's steps, on the scale
    of ``imbalance_total`` (``sum (G max L - sum L)``): what the most loaded
    worker holds above the mean at the least, since it holds at least the
    largest single request (:func:`largest_request_loads`; request ``i`` holds
    ``base_i + k`` tokens at step ``k`` of ``first_i .. last_i``). Any subset of
    the requests, and any lower bound of their loads, gives a valid (lower)
    floor. ``sum_load_pre`` is the series column of the run's pre-step loads."""
    total = np.asarray(sum_load_pre, dtype=np.float64)
    first = np.asarray(first, dtype=np.int64)
    if first.size == 0 or total.size == 0:
        return 0.0
    base = np.asarray(base, dtype=np.float64)
    order = np.argsort(-base, kind="stable").astype(np.int64)
    big = largest_request_loads(first, np.asarray(last, dtype=np.int64), base, order, total.size)
    return float(np.maximum(0.0, workers * big - total)[big >= 0].sum())


def decode_phase(requests, series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each request's decode steps and load for :func:`indivisible_floor`, from a
    run's ``requests`` and ``series`` frames: a request seated after step ``k0``
    (``start_step``) decodes at steps ``k0 + 1 .. finish_step`` with pre-step load
    ``s + (k - k0 - 1)`` (Eq. (workload), ``tau`` tokens generated before step
    ``k``). With the prefill model (a ``ttft_s`` column) it decodes after the step
    ``f`` that emitted its first token, with load ``s + (k - f)``; its prefill
    steps are left out (a lower bound). Requests with a ``preemptions`` count above
    0 are left out (their load dropped mid-run). Returns ``(first, last, base)``."""
    s = requests["prefill"].to_numpy(np.int64)
    last = requests["finish_step"].to_numpy(np.int64)
    if "ttft_s" in requests.columns:
        clock = series["clock"].to_numpy(np.float64)
        emitted = (requests["arrival_s"] + requests["ttft_s"]).to_numpy(np.float64)
        f = np.searchsorted(clock, emitted, side="left").astype(np.int64) + 1
        first, base = f + 1, (s - f).astype(np.float64)
    else:
        k0 = requests["start_step"].to_numpy(np.int64)
        first, base = k0 + 1, (s - k0 - 1).astype(np.float64)
    keep = np.ones(len(s), dtype=bool)
    if "preemptions" in requests.columns:
        keep = requests["preemptions"].to_numpy() == 0
    return first[keep], last[keep], base[keep]


def latency_floor(prefill, decode, slots: int, constants: PaperConstants | None = None, coefficients=None,
                  chunk_tokens: int | None = None, q: float = 99.0) -> dict:
    """The ``q``-th percentile of the TTFT and TPOT each request would have *alone*
    on an idle rank (no queue, no other request in its steps): no router does
    better, so a target below these is beyond what the model allows (issue 44).

    - TTFT: with ``chunk_tokens`` (the prefill model) its prompt in chunks, each
      step at least the step of that chunk and its resident tokens
      (:func:`bfio.engine.step_time.rank_cost` with ``coefficients``, plus ``comm``; the
      paper's ``C + t_l L + token_s P`` is not modelled here: 0 without
      ``coefficients``); without prefill 0 (the first token comes with the first
      step).
    - TPOT: the mean of its decode steps, ``C + t_l (s + tau)`` (the paper's) or
      ``rank_cost(s + tau, 1, 0) + beta + comm`` (calibrated), over ``tau = 0 ..
      o - 1``: both linear in ``tau``, so the mean is the step at ``tau = (o - 1) / 2``.

    Returns ``{"ttft_floor_s": ..., "tpot_floor_s": ...}``."""
    s = np.asarray(prefill, dtype=np.float64)
    o = np.asarray(decode, dtype=np.float64)
    c = constants or PaperConstants()
    mid = s + (o - 1.0) / 2.0
    if coefficients is None:
        tpot = c.overhead(slots) + c.token_latency_s * mid
        ttft = np.zeros_like(s)
    else:
        k = coefficients.array()
        tpot = np.array([rank_cost(k, float(m), 1.0, 0.0) for m in mid]) + coefficients.beta + coefficients.comm
        ttft = np.zeros_like(s)
        if chunk_tokens:
            for i, si in enumerate(s):
                done = 0.0
                while done < si:
                    chunk = min(float(chunk_tokens), si - done)
                    ttft[i] += rank_cost(k, done, 0.0, chunk) + coefficients.comm
                    done += chunk
    return {"ttft_floor_s": float(np.percentile(ttft, q)), "tpot_floor_s": float(np.percentile(tpot, q))}


__all__ = ["Capacity", "capacity", "decode_phase", "indivisible_floor", "largest_request_loads", "latency_floor",
           "request_work", "trace_capacity"]
