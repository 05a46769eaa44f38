"""sgl-router's (SGLang model gateway's) ``cache_aware`` policy (``sgl_cache_aware``).

Source: sgl-project/sglang ``sgl-router`` ``src/policies/cache_aware.rs``
(``CacheAwarePolicy::select_worker``) and its documented configuration
(``cache_threshold`` 0.3, ``balance_abs_threshold`` 64,
``balance_rel_threshold`` 1.5, as its launch log prints them): with the
workers' loads (the router's in-flight requests per worker), the system is
*imbalanced* when ``max - min > balance_abs_threshold`` and ``max > min *
balance_rel_threshold``; then the least loaded worker takes the request.
Otherwise the router matches the request's text in its *approximate* radix
trees (one per worker, built from the requests it routed there, not from the
engines' caches): the worker with the longest match takes it if the match rate
(matched / request length) exceeds ``cache_threshold``, else the worker with the
smallest tree ("most cache space"). The request is then inserted into the chosen
worker's tree.

Mapping: text is the prompt's KV blocks (:mod:`bfio.engine.prefix`), so match rates
are in blocks; each worker's tree is a :class:`~bfio.engine.prefix.PrefixCache` of
:data:`TREE_BLOCKS` blocks (the router's ``max_tree_size`` of 2^26 characters,
about 2^24 tokens at four characters a token, in 512-token blocks; LRU
eviction stands for its periodic eviction of LRU leaves). Loads are queued plus
running requests. Ties: the lowest worker. Instant dispatch only; needs block
hashes (not the prefill model).

Cost (issue 41, item 12): a request probes only the trees that ever took its
first block (an index by first block; with hashes chained on the prefix a
block at position 0 never appears elsewhere, so every other tree matches 0
blocks), trees are made on a worker's first request, and tree sizes are kept
in an array: per request O(blocks x such trees) plus vectorised O(G), where
probing every tree cost O(G) Python calls (20 requests at 2^19 workers: 27 s).
The choices are the per-tree scan's, request for request.
"""

from __future__ import annotations

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy
from bfio.ground.options import Option
from bfio.policies.prefix_state import inflight, prompt_blocks
from bfio.engine.prefix import PrefixCache

#: capacity of each worker's approximate tree, in blocks (module docstring)
TREE_BLOCKS = 2**24 // 512


@register
class SglCacheAware(InstantPolicy):
    name = "sgl_cache_aware"
    dispatch_modes = ("instant",)
    requires = ("blocks",)
    options = InstantPolicy.options + (
        Option("cache_threshold", float, 0.3, "minimum prefix match rate for cache-affine routing",
               minimum=0.0, maximum=1.0),
        Option("balance_abs_threshold", int, 64, "imbalanced when max - min in-flight requests exceeds this",
               minimum=0),
        Option("balance_rel_threshold", float, 1.5, "... and max exceeds min times this", minimum=1.0),
    )

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._trees: dict[int, PrefixCache] = {}  # made on a worker's first request
        self._sizes = np.zeros(workers, dtype=np.int64)  # blocks in each worker's tree
        self._holders: dict[int, list[int]] = {}  # first block -> workers whose tree ever took it

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        blocks = prompt_blocks(state, self.name)
        v = self.option_values
        load = inflight(state)
        out = np.empty(requests.shape[0], dtype=np.int64)
        for k, i in enumerate(requests.tolist()):
            hashes = blocks.blocks_of(i)
            first = int(hashes[0]) if hashes.shape[0] else None
            hi, lo = int(load.max()), int(load.min())
            if hi - lo > v["balance_abs_threshold"] and hi > lo * v["balance_rel_threshold"]:
                g = int(np.argmin(load))
            else:
                best, most = self._longest_match(hashes, first)
                if most / max(1, hashes.shape[0]) > v["cache_threshold"]:
                    g = best
                else:
                    g = int(np.argmin(self._sizes))  # the smallest tree, the lowest worker on ties
            tree = self._trees.get(g)
            if tree is None:
                tree = self._trees[g] = PrefixCache(TREE_BLOCKS)
            tree.insert(hashes)
            self._sizes[g] = len(tree)
            if first is not None:
                holders = self._holders.setdefault(first, [])
                if g not in holders:
                    holders.append(g)
            out[k] = g
            load[g] += 1
        return out

    def _longest_match(self, hashes: np.ndarray, first: int | None) -> tuple[int, int]:
        """The worker whose tree matches most leading blocks of ``hashes`` (the
        lowest on ties; worker 0 when none matches) and the blocks it matches."""
        best, most = 0, 0
        for g in self._holders.get(first, ()) if first is not None else ():
            n = self._trees[g].probe(hashes)
            if n > most or (n == most and n > 0 and g < best):
                best, most = g, n
        return best, most
