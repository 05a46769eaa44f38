"""What an instant-dispatch router reads of the ranks' prefill work and prefix
caches (issue 32): :class:`CacheView`, built by the dispatch part
(:mod:`bfio.sim.dispatch`) over the prefill step model's state
(:class:`bfio.engine.prefill.Prefill`) and handed to the router as ``DispatchState.prefill``."""

from __future__ import annotations

import numpy as np

from bfio.engine.prefill import Prefill, cached_tokens


class CacheView:
    """What an instant-dispatch router may read of the ranks' prefill work and
    prefix caches when it binds arriving requests (``DispatchState.prefill``):
    :meth:`cached_tokens` probes each rank's cache for a prompt (the engine's
    ``PROBE_COMPUTED_BLOCKS`` in tpu-inference, counting no lookup) and
    :attr:`pending` is each rank's prefill backlog, the prompt tokens of its
    queue plus the tokens its running requests have still to compute."""

    def __init__(self, state: Prefill, slot_request: np.ndarray, queued_tokens: np.ndarray, decode_token_s: float,
                 queue_head: np.ndarray | None = None, queue_next: np.ndarray | None = None):
        self._state = state
        self._slots = slot_request
        self._queue_head = queue_head
        self._queue_next = queue_next
        self._pending_blocks: list[set] | None = None
        #: seconds a step spends per resident KV token of the slowest rank (``t_l``)
        self.decode_token_s = float(decode_token_s)
        #: per rank, prefill tokens queued or still to compute (:attr:`Prefill.reserve`)
        self.pending = np.asarray(queued_tokens, dtype=np.int64) + state.reserve
        self.token_s = state.model.token_s

    def resident_tokens(self, ids: np.ndarray, generated: np.ndarray) -> np.ndarray:
        """Per running request of ``ids``, the KV tokens its rank's load ``L_g`` counts
        now: ``s_i + tau_i - left_i``, its prompt's chunks still to compute left out
        (:meth:`bfio.engine.prefill_resume.Resumes.sent_tokens`)."""
        return self._state.sent_tokens(ids, generated)

    def _soon(self) -> list[set]:
        """Per rank, the block hashes its queued and prefilling requests will leave
        in its cache (built on first use; :meth:`note` adds the router's own bindings)."""
        if self._pending_blocks is None:
            st = self._state
            soon: list[set] = [set() for _ in range(self.pending.shape[0])]
            sr = self._slots
            busy = sr >= 0
            prefilling = busy & (st.left[np.where(busy, sr, 0)] > 0)  # (G, B): still computing its prompt
            for g in range(len(soon)):
                ids = sr[g][prefilling[g]].tolist()
                i = int(self._queue_head[g]) if self._queue_head is not None else -1
                while i >= 0:
                    ids.append(i)
                    i = int(self._queue_next[i])
                for i in ids:
                    soon[g].update(st.blocks.blocks_of(i).tolist())
            self._pending_blocks = soon
        return self._pending_blocks

    def expected_tokens(self, i: int) -> np.ndarray:
        """Per rank, the tokens of request ``i``'s prompt that will be cached when it
        is admitted there: leading blocks in the rank's cache or among the prompts
        queued or prefilling there (or bound there by :meth:`note`). What a router
        that remembers its own dispatches, as sgl-router's approximate trees do, can
        know; :meth:`cached_tokens` is the engine's probe of computed blocks only."""
        return self._leading_tokens(i, soon=True)

    def note(self, i: int, g: int) -> None:
        """The router bound request ``i`` to rank ``g``: its prompt's blocks count as
        coming to ``g``'s cache for the requests bound after it."""
        if self._state.caches is not None:
            self._soon()[g].update(self._state.blocks.blocks_of(i).tolist())

    def cached_tokens(self, i: int) -> np.ndarray:
        """Per rank, the tokens of request ``i``'s prompt its cache would serve
        (:func:`cached_tokens` of the matched leading blocks; zeros without caches)."""
        return self._leading_tokens(i, soon=False)

    def _leading_tokens(self, i: int, soon: bool) -> np.ndarray:
        """Per rank, :func:`cached_tokens` of request ``i``'s leading blocks held by the
        rank's cache, or (``soon``) by its cache or its :meth:`_soon` set."""
        st = self._state
        out = np.zeros(self.pending.shape[0], dtype=np.int64)
        if st.caches is None:
            return out
        blocks = st.blocks.blocks_of(i).tolist()
        coming = self._soon() if soon else None
        for g, cache in enumerate(st.caches):
            hit = 0
            for h in blocks:
                if h not in cache and (coming is None or h not in coming[g]):
                    break
                hit += 1
            if hit:
                out[g] = cached_tokens(hit, st.blocks.block_tokens, st.prefill[i])
        return out
