"""SGLang's proposed ``prefix_match`` load balance method for single-instance
DP attention (``sglang_prefix_match``).

Source: sgl-project/sglang issue #26611 and PR #26612 (2026-05-28, closed
unmerged): ``DataParallelController.prefix_match_scheduler(req)`` "hashes the
first 4k input tokens via ``blake2b`` over a 256-token window and routes by
``int.from_bytes(h) % dp_size``"; empty ``input_ids`` fall back to round robin.
The PR's code was not read at source (its description is); PR #31170 (open)
notes the failure mode this rule has by design: sessions whose first 4k
tokens are one shared system prompt all land on one rank.

Mapping: the simulator knows prompts by their KV-block hashes
(:mod:`bfio.engine.prefix`), so the key is ``blake2b`` of the hashes of the blocks
covering the first :data:`PREFIX_TOKENS` tokens (all of a shorter prompt's
blocks), taken modulo ``G``. Load is never read. Instant dispatch only; needs
block hashes (not the prefill model).
"""

from __future__ import annotations

import hashlib

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy
from bfio.policies.prefix_state import prompt_blocks

#: prompt tokens hashed (PR #26612: "the first 4k input tokens")
PREFIX_TOKENS = 4096


def prefix_rank(hashes: np.ndarray, block_tokens: int, workers: int) -> int:
    """The rank of a prompt with block ``hashes``: ``blake2b`` of its blocks within
    the first :data:`PREFIX_TOKENS` tokens, as an unsigned integer, modulo ``workers``."""
    lead = np.ascontiguousarray(hashes[: -(-PREFIX_TOKENS // block_tokens)], dtype="<i8")
    digest = hashlib.blake2b(lead.tobytes(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % workers


@register
class SglangPrefixMatch(InstantPolicy):
    name = "sglang_prefix_match"
    dispatch_modes = ("instant",)
    requires = ("blocks",)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        blocks = prompt_blocks(state, self.name)
        return np.array([prefix_rank(blocks.blocks_of(i), blocks.block_tokens, state.workers)
                         for i in requests.tolist()], dtype=np.int64)
