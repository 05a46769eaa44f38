"""Prefix caching, data layer (issue 32): per-request prompt block hashes and
one rank's LRU cache of KV blocks.

A prompt of ``s`` tokens occupies ``ceil(s / block_tokens)`` KV blocks; each
block is named by an integer hash that stands for the block's tokens *and
everything before them* (hashes chained on the prefix, as vLLM's block hashes
and Mooncake's ``hash_ids``). Two requests whose hash lists share a leading run
share that prefix, and a rank that still holds those blocks need not recompute
them.

* :class:`PrefixBlocks`: the hash lists of ``n`` requests as one ragged array
  (``offsets``, ``hashes``); carried by :class:`bfio.workloads.workload.Workload`.
* :func:`check_blocks_cover`: each request has exactly ``ceil(s_i / block_tokens)`` blocks.
* :class:`PrefixCache`: one rank's cache of block hashes, LRU eviction.
* :func:`cache_capacity_blocks`: how many blocks a rank's KV budget holds.

The simulator does not use any of this yet (see ``docs/prefix_cache.md``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bfio.ground.errors import ConfigError

__all__ = ["PrefixBlocks", "PrefixCache", "check_blocks_cover", "blocks_needed", "cache_capacity_blocks", "KV_TOKENS_PER_RANK"]


def _positive_int(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{field}: expected an integer >= 1, got {value!r}")
    return int(value)


def _int64_vector(values, field: str) -> np.ndarray:
    """``values`` as a read-only 1-D int64 array (a copy); integer input only."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise ConfigError(f"{field}: expected a 1-D integer array, got shape {a.shape}")
    if a.size and (a.dtype.kind not in "iu" or a.dtype.kind == "u" and a.max() > np.iinfo(np.int64).max):
        raise ConfigError(f"{field}: expected int64 values, got dtype {a.dtype}")
    out = np.array(a, dtype=np.int64)  # always a copy: the caller's array stays writable, ours does not
    out.flags.writeable = False
    return out


def blocks_needed(prefill, block_tokens: int) -> np.ndarray:
    """``ceil(prefill / block_tokens)`` per request (int64): the KV blocks a
    prompt of ``prefill`` tokens occupies, its last block possibly partial."""
    s = np.asarray(prefill, dtype=np.int64)
    return (s + (block_tokens - 1)) // block_tokens


@dataclass(frozen=True, eq=False)
class PrefixBlocks:
    """The prompt block hashes of ``n`` requests, as a ragged array.

    Request ``i``'s hashes are ``hashes[offsets[i]:offsets[i + 1]]``, first
    block first. ``offsets`` has ``n + 1`` non-decreasing entries from 0 to
    ``len(hashes)``; hashes are non-negative int64. ``block_tokens`` is the
    tokens per block (512 in the Mooncake trace, 16 in vLLM by default).
    Both arrays are stored as read-only int64 copies, so :meth:`blocks_of`
    can hand out views safely. Errors are :class:`~bfio.ground.errors.ConfigError`
    naming the field and the first offending request.
    """

    offsets: np.ndarray
    hashes: np.ndarray
    block_tokens: int

    def __post_init__(self) -> None:
        bt = _positive_int(self.block_tokens, "block_tokens")
        off = _int64_vector(self.offsets, "offsets")
        h = _int64_vector(self.hashes, "hashes")
        if off.size == 0:
            raise ConfigError("offsets: expected n + 1 entries (at least [0]), got an empty array")
        if off[0] != 0:
            raise ConfigError(f"offsets: entry 0 must be 0, got {int(off[0])}")
        steps = np.diff(off)
        if (steps < 0).any():
            i = int(np.flatnonzero(steps < 0)[0])
            raise ConfigError(f"offsets: request {i} ends at {int(off[i + 1])}, before it starts at {int(off[i])} "
                              "(offsets must be non-decreasing)")
        if off[-1] != h.size:
            raise ConfigError(f"offsets: the last entry ({int(off[-1])}) must equal the number of hashes ({h.size})")
        if h.size and (h < 0).any():
            j = int(np.flatnonzero(h < 0)[0])
            i = int(np.searchsorted(off, j, side="right")) - 1
            raise ConfigError(f"hashes: request {i} has a negative block hash ({int(h[j])}) at block "
                              f"{j - int(off[i])}; hashes are non-negative")
        object.__setattr__(self, "block_tokens", bt)
        object.__setattr__(self, "offsets", off)
        object.__setattr__(self, "hashes", h)

    @classmethod
    def from_lists(cls, lists: Iterable[Iterable[int]], block_tokens: int) -> "PrefixBlocks":
        """From one sequence of hashes per request."""
        rows = [np.asarray(r, dtype=np.int64).reshape(-1) for r in lists]
        counts = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        hashes = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
        return cls(offsets, hashes, block_tokens)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def _index(self, i) -> int:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
            raise IndexError(f"request index {i!r} out of range for {n} requests")
        return int(i) % n

    def count(self, i: int) -> int:
        """The number of blocks of request ``i``."""
        i = self._index(i)
        return int(self.offsets[i + 1] - self.offsets[i])

    def blocks_of(self, i: int) -> np.ndarray:
        """Request ``i``'s block hashes, first block first (a read-only view)."""
        i = self._index(i)
        return self.hashes[self.offsets[i]: self.offsets[i + 1]]

    @property
    def counts(self) -> np.ndarray:
        """Blocks per request (int64, length ``n``)."""
        return np.diff(self.offsets)

    def take(self, index) -> "PrefixBlocks":
        """The requests ``index`` (a 1-D integer array: subset, reorder or
        repeat), as :func:`numpy.take` on rows; how a drawn or replayed
        workload keeps each request's hashes."""
        idx = np.asarray(index)
        if idx.ndim != 1 or idx.size and idx.dtype.kind not in "iu":
            raise ConfigError(f"index: expected a 1-D integer array of request indices, got {idx.dtype} "
                              f"of shape {idx.shape}")
        idx = idx.astype(np.int64)
        n = len(self)
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"index: entry {k} ({int(idx[k])}) is not a request index (0..{n - 1})")
        counts = self.counts[idx]
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # position of every output hash in self.hashes: its row's start plus its rank within the row
        src = np.repeat(self.offsets[idx] - offsets[:-1], counts) + np.arange(offsets[-1], dtype=np.int64)
        return PrefixBlocks(offsets, self.hashes[src], self.block_tokens)

    def __eq__(self, other) -> bool:
        if not isinstance(other, PrefixBlocks):
            return NotImplemented
        return (self.block_tokens == other.block_tokens and np.array_equal(self.offsets, other.offsets)
                and np.array_equal(self.hashes, other.hashes))

    __hash__ = None  # type: ignore[assignment]  (holds arrays)


