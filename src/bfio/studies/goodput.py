"""Goodput: the highest request rate a router sustains within latency targets (issue 44).

Serving teams size a deployment on goodput, not on a latency at one load: the
highest Poisson arrival rate at which the p99 time to first token (TTFT) and
the p99 time per output token (TPOT) stay within service-level objectives
(:class:`SLO`). :func:`goodput` finds it by bisection over the rate, each probe
a run (or several seeds) of the simulator, with the model's capacity
(:func:`bfio.engine.capacity.capacity`, the rate no router can sustain beyond) as the
upper end of the search and reported beside the result.

TTFT: with the prefill step model (:mod:`bfio.engine.prefill`) the runs carry
``ttft_s_p99``; the paper's step loop has no prefill, so a request's first
token comes with its first decode step and TTFT is its queue wait plus that
step: the goodput then reads ``queue_wait_s_p99`` (the step, milliseconds, is
far below any TTFT target) and says so in :attr:`GoodputResult.ttft_metric`.
TPOT: the prefill model's decode TPOT (first to last token), else the paper's.

Steady state: each is read over the requests arriving after the first half
(:func:`bfio.ground.metrics.steady_stats`, keys ``*_steady``) when the runs carry it:
a run starts empty, so its first arrivals meet short queues, and a rate past
what the router sustains shows as a growing queue, worse in the second half.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.metrics import STEADY


@dataclass(frozen=True)
class SLO:
    """Latency targets a rate must meet: p99 TTFT and p99 TPOT in seconds. The
    defaults are MLPerf Inference's Llama 2 70B server-scenario limits (p99 TTFT
    2 s, p99 TPOT 200 ms: ``llama2-70b.Server.ttft_latency = 2000`` and
    ``tpot_latency = 200`` in mlcommons/inference ``loadgen/mlperf.conf``), a
    chat target; the same file holds its long-context Llama 3.1 405B targets
    (6,000 ms and 175 ms), which the goodput study gives LongBench."""

    ttft_p99_s: float = 2.0
    tpot_p99_s: float = 0.2

    def __post_init__(self):
        for name in ("ttft_p99_s", "tpot_p99_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value)
                                                                                      and value > 0):
                raise ConfigError(f"slo.{name}: expected a finite number > 0 (seconds), got {value!r}")


@dataclass(frozen=True)
class Probe:
    """One rate tried: its mean p99 TTFT and TPOT over the seeds and whether it met the SLO."""

    rate: float
    ttft_p99_s: float
    tpot_p99_s: float
    meets: bool


@dataclass(frozen=True)
class GoodputResult:
    """The bisection's outcome: ``goodput_rps`` (the highest rate found to meet the
    SLO, 0 when even ``low`` fails), ``capacity_rps`` (the search's upper end),
    ``at_capacity`` (the SLO holds at the capacity itself: the goodput is the
    capacity, and the runs are a transient there), the ``ttft_metric`` read and
    every :class:`Probe` in order."""

    goodput_rps: float
    capacity_rps: float
    at_capacity: bool
    ttft_metric: str
    probes: tuple[Probe, ...] = field(default=())

    @property
    def share_of_capacity(self) -> float:
        return self.goodput_rps / self.capacity_rps

    @property
    def bracket(self) -> tuple[float, float]:
        """Where the goodput lies: ``(highest rate that met the SLO, lowest rate that
        did not)``, ``inf`` for the second when every probe met it (at the capacity)."""
        return (max((p.rate for p in self.probes if p.meets), default=0.0),
                min((p.rate for p in self.probes if not p.meets), default=math.inf))

    def ahead_of(self, other: "GoodputResult") -> bool:
        """Whether this bisection is ahead of ``other``'s beyond both brackets (:func:`ahead`)."""
        return ahead(self.bracket, other.bracket)

    def probes_json(self) -> str:
        """The probes as a study's table keeps them: JSON of ``[rate, ttft, tpot, meets]``."""
        return json.dumps([[p.rate, p.ttft_p99_s, p.tpot_p99_s, p.meets] for p in self.probes])

    @classmethod
    def of_probes(cls, probes_json: str, capacity_rps: float, ttft_metric: str = "") -> "GoodputResult":
        """The result a study's row keeps (:meth:`probes_json`, its capacity), read back."""
        probes = tuple(Probe(float(r), float(t), float(o), bool(m)) for r, t, o, m in json.loads(probes_json))
        met = [p.rate for p in probes if p.meets]
        at = bool(probes) and probes[0].meets and probes[0].rate >= capacity_rps
        return cls(max(met, default=0.0), float(capacity_rps), at, ttft_metric, probes)


def ahead(ours: tuple[float, float], theirs: tuple[float, float]) -> bool:
    """Whether a bisection with bracket ``ours`` is ahead of one with ``theirs``
    (:attr:`GoodputResult.bracket`) beyond both: it met the SLO at a rate at or above
    the lowest rate at which the other failed it (latencies grow with the rate, so the
    other's goodput is below that rate and this one's at or above it). A difference
    inside the brackets is not ahead."""
    return ours[0] >= theirs[1]


#: The p99 TTFT keys a run's metrics may carry, in the order :func:`ttft_metric`
#: prefers them: steady state first (:func:`bfio.ground.metrics.steady_stats`, the first
#: half of the arrivals discarded as warm-up), the prefill model's TTFT before the
#: queue wait (the paper's step loop, module docstring).
TTFT_KEYS = ("ttft_s_p99" + STEADY, "ttft_s_p99", "queue_wait_s_p99" + STEADY, "queue_wait_s_p99")
#: The p99 TPOT keys, likewise: the prefill model's decode TPOT (first to last
#: token) before the paper's (admission to last token, which holds the prefill).
TPOT_KEYS = ("tpot_decode_s_p99" + STEADY, "tpot_decode_s_p99", "tpot_s_p99" + STEADY, "tpot_s_p99")


def _first_key(metrics: dict, keys: tuple[str, ...], what: str) -> str:
    for key in keys:
        value = metrics.get(key)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            return key
    raise ConfigError(f"goodput: the runs carry none of {', '.join(keys)} ({what}; arrivals needed)")


def ttft_metric(metrics: dict) -> str:
    """The p99 TTFT key of a run's metrics (:data:`TTFT_KEYS`, the first present)."""
    return _first_key(metrics, TTFT_KEYS, "p99 TTFT")


def tpot_metric(metrics: dict) -> str:
    """The p99 TPOT key of a run's metrics (:data:`TPOT_KEYS`, the first present)."""
    return _first_key(metrics, TPOT_KEYS, "p99 TPOT")


def probe(run_at: Callable[[float], Sequence[dict]], rate: float, slo: SLO) -> tuple[Probe, str]:
    """Run ``run_at(rate)`` (the metrics of one run per seed) and judge the means of
    their p99 TTFT and TPOT against ``slo``."""
    runs = list(run_at(rate))
    if not runs:
        raise ConfigError("goodput: run_at returned no runs")
    key, tkey = ttft_metric(runs[0]), tpot_metric(runs[0])
    ttft = float(np.mean([r[key] for r in runs]))
    tpot = float(np.mean([r[tkey] for r in runs]))
    return Probe(rate, ttft, tpot, bool(ttft <= slo.ttft_p99_s and tpot <= slo.tpot_p99_s)), key


def goodput(run_at: Callable[[float], Sequence[dict]], capacity_rps: float, slo: SLO | None = None,
            low_share: float = 0.05, rel_tol: float = 0.01, max_probes: int = 20) -> GoodputResult:
    """The highest rate in ``[low_share, 1] x capacity_rps`` whose runs meet ``slo``,
    to within ``rel_tol`` of the capacity, by bisection (latencies grow with the
    rate, so the rates that meet the SLO are an interval from below). ``run_at(rate)``
    gives the metrics of the runs at ``rate`` (one per seed, the same seeds at
    every rate, so the probes are paired)."""
    slo = slo or SLO()
    if not (isinstance(capacity_rps, (int, float)) and math.isfinite(capacity_rps) and capacity_rps > 0):
        raise ConfigError(f"goodput: capacity_rps must be a finite number > 0, got {capacity_rps!r}")
    if not 0 < low_share < 1 or not 0 < rel_tol < 1 or max_probes < 2:
        raise ConfigError("goodput: needs 0 < low_share < 1, 0 < rel_tol < 1 and max_probes >= 2")
    probes: list[Probe] = []
    top, key = probe(run_at, capacity_rps, slo)
    probes.append(top)
    if top.meets:
        return GoodputResult(capacity_rps, capacity_rps, True, key, tuple(probes))
    lo = low_share * capacity_rps
    first, _ = probe(run_at, lo, slo)
    probes.append(first)
    if not first.meets:
        return GoodputResult(0.0, capacity_rps, False, key, tuple(probes))
    hi = capacity_rps
    while hi - lo > rel_tol * capacity_rps and len(probes) < max_probes:
        mid = 0.5 * (lo + hi)
        p, _ = probe(run_at, mid, slo)
        probes.append(p)
        lo, hi = (mid, hi) if p.meets else (lo, mid)
    return GoodputResult(lo, capacity_rps, False, key, tuple(probes))


__all__ = ["SLO", "Probe", "GoodputResult", "ahead", "TPOT_KEYS", "TTFT_KEYS", "goodput", "probe", "tpot_metric",
           "ttft_metric"]
