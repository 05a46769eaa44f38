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

Mapping: text is the prompt's KV blocks (:mod:`bfio.prefix`), so match rates
are in blocks; each worker's tree is a :class:`~bfio.prefix.PrefixCache` of
:data:`TREE_BLOCKS` blocks (the router's ``max_tree_size`` of 2^26 characters,
about 2^24 tokens at four characters a token, in 512-token blocks; LRU
eviction stands for its periodic eviction of LRU leaves). Loads are queued plus
running requests. Ties: the lowest worker. Instant dispatch only; needs block
hashes (not the prefill model).
"""

from __future__ import annotations

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy
from bfio.policies.options import Option
from bfio.policies.prefix_state import inflight, prompt_blocks
from bfio.prefix import PrefixCache

#: capacity of each worker's approximate tree, in blocks (module docstring)
TREE_BLOCKS = 2**24 // 512


@register
class SglCacheAware(InstantPolicy):
    name = "sgl_cache_aware"
    label = "sgl-router cache_aware"
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
        self._trees = [PrefixCache(TREE_BLOCKS) for _ in range(workers)]

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        blocks = prompt_blocks(state, self.name)
        v = self.option_values
        load = inflight(state)
        out = np.empty(requests.shape[0], dtype=np.int64)
        for k, i in enumerate(requests.tolist()):
            hashes = blocks.blocks_of(i)
            hi, lo = int(load.max()), int(load.min())
            if hi - lo > v["balance_abs_threshold"] and hi > lo * v["balance_rel_threshold"]:
                g = int(np.argmin(load))
            else:
                matched = np.array([t.probe(hashes) for t in self._trees])
                best = int(np.argmax(matched))
                if matched[best] / max(1, hashes.shape[0]) > v["cache_threshold"]:
                    g = best
                else:
                    g = int(np.argmin([len(t) for t in self._trees]))
            self._trees[g].insert(hashes)
            out[k] = g
            load[g] += 1
        return out
