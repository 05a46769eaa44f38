"""Workloads whose prompts share prefixes (prefix caching, issue 32).

Two generators, each returning a :class:`~bfio.workloads.workload.Workload` with
arrival times and prompt block hashes (:class:`~bfio.engine.prefix.PrefixBlocks`):

* :func:`grpo_groups`: RL rollouts as in GRPO, ``group_size`` samples of the
  same prompt per group; members share every block and arrive together.
* :func:`multi_turn_sessions` (and :func:`session_requests`, which also says
  each request's session and turn): chat sessions whose turn ``k`` prompt is
  turn ``k - 1``'s prompt, its output and a new user message.

Token lengths are drawn (with replacement) from the given prefill and decode
values, e.g. a trace's columns. Block hashes are fresh integers handed out in
generation order from ``first_hash``: unique across groups and sessions, and a
hash stands for its block and the whole prefix before it (as vLLM's chained
block hashes). Everything is a function of ``seed``: the same arguments give
the same workload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bfio.workloads.closed_loop import FollowUps
from bfio.ground.errors import ConfigError
from bfio.ground.limits import (BYTES_PER_HASH, MAX_ARRIVAL_S, MAX_BLOCK_HASHES, MAX_DECODE, MAX_PREFILL, MAX_REQUESTS,
                         MEMORY_BUDGET, memory_estimate)
from bfio.engine.prefix import PrefixBlocks, blocks_needed
from bfio.workloads.workload import Workload, token_lengths

__all__ = ["grpo_groups", "multi_turn_sessions", "session_requests", "SessionRequests", "check_block_hashes",
           "session_hash_bound"]

_GRPO_STREAM = 0x6790
_SESSION_STREAM = 0x5E55


def _count(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{field}: expected an integer >= 1, got {value!r}")
    return int(value)


def _nonneg_int(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"{field}: expected an integer >= 0, got {value!r}")
    return int(value)


def _rate(value, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value) or not value > 0:
        raise ConfigError(f"{field}: expected a finite number > 0 per second, or None (everything at 0), "
                          f"got {value!r}")
    return float(value)


def _pool(values, field: str, maximum: int) -> np.ndarray:
    a = token_lengths(values, field, maximum)
    if a.size == 0:
        raise ConfigError(f"{field}: cannot draw from an empty set of lengths")
    return a


def _total(n: int, field: str) -> int:
    if n > MAX_REQUESTS:
        raise ConfigError(f"{field}: {n:,} requests exceed the bound of {MAX_REQUESTS:,} (bfio.ground.limits.MAX_REQUESTS)")
    return n


def check_block_hashes(requests: int, hashes: int, field: str, advice: str, at_most: bool = False) -> None:
    """Refuse a workload of ``requests`` requests holding ``hashes`` prompt block
    hashes in all whose memory (:func:`bfio.ground.limits.memory_estimate`) exceeds
    :data:`bfio.ground.limits.MEMORY_BUDGET`, before any hash is made; ``field`` names
    the argument or config key, ``advice`` what to change; ``at_most``: ``hashes``
    is an upper bound (a config's, before the lengths are drawn)."""
    if memory_estimate(requests, hashes) > MEMORY_BUDGET:
        raise ConfigError(f"{field}: {requests:,} requests with {'up to ' if at_most else ''}{hashes:,} block hashes "
                          f"in all need {'up to' if at_most else 'about'} "
                          f"{memory_estimate(requests, hashes) / 2 ** 30:,.1f} GiB ({BYTES_PER_HASH} bytes a hash), "
                          f"above the {MEMORY_BUDGET / 2 ** 30:.0f} GiB budget (at most {MAX_BLOCK_HASHES:,} hashes, "
                          f"bfio.ground.limits.MAX_BLOCK_HASHES); {advice}")


def session_hash_bound(sessions: int, turns: int, longest_message: int, longest_output: int,
                       block_tokens: int) -> int:
    """At most how many block hashes :func:`session_requests` stores for
    ``sessions`` sessions of ``turns`` turns whose messages and outputs are at
    most ``longest_message`` and ``longest_output`` tokens: turn ``k``'s prompt is
    at most ``(k + 1) m + k o`` tokens, ``ceil`` of it over ``block_tokens`` blocks,
    summed (exact integers; no array is made)."""
    t, m, o, bt = int(turns), int(longest_message), int(longest_output), int(block_tokens)
    tokens = m * t * (t + 1) // 2 + o * t * (t - 1) // 2
    return int(sessions) * (tokens // bt + t)


def _poisson_starts(rng: np.random.Generator, n: int, rate: float | None) -> np.ndarray:
    """``n`` arrival times of a Poisson process (first one gap after 0), or zeros."""
    if rate is None:
        return np.zeros(n)
    return np.cumsum(rng.exponential(1.0 / rate, size=n))


def _check_hash_range(first_hash: int, total: int) -> None:
    if first_hash + total > np.iinfo(np.int64).max:
        raise ConfigError(f"first_hash: {first_hash} + {total} block hashes overflow int64")


def grpo_groups(prefill, decode, groups: int, group_size: int, seed: int, *, block_tokens: int = 512,
                group_rate_per_s: float | None = None, first_hash: int = 0, name: str = "grpo") -> Workload:
    """``groups * group_size`` requests: ``groups`` prompts, each sampled
    ``group_size`` times (GRPO rollouts).

    Each group's prompt length is drawn from ``prefill``; its members have
    identical block hashes (``ceil(s / block_tokens)`` fresh ones per group)
    and independent decode lengths drawn from ``decode``. A group's members
    arrive together: with ``group_rate_per_s=None`` every group at time 0 (a
    rollout step submits its whole batch at once), else group arrival times
    form a Poisson process of that rate. Requests are in group order, so
    request ``i`` belongs to group ``i // group_size``.
    """
    s_pool = _pool(prefill, "prefill", MAX_PREFILL)
    o_pool = _pool(decode, "decode", MAX_DECODE)
    groups = _count(groups, "groups")
    group_size = _count(group_size, "group_size")
    seed = _nonneg_int(seed, "seed")
    bt = _count(block_tokens, "block_tokens")
    rate = _rate(group_rate_per_s, "group_rate_per_s")
    first_hash = _nonneg_int(first_hash, "first_hash")
    n = _total(groups * group_size, "groups * group_size")

    rng = np.random.default_rng([seed, _GRPO_STREAM])
    prompt = rng.choice(s_pool, size=groups, replace=True)
    out = rng.choice(o_pool, size=n, replace=True)
    start = _poisson_starts(rng, groups, rate)

    counts = blocks_needed(prompt, bt)
    check_block_hashes(n, int(counts.sum()) * group_size, "groups * group_size",
                       "use fewer groups, a smaller group_size or a larger block_tokens")
    offsets = np.zeros(groups + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    _check_hash_range(first_hash, int(offsets[-1]))
    per_group = PrefixBlocks(offsets, first_hash + np.arange(offsets[-1], dtype=np.int64), bt)
    member_of = np.repeat(np.arange(groups), group_size)
    return Workload(prompt[member_of], out, start[member_of], name=name, blocks=per_group.take(member_of))


@dataclass(frozen=True, eq=False)
class SessionRequests:
    """Multi-turn sessions: the workload (arrival order) and, per request,
    its ``session`` (0-based) and ``turn`` (0-based) as int64 arrays."""

    workload: Workload
    session: np.ndarray
    turn: np.ndarray


def session_requests(prefill, decode, sessions: int, turns: int, seed: int, *, block_tokens: int = 512,
                     session_rate_per_s: float | None = None, think_time_s: float = 30.0,
                     first_hash: int = 0, name: str = "sessions", group_size: int = 1,
                     stream_gap_s: float = 0.0, closed_loop: bool = False) -> SessionRequests:
    """``sessions * turns`` requests of multi-turn chat sessions.

    Turn 0's prompt is a user message; turn ``k``'s prompt is turn ``k-1``'s
    prompt, turn ``k-1``'s output and a new user message:
    ``s_k = s_{k-1} + o_{k-1} + m_k``, every message ``m`` drawn from
    ``prefill`` and every output ``o`` from ``decode``.

    Block hashes: only *full* blocks can be shared, so turn ``k`` keeps the
    first ``floor(s_{k-1} / block_tokens)`` hashes of turn ``k-1`` and gets
    fresh ones for the rest (the block that held turn ``k-1``'s partial tail
    now holds different tokens). A session's turns thus share a growing
    prefix; different sessions share nothing.

    Arrivals (open loop): session starts are 0 (``session_rate_per_s=None``)
    or a Poisson process of that rate; turn ``k`` arrives an exponential time
    of mean ``think_time_s`` after turn ``k-1`` (0: at the same time). The
    gap stands for the previous answer's latency plus the user's think time:
    the generator does not know when turn ``k-1`` completes, so in a
    simulation turn ``k`` may arrive before turn ``k-1`` has finished.
    Requests are sorted by arrival time (stable: ties in session, then turn
    order), their blocks reordered with them.

    ``group_size > 1``: GRPO groups of multi-turn rollouts (agentic RL). Sessions
    ``0..group_size-1``, ``group_size..2 group_size-1``, ... form groups whose
    members share turn 0's prompt (its length and block hashes: one prompt
    sampled ``group_size`` times) and start together; their outputs, later
    messages and think times are their own. ``group_size = 1`` (the default)
    draws exactly the sessions above. ``stream_gap_s``: member ``m`` of a group
    (``0..group_size-1``) starts ``m stream_gap_s`` after the group (0, the
    default: together), as rollout workers that submit a group's streams one
    after another do (the staggered starts of tpu-inference PR #3307's run).

    ``closed_loop=True``: turn ``k`` is sent its think time after turn ``k-1``
    *completes* in the simulation, not after it arrived (the workload's
    ``follow_ups``, :mod:`bfio.workloads.closed_loop`); its ``arrival_s`` entry keeps the
    open-loop time, which only orders the requests. Everything else (lengths,
    hashes, think times, order) is the open-loop draw of the same arguments.
    """
    m_pool = _pool(prefill, "prefill", MAX_PREFILL)
    o_pool = _pool(decode, "decode", MAX_DECODE)
    sessions = _count(sessions, "sessions")
    turns = _count(turns, "turns")
    seed = _nonneg_int(seed, "seed")
    bt = _count(block_tokens, "block_tokens")
    rate = _rate(session_rate_per_s, "session_rate_per_s")
    for key, value in (("think_time_s", think_time_s), ("stream_gap_s", stream_gap_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
                or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{key}: expected a finite number >= 0 of seconds, got {value!r}")
    first_hash = _nonneg_int(first_hash, "first_hash")
    group_size = _count(group_size, "group_size")
    _total(sessions * turns, "sessions * turns")

    rng = np.random.default_rng([seed, _SESSION_STREAM])
    message = rng.choice(m_pool, size=(sessions, turns), replace=True)
    out = rng.choice(o_pool, size=(sessions, turns), replace=True)
    start = _poisson_starts(rng, sessions, rate)
    think = rng.exponential(float(think_time_s), size=(sessions, turns - 1)) if think_time_s > 0 \
        else np.zeros((sessions, turns - 1))
    leader = np.arange(sessions) - np.arange(sessions) % group_size  # each group's first session
    message[:, 0] = message[leader, 0]
    start = start[leader] + (np.arange(sessions) - leader) * float(stream_gap_s)

    # prompt lengths: s_0 = m_0, s_k = s_{k-1} + o_{k-1} + m_k (exact in Python ints, then bounded)
    prompt = np.cumsum(message.astype(object), axis=1)
    prompt[:, 1:] += np.cumsum(out[:, :-1].astype(object), axis=1)
    too_long = np.asarray(prompt > MAX_PREFILL, dtype=bool)
    if too_long.any():
        s, k = (int(x) for x in np.argwhere(too_long)[0])
        raise ConfigError(f"turns: session {s}'s turn {k} has a prompt of {prompt[s, k]:,} tokens, beyond the "
                          f"maximum of {MAX_PREFILL:,} (bfio.ground.limits.MAX_PREFILL); use fewer turns")
    prompt = prompt.astype(np.int64)
    arrival = start[:, None] + np.concatenate([np.zeros((sessions, 1)), np.cumsum(think, axis=1)], axis=1)
    if arrival.max() - arrival.min() > MAX_ARRIVAL_S:
        raise ConfigError(f"think_time_s: the arrivals span {arrival.max() - arrival.min():.3g} s, beyond the "
                          f"bound of {MAX_ARRIVAL_S:.0e} s (bfio.ground.limits.MAX_ARRIVAL_S)")

    hashes = int(blocks_needed(prompt, bt).sum())
    check_block_hashes(sessions * turns, hashes, "sessions * turns",
                       "use fewer turns or sessions or a larger block_tokens (a session's hashes grow as turns^2)")
    _check_hash_range(first_hash, hashes)
    rows: list[np.ndarray] = []
    next_hash = first_hash
    first_rows: dict[int, np.ndarray] = {}  # turn 0's blocks per group leader
    for s in range(sessions):
        kept = np.empty(0, dtype=np.int64)  # the previous turn's full blocks
        for k in range(turns):
            need = int(-(-int(prompt[s, k]) // bt))
            if k == 0 and int(leader[s]) in first_rows:  # a group member: the group's prompt
                row = first_rows[int(leader[s])]
            else:
                fresh = np.arange(next_hash, next_hash + need - kept.size, dtype=np.int64)
                next_hash += fresh.size
                row = np.concatenate([kept, fresh])
            if k == 0 and s == leader[s]:
                first_rows[s] = row
            rows.append(row)
            kept = row[: int(prompt[s, k]) // bt]
    blocks = PrefixBlocks.from_lists(rows, bt)

    order = np.argsort(arrival.reshape(-1), kind="stable")
    session_of = np.repeat(np.arange(sessions, dtype=np.int64), turns)
    turn_of = np.tile(np.arange(turns, dtype=np.int64), sessions)
    follow_ups = None
    if closed_loop:  # turn k (k >= 1) follows turn k-1 of its session, in the sorted order
        place = np.empty_like(order)
        place[order] = np.arange(order.size)
        flat = np.arange(sessions * turns).reshape(sessions, turns)
        after = np.full(order.size, -1, dtype=np.int64)
        gap = np.zeros(order.size)
        after[place[flat[:, 1:]].reshape(-1)] = place[flat[:, :-1]].reshape(-1)
        gap[place[flat[:, 1:]].reshape(-1)] = think.reshape(-1)
        follow_ups = FollowUps(after, gap)
    workload = Workload(prompt.reshape(-1)[order], out.reshape(-1)[order], arrival.reshape(-1)[order], name=name,
                        blocks=blocks.take(order), follow_ups=follow_ups)
    return SessionRequests(workload, session_of[order], turn_of[order])


def multi_turn_sessions(prefill, decode, sessions: int, turns: int, seed: int, *, block_tokens: int = 512,
                        session_rate_per_s: float | None = None, think_time_s: float = 30.0,
                        first_hash: int = 0, name: str = "sessions", group_size: int = 1,
                        stream_gap_s: float = 0.0, closed_loop: bool = False) -> Workload:
    """The workload of :func:`session_requests` (same arguments, same result)."""
    return session_requests(prefill, decode, sessions, turns, seed, block_tokens=block_tokens,
                            session_rate_per_s=session_rate_per_s, think_time_s=think_time_s,
                            first_hash=first_hash, name=name, group_size=group_size,
                            stream_gap_s=stream_gap_s, closed_loop=closed_loop).workload
