"""Request workloads (Section 3, "Arrival instance and workload profiles").

A request ``i`` has prefill length ``s_i >= 1`` and decode length ``o_i >= 1``;
while active its KV load is ``s_i + tau_i`` where ``tau_i`` is the number of
tokens generated so far, so its workload profile is
``W_i = (s_i, s_i + 1, ..., s_i + o_i - 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.limits import MAX_DECODE, MAX_PREFILL, MAX_ARRIVAL_S, MAX_REQUESTS
from bfio.workloads.closed_loop import FollowUps
from bfio.engine.prefix import PrefixBlocks, check_blocks_cover

def token_lengths(values, field: str, maximum: int) -> np.ndarray:
    """``values`` as an int64 array of token counts in ``1..maximum``
    (:mod:`bfio.ground.limits`); a :class:`ConfigError` names ``field`` and the first
    offending index otherwise. Checked before any cast, so ``1e30`` or ``2**63``
    is refused instead of wrapping around."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise ConfigError(f"{field}: expected a 1-D array of token counts, got shape {a.shape}")
    if a.size == 0:
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind == "b" or a.dtype.kind not in "iuf" and a.dtype != object:
        raise ConfigError(f"{field}: expected integer token counts, got dtype {a.dtype}")
    try:
        f = a.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{field}: expected integer token counts, got non-numeric values") from None
    checks = ((~np.isfinite(f)) | (f != np.round(f)), "is not an integer token count"), \
             (f < 1, "is below 1 (token counts are >= 1)"), \
             (f > maximum, f"exceeds the maximum of {maximum:,} tokens (bfio.ground.limits)")
    for bad, what in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"{field}: entry {i} ({a[i]!r}) {what}")
    return np.ascontiguousarray(a, dtype=np.int64)