def check_blocks_cover(blocks: PrefixBlocks, prefill, where: str) -> None:
    """Every request ``i`` has exactly ``ceil(prefill[i] / blocks.block_tokens)``
    blocks; otherwise a :class:`~bfio.ground.errors.ConfigError` names ``where``, the
    first offending request and both numbers."""
    s = np.asarray(prefill)
    if s.ndim != 1 or s.shape[0] != len(blocks):
        raise ConfigError(f"{where}: {len(blocks)} requests have prefix blocks, but there are "
                          f"{s.shape[0] if s.ndim == 1 else s.shape} prompts")
    need = blocks_needed(s, blocks.block_tokens)
    bad = blocks.counts != need
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"{where}: request {i} has {blocks.count(i)} prefix blocks, but its prompt of "
                          f"{int(s[i])} tokens needs ceil({int(s[i])} / {blocks.block_tokens}) = {int(need[i])}")


#: A rank's KV-cache budget in tokens used where a run gives none (the
#: ``vllm_dp_kv`` router's ``kv_tokens_per_rank``): an A100-80GB less an 8B
#: model's 16 GB of weights, 64 GB at 131 kB a token (Llama-3-8B: 32 layers x 8
#: KV heads x 128 x 2 x 2 bytes), ``docs/prefix_cache.md``.
KV_TOKENS_PER_RANK = 480_000


def cache_capacity_blocks(kv_tokens_per_rank: int, block_tokens: int) -> int:
    """Blocks a rank's KV budget of ``kv_tokens_per_rank`` tokens holds:
    ``floor(kv_tokens_per_rank / block_tokens)``, which must be at least 1."""
    kv = _positive_int(kv_tokens_per_rank, "kv_tokens_per_rank")
    bt = _positive_int(block_tokens, "block_tokens")
    if kv < bt:
        raise ConfigError(f"kv_tokens_per_rank: {kv} tokens hold no full block of {bt} tokens "
                          "(a cache needs at least one block)")
    return kv // bt


class PrefixCache:
    """One rank's cache of KV blocks, named by their hashes, with LRU eviction.

    What it models. vLLM's automatic prefix caching names each full KV block
    by a hash chained on the whole prefix before it, reuses a request's
    longest run of cached leading blocks, and evicts free blocks least
    recently used first; when a request finishes its blocks are freed tail
    first, so a prompt's last blocks are evicted before its first ones.
    SGLang's RadixAttention keeps the cached prefixes in a radix tree and
    evicts leaves in LRU order. This class is the common core of both:

    * :meth:`match` is the prefix lookup: the number of *leading* blocks of a
      sequence present in the cache, stopping at the first miss (a later block
      is useless without its prefix). It counts :attr:`lookups` and
      :attr:`hits` (in blocks) and does not change recency.
    * :meth:`insert` marks every block of the sequence as used now, inserting
      the missing ones, in vLLM's order: the sequence's first block is the
      most recently used, its last block the least. Then least recently used
      blocks are evicted until at most :attr:`capacity` remain. A sequence
      longer than the capacity therefore keeps its *first* ``capacity`` blocks
      (the only ones a prefix match can use).

    With hashes chained on the prefix (the same hash never follows two
    different prefixes), a block is always more recent than every block
    after it in any sequence, so eviction takes descendants before their
    prefix (the radix tree's leaf-first LRU) and the cache's content stays
    prefix-closed.

    Simplifications: no pinning, i.e. the blocks of running requests are not
    protected from eviction (vLLM and SGLang never evict a block in use; here
    the capacity stands for the blocks kept for reuse); no reference counts,
    no partial-block sharing (a partial last block is just a block whose hash
    no other prompt has), no copy-on-write, no host-memory tier.
    ``collections.OrderedDict`` keeps the recency order: O(1) per block.
    """

    def __init__(self, capacity: int):
        self._capacity = _positive_int(capacity, "capacity")
        self._lru: OrderedDict[int, None] = OrderedDict()  # least recently used first
        #: how often the cached blocks changed (a block added or evicted): a probe's
        #: result holds while it is unchanged (a migration planner's, :meth:`leading`)
        self.version = 0
        #: blocks looked up by :meth:`match`
        self.lookups = 0
        #: of those, blocks found (the matched leading run)
        self.hits = 0

    @property
    def capacity(self) -> int:
        """Maximum number of cached blocks."""
        return self._capacity

    def __len__(self) -> int:
        return len(self._lru)

    def __contains__(self, h) -> bool:
        return int(h) in self._lru

    def __iter__(self):
        """Cached hashes, least recently used first."""
        return iter(list(self._lru))

    @property
    def hit_rate(self) -> float:
        """``hits / lookups`` (NaN before any lookup)."""
        return self.hits / self.lookups if self.lookups else float("nan")

    def match(self, hashes) -> int:
        """The number of leading blocks of ``hashes`` in the cache (stops at
        the first miss). Counts lookups and hits; recency is unchanged."""
        seq = _as_hash_list(hashes)
        n = self.probe(seq)
        self.lookups += len(seq)
        self.hits += n
        return n

    def probe(self, hashes) -> int:
        """The number of leading blocks of ``hashes`` in the cache, as :meth:`match`
        but counting nothing (a router's look at a rank's cache, e.g. tpu-inference's
        ``PROBE_COMPUTED_BLOCKS``, is not a lookup by the engine)."""
        return self.leading(_as_hash_list(hashes))

    def leading(self, seq: list[int]) -> int:
        """:meth:`probe` of a list of int hashes, unchecked (a request's own hashes from
        :class:`PrefixBlocks`, read once for every rank's cache: a planner's probes)."""
        lru = self._lru
        n = 0
        for h in seq:
            if h not in lru:
                break
            n += 1
        return n

    def insert(self, hashes) -> None:
        """Use every block of ``hashes`` now: insert the missing ones, refresh
        the rest (first block most recent), then evict least recently used
        blocks beyond the capacity."""
        lru = self._lru
        n = len(lru)
        for h in reversed(_as_hash_list(hashes)):
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        if len(lru) != n:
            self.version += 1  # blocks added (evictions follow only additions)
        while len(lru) > self._capacity:
            lru.popitem(last=False)

    def admit(self, hashes) -> int:
        """:meth:`match` then :meth:`insert`: what a request's admission does.
        Returns the matched blocks."""
        n = self.match(hashes)
        self.insert(hashes)
        return n

    def clear(self) -> None:
        """Empty the cache and reset the counters."""
        self._lru.clear()
        self.lookups = self.hits = 0
        self.version += 1


def _as_hash_list(hashes) -> list[int]:
    if isinstance(hashes, np.ndarray):
        if hashes.ndim != 1 or hashes.size and hashes.dtype.kind not in "iu":
            raise ConfigError(f"hashes: expected a 1-D integer array, got {hashes.dtype} of shape {hashes.shape}")
        return hashes.tolist()
    out = list(hashes)
    for h in out:
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)):
            raise ConfigError(f"hashes: expected integer block hashes, got {h!r}")
    return [int(h) for h in out]