@dataclass(frozen=True)
class Workload:
    """N requests in index (arrival) order.

    ``prefill`` (``s``) and ``decode`` (``o``) are int64 arrays; ``arrival_s``
    is an optional float array of arrival times in seconds (online mode);
    ``blocks`` optionally the prompts' KV-block hashes (:mod:`bfio.engine.prefix`,
    prefix caching), ``ceil(s_i / blocks.block_tokens)`` per request;
    ``follow_ups`` optionally the requests sent when an earlier one completes
    (:mod:`bfio.workloads.closed_loop`: closed-loop sessions; their ``arrival_s`` entries
    are then only their place in the index order, the simulator reads their
    arrival from the completion they follow).
    """

    prefill: np.ndarray
    decode: np.ndarray
    arrival_s: np.ndarray | None = None
    name: str = "workload"
    blocks: PrefixBlocks | None = None
    follow_ups: FollowUps | None = None

    def __post_init__(self):
        s = token_lengths(self.prefill, "prefill", MAX_PREFILL)
        o = token_lengths(self.decode, "decode", MAX_DECODE)
        if s.shape != o.shape:
            raise ConfigError(f"prefill and decode must be 1-D arrays of equal length, got {s.shape} and {o.shape}")
        object.__setattr__(self, "prefill", s)
        object.__setattr__(self, "decode", o)
        if self.arrival_s is not None:
            a = np.ascontiguousarray(self.arrival_s, dtype=np.float64)
            if a.shape != s.shape:
                raise ValueError("arrival_s must have one entry per request")
            if a.size and (not np.all(np.isfinite(a)) or np.any(np.diff(a) < 0)):
                raise ValueError("arrival_s must be finite and non-decreasing")

            if a.size and a[-1] - a[0] > MAX_ARRIVAL_S:
                raise ConfigError(f"arrival_s: the arrivals span {a[-1] - a[0]:.3g} s, beyond the bound of "
                                  f"{MAX_ARRIVAL_S:.0e} s (bfio.ground.limits.MAX_ARRIVAL_S: the clock would lose the "
                                  "precision of latencies); raise --arrival-rate or lower --time-scale")
            object.__setattr__(self, "arrival_s", a)
        if self.blocks is not None:
            if not isinstance(self.blocks, PrefixBlocks):
                raise ConfigError("blocks: expected bfio.engine.prefix.PrefixBlocks or None, got "
                                  f"{type(self.blocks).__name__}")
            check_blocks_cover(self.blocks, s, "blocks")
        if self.follow_ups is not None:
            if not isinstance(self.follow_ups, FollowUps):
                raise ConfigError("follow_ups: expected bfio.workloads.closed_loop.FollowUps or None, got "
                                  f"{type(self.follow_ups).__name__}")
            if len(self.follow_ups) != s.shape[0]:
                raise ConfigError(f"follow_ups: need one entry per request ({s.shape[0]}), got {len(self.follow_ups)}")
            if self.arrival_s is None:
                raise ConfigError("follow_ups: closed-loop requests need arrival_s (the arrivals of the "
                                  "requests that follow none)")

    def __len__(self) -> int:
        return int(self.prefill.shape[0])

    @property
    def total_work(self) -> int:
        """``W = sum_i sum_j w_i^(j) = sum_i (o_i s_i + o_i (o_i - 1) / 2)`` (Eq. (W-def))."""
        s, o = self.prefill, self.decode
        # per request at most 2^24 * 2^31 + 2^47 < 2^63; the sum in Python ints cannot overflow
        return int(np.sum((o * s + o * (o - 1) // 2).astype(object)))


def draw_workload(prefill, decode, n: int, seed: int, arrival_s=None, name: str = "workload",
                  blocks: PrefixBlocks | None = None) -> Workload:
    """Draw ``n`` requests with replacement, exactly as the paper's simulator:
    ``idx = numpy.random.default_rng(seed).choice(len(trace), size=n, replace=True)``.

    With arrival times, the drawn requests keep the trace's arrival order
    (sorted by the drawn arrival time; ties by draw order). ``blocks`` (one
    entry per trace row) follows the drawn rows; it does not change the draw.
    """
    prefill = np.asarray(prefill)
    if n < 1:
        raise ValueError(f"requests must be >= 1, got {n}")
    if n > MAX_REQUESTS:
        raise ValueError(f"requests: {n:,} exceeds the bound of {MAX_REQUESTS:,} (bfio.ground.limits.MAX_REQUESTS)")
    if len(prefill) == 0:
        raise ValueError("cannot draw from an empty trace")
    _check_rows(blocks, len(prefill))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(prefill), size=n, replace=True)
    arr = None
    if arrival_s is not None:
        arr_all = np.asarray(arrival_s, dtype=float)
        order = np.argsort(arr_all[idx], kind="stable")
        idx = idx[order]
        arr = arr_all[idx]
    return Workload(prefill[idx], np.asarray(decode)[idx], arr, name=name,
                    blocks=None if blocks is None else blocks.take(idx))


def _check_rows(blocks: PrefixBlocks | None, rows: int) -> None:
    """``blocks`` is ``None`` or :class:`PrefixBlocks` with one entry per trace row."""
    if blocks is None:
        return
    if not isinstance(blocks, PrefixBlocks):
        raise ConfigError(f"blocks: expected bfio.engine.prefix.PrefixBlocks or None, got {type(blocks).__name__}")
    if len(blocks) != rows:
        raise ConfigError(f"blocks: need one entry per trace row ({rows} rows), got {len(blocks)}")


def poisson_arrivals(n: int, rate_per_s: float, seed: int) -> np.ndarray:
    """Arrival times (seconds) of a stationary Poisson process with ``rate_per_s``
    (Section 6.1 describes the paper's arrivals this way; its tables use the
    backlog pool instead). Seeded independently of the workload draw, so the
    same ``seed`` gives the same requests in backlog and poisson mode. The first
    arrival is one exponential gap after 0."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"requests: must be an integer >= 1, got {n!r}")
    if isinstance(rate_per_s, bool) or not isinstance(rate_per_s, (int, float, np.number)) \
            or not math.isfinite(rate_per_s) or not rate_per_s > 0:
        raise ConfigError(f"arrival_rate: must be a finite number > 0 requests/s, got {rate_per_s!r}")
    rng = np.random.default_rng([int(seed), 0xA11])
    return np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))


def with_arrivals(workload: Workload, arrival_s) -> Workload:
    """The same requests (prefix blocks and follow-ups) with the given arrival times (index order kept)."""
    return Workload(workload.prefill, workload.decode, np.asarray(arrival_s, dtype=float), name=workload.name,
                    blocks=workload.blocks, follow_ups=workload.follow_ups)


def replay_workload(prefill, decode, arrival_s, n: int | None = None, seed: int | None = None,
                    time_scale: float = 1.0, name: str = "trace", blocks: PrefixBlocks | None = None) -> Workload:
    """Replay a trace's own rows in timestamp order (``trace`` arrival mode).

    No resampling: drawing with replacement would duplicate rows and their
    timestamps. Rows are ordered by ``arrival_s`` (stable, so equal timestamps
    keep file order). With ``n`` below the trace length a contiguous window of
    ``n`` rows is replayed, starting at an offset drawn uniformly from
    ``0 .. len - n`` with ``numpy.random.default_rng(seed)`` (``seed=None``:
    offset 0); ``n=None`` replays every row. Arrival times are shifted so the
    first replayed request arrives at 0 and multiplied by ``time_scale``:
    ``time_scale < 1`` compresses time (the same requests arrive faster, so the
    offered load is ``1 / time_scale`` times the trace's), ``> 1`` stretches it.

    ``blocks`` (prefix block hashes, one entry per trace row) follows the
    replayed rows.

    Errors name the option: ``requests`` (``n`` outside ``1 .. len``),
    ``time_scale`` (not a finite number > 0), ``arrival_s`` (length or values),
    ``blocks`` (not one entry per row).
    """
    s = np.asarray(prefill)
    o = np.asarray(decode)
    a = np.asarray(arrival_s, dtype=float)
    if s.ndim != 1 or s.shape != o.shape or a.shape != s.shape:
        raise ConfigError(f"arrival_s: need one arrival time per trace row ({s.shape[0] if s.ndim else 0} rows), "
                          f"got shape {a.shape}")
    if s.shape[0] == 0:
        raise ConfigError("requests: cannot replay an empty trace")
    if not np.all(np.isfinite(a)):
        raise ConfigError(f"arrival_s: row {int(np.flatnonzero(~np.isfinite(a))[0])} is not finite")
    if isinstance(time_scale, bool) or not isinstance(time_scale, (int, float, np.number)) \
            or not math.isfinite(time_scale) or not time_scale > 0:
        raise ConfigError(f"time_scale: must be a finite number > 0 (< 1 compresses time), got {time_scale!r}")
    total = s.shape[0]
    _check_rows(blocks, total)
    if n is None:
        n = total
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= total:
        raise ConfigError(f"requests: trace replay takes 1..{total} rows of the trace (its own rows, no "
                          f"resampling), got {n!r}")
    order = np.argsort(a, kind="stable")
    offset = 0
    if seed is not None and n < total:
        offset = int(np.random.default_rng(seed).integers(0, total - n + 1))
    idx = order[offset: offset + n]
    arr = (a[idx] - a[idx[0]]) * float(time_scale)
    return Workload(s[idx], o[idx], arr, name=name, blocks=None if blocks is None else blocks.take(idx))
