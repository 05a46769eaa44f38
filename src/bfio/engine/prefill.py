"""Chunked prefill in the lockstep step, with per-rank prefix caches (issue 32).

The paper's simulator (Section 6.2, ``../shared/spec/semantics.md``) leaves
prefill out: an admitted request has its prompt in the KV cache and the step
time is ``dt = C + t_l max_g L_g``. With :class:`PrefillModel` (off by default:
``simulate(..., prefill=None)`` is the paper's loop, bit for bit) every rank
also computes its admitted requests' *uncached* prompt tokens in chunks, as
vLLM's and SGLang's chunked prefill do:

- a request admitted to rank ``g`` first looks its prompt's leading KV blocks up
  in ``g``'s prefix cache (:class:`bfio.engine.prefix.PrefixCache`, when the workload
  carries block hashes and ``cache_blocks`` is set); the matched tokens are
  resident at once (at most ``s_i - 1``: the last prompt token is always
  computed, it yields the first output token), the rest is ``left_i``;
- each step, each rank spends at most ``chunk_tokens`` prefill tokens on its
  requests with ``left_i > 0``, oldest admission first (:func:`prefill_step`;
  vLLM's scheduler and SGLang's chunked prefill serve their running requests
  in admission order); a
  request whose prefill ends in a step emits its first token at that step's end
  (its time to first token, TTFT), then decodes one token a step as in the
  paper; its prompt's blocks enter the rank's cache;
- the barrier waits for the slowest rank in both phases:
  ``dt = C + t_l max_g L_g + token_s max_g P_g`` with ``P_g`` the prefill tokens
  rank ``g`` computes in the step (decode and prefill of a step are fused, as
  in a chunked-prefill batch);
- a request's KV load is its resident tokens: cached and computed prompt
  tokens plus generated ones (``s_i + tau_i`` once its prefill is done, Eq.
  (workload)).

Parameter values and their sources: ``docs/prefix_cache.md``, "Prefill in the step".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.jit import kernel
from bfio.engine.kernels import load_stats, retire, write_row
from bfio.engine.prefix import PrefixCache
from bfio.engine.prefill_resume import Resumes
from bfio.engine.step_time import N_COEF, balanced_dt, lockstep_prefill_dt
from bfio.ground.limits import MAX_RANK_TOKENS, MAX_TOKEN_S
from bfio.engine.run_parameters import PREEMPTION_RULES, PREFILL_OPTION

#: prefill tokens a rank computes per step at most, and seconds per computed prefill
#: token on one rank, by default (declared, with their sources, in :data:`bfio.engine.run_parameters.PREFILL`)
DEFAULT_CHUNK_TOKENS = PREFILL_OPTION["chunk_tokens"].default
DEFAULT_TOKEN_S = PREFILL_OPTION["token_s"].default


@dataclass(frozen=True)
class PrefillModel:
    """The step model with prefill (module docstring). ``cache_blocks``: each
    rank's prefix-cache capacity in blocks (``None``: no prefix cache; the
    workload's ``blocks`` are then ignored). ``kv_tokens``: each rank's KV memory
    in tokens (``None``: unbounded, as in the paper): a rank seats the head of its
    queue only while the tokens its running requests hold or will hold (their
    prompts and generated tokens, a shared prefix counted per request) plus the
    head's prompt fit (an idle rank always seats it), as vLLM's scheduler waits
    for free KV blocks. ``preemption`` (issue 44; needs ``kv_tokens``): what a rank
    does when its running requests' next step would exceed ``kv_tokens``:
    ``none`` (the default: decode growth is not bounded, as before), ``vllm``
    (the newest running request is preempted and recomputed) or ``sglang`` (its
    ``retract_decode`` order); :mod:`bfio.sim.preemption`, ``docs/prefix_cache.md``.
    ``request_chunk_tokens``: at most this many prompt tokens of one request a
    step (``None``, the default: ``chunk_tokens``, the rank's whole budget); the
    balanced reference (:mod:`bfio.sim.pooled`) sets it, whose one pooled rank
    computes ``G chunk_tokens`` a step but no request faster than its own rank could."""

    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    token_s: float = DEFAULT_TOKEN_S
    cache_blocks: int | None = PREFILL_OPTION["cache_blocks"].default
    kv_tokens: int | None = PREFILL_OPTION["kv_tokens"].default
    preemption: str = PREFILL_OPTION["preemption"].default
    request_chunk_tokens: int | None = None

    def __post_init__(self):
        for field in ("chunk_tokens", "cache_blocks", "kv_tokens", "request_chunk_tokens"):
            v = getattr(self, field)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > MAX_RANK_TOKENS:
                raise ConfigError(f"prefill.{field}: {v:,} exceeds the bound of {MAX_RANK_TOKENS:,} "
                                  "(bfio.ground.limits.MAX_RANK_TOKENS: what a rank of the largest cluster can hold)")
        c = self.chunk_tokens
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ConfigError(f"prefill.chunk_tokens: must be an integer >= 1 (tokens per rank and step), got {c!r}")
        t = self.token_s
        if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not math.isfinite(t) or t < 0:
            raise ConfigError(f"prefill.token_s: must be a finite number >= 0 (seconds per prefill token), got {t!r}")
        if t > MAX_TOKEN_S:
            raise ConfigError(f"prefill.token_s: {t:g} s per prompt token exceeds the bound of {MAX_TOKEN_S:g} s "
                              "(bfio.ground.limits.MAX_TOKEN_S)")
        b = self.cache_blocks
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1):
            raise ConfigError(f"prefill.cache_blocks: must be an integer >= 1 (blocks per rank) or null, got {b!r}")
        r = self.request_chunk_tokens
        if r is not None and (isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r <= c):
            raise ConfigError(f"prefill.request_chunk_tokens: must be an integer in 1..chunk_tokens ({c}) or null "
                              f"(prompt tokens of one request a step), got {r!r}")
        k = self.kv_tokens
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
            raise ConfigError(f"prefill.kv_tokens: must be an integer >= 1 (KV tokens per rank) or null, got {k!r}")
        p = self.preemption
        if not isinstance(p, str) or p not in PREEMPTION_RULES:
            raise ConfigError(f"prefill.preemption: must be one of {', '.join(PREEMPTION_RULES)}, got {p!r}")
        if p != "none" and k is None:
            raise ConfigError(f"prefill.preemption: '{p}' preempts when a rank's KV memory runs out; "
                              "set prefill.kv_tokens (a rank's KV memory in tokens)")

    def to_dict(self) -> dict:
        """The fields; ``preemption`` only when on (a run without it records what it did before issue 44),
        ``request_chunk_tokens`` only when set."""
        out = asdict(self)
        if self.preemption == "none":
            del out["preemption"]
        if self.request_chunk_tokens is None:
            del out["request_chunk_tokens"]
        return out

    @property
    def request_chunk(self) -> int:
        """The prompt tokens one request computes a step at most (:attr:`request_chunk_tokens`,
        else the rank's budget ``chunk_tokens``)."""
        return self.chunk_tokens if self.request_chunk_tokens is None else int(self.request_chunk_tokens)


def cached_tokens(matched_blocks: int, block_tokens: int, prompt: int) -> int:
    """Tokens a prefix hit leaves resident: the matched blocks' tokens, at most
    ``prompt - 1`` (the last prompt token is always computed)."""
    return min(int(matched_blocks) * int(block_tokens), int(prompt) - 1)


@kernel
def allot_chunks(slot_request, left, order, chunk, cap, take):
    """Each rank's prefill chunk of one step: its requests with ``left_i > 0`` in
    admission order (``order[i]``: request ``i``'s admission rank, smaller first)
    take what they still need, at most ``cap`` each, until ``chunk`` tokens are
    spent; ``take[g, b]`` the tokens slot ``b`` computes. Invariant: ``sum_b
    take[g, b] <= chunk`` and ``take[g, b] <= min(left_i, cap)``; an older request
    is never cut short for a newer one. ``cap >= chunk`` is no cap (every rank
    of a run but the balanced reference's pooled one, :mod:`bfio.sim.pooled`).
    Returns ``max_g sum_b take[g, b]``."""
    G, B = slot_request.shape
    pmax = 0
    waiting = np.empty(B, dtype=np.int64)
    for g in range(G):
        n = 0
        for b in range(B):
            take[g, b] = 0
            i = slot_request[g, b]
            if i >= 0 and left[i] > 0:  # insert slot b by admission order
                k = n
                while k > 0 and order[slot_request[g, waiting[k - 1]]] > order[i]:
                    waiting[k] = waiting[k - 1]
                    k -= 1
                waiting[k] = b
                n += 1
        budget = chunk
        for k in range(n):
            if budget == 0:
                break
            b = waiting[k]
            got = min(left[slot_request[g, b]], budget, cap)
            take[g, b] = got
            budget -= got
        if chunk - budget > pmax:
            pmax = chunk - budget
    return pmax


@kernel
def prefill_step(slot_request, prefill, decode, generated, left, chunk, cap, finish, finish_step, first_token,
                 clock0, step, overhead, t_l, token_s, pre_max, loads, active, completed, n_completed, prefilled,
                 order, take, step_coef):
    """One step with chunked prefill (module docstring), from the clock ``clock0``
    and the pre-step loads' maximum ``pre_max``. Invariants: each rank computes at
    most ``chunk`` prefill tokens, at most ``cap`` of one request, oldest admission
    first (:func:`allot_chunks`);
    a request decodes only once ``left_i = 0`` at the step's start; ``loads[g]``
    afterwards is the resident tokens ``sum (s_i - left_i + tau_i)`` of the
    requests still active. Requests whose prefill ended are written to
    ``prefilled`` (their count returned). Returns ``(dt, completions, prefill
    ended, max_g P_g, output tokens of the step)``. ``step_coef``: empty for the
    paper's ``dt``, else the calibrated step model's coefficients
    (:func:`bfio.engine.step_time.lockstep_prefill_dt`) or the balanced reference's vector
    (:func:`bfio.engine.step_time.balanced_dt`)."""
    G, B = slot_request.shape
    # 1. the chunk each rank computes: its prefilling requests, oldest admission first
    pmax = allot_chunks(slot_request, left, order, chunk, cap, take)
    if step_coef.shape[0] == 0:
        dt = overhead + t_l * pre_max + token_s * pmax
    elif step_coef.shape[0] == N_COEF:
        dt = lockstep_prefill_dt(step_coef, slot_request, left, take, loads)
    else:
        dt = balanced_dt(step_coef, slot_request, prefill, generated, left, take, loads, True)
    clock = clock0 + dt
    # 2. apply: decode a token where the prefill was done, compute the chunks
    done = 0
    ended = 0
    tokens = 0  # output tokens of the step: decoding requests and prefills that ended
    for g in range(G):
        total = 0
        n = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            if left[i] > 0:
                left[i] -= take[g, b]
                if left[i] == 0:  # the last chunk yields the first token (a recompute's next one)
                    tokens += 1
                    generated[i] += 1
                    if generated[i] == 1:
                        first_token[i] = clock
                    prefilled[ended] = i
                    ended += 1
                else:  # a recompute after preemption has its generated tokens to compute too
                    total += prefill[i] + generated[i] - left[i]
                    n += 1
                    continue
            else:
                tokens += 1
                generated[i] += 1
            t = generated[i]
            if t >= decode[i]:
                retire(slot_request, g, b, finish, finish_step, clock, step, completed, n_completed + done)
                done += 1
            else:
                total += prefill[i] + t
                n += 1
        loads[g] = total
        active[g] = n
    return dt, done, ended, pmax, tokens


@kernel
def run_prefill_step(slot_request, prefill, decode, generated, left, chunk, cap, finish, finish_step, first_token,
                     loads, active, completed, n_completed, clock, step, overhead, t_l, token_s, p_idle, p_max,
                     gamma, series, n_rows, record_loads, load_rows, prefilled, order, take, step_coef):
    """One step of the loop with prefill (:func:`prefill_step`) and its row of the
    per-step series (:func:`bfio.engine.kernels.write_row`), as ``run_steps`` writes a
    step without prefill. Returns ``(clock, step, n_completed, n_rows, prefill ended)``."""
    G = loads.shape[0]
    pre = load_stats(loads, p_idle, p_max, gamma)
    if record_loads:
        for g in range(G):
            load_rows[n_rows, g] = loads[g]
    step += 1
    dt, done, ended, _, tokens = prefill_step(slot_request, prefill, decode, generated, left, chunk, cap, finish,
                                              finish_step, first_token, clock, step, overhead, t_l, token_s, pre[0],
                                              loads, active, completed, n_completed, prefilled, order, take, step_coef)
    clock += dt
    post = load_stats(loads, p_idle, p_max, gamma)
    # the series' "active" is the step's output tokens (every active request's, in the
    # paper's loop): requests still prefilling hold a slot but emit none (throughput)
    write_row(series, n_rows, clock, dt, tokens, done, G, pre, post)
    return clock, step, n_completed + done, n_rows + 1, ended


class Prefill(Resumes):
    """One run's prefill state (module docstring): per request the prompt tokens
    still to compute (``left``), the tokens found in the prefix cache
    (``cached``) and the time of the first token; per rank its
    :class:`~bfio.engine.prefix.PrefixCache` when the model has ``cache_blocks``."""

    def __init__(self, model: PrefillModel, workload, workers: int, slots: int):
        n = len(workload)
        self.model = model
        self.prefill = workload.prefill
        self.left = np.zeros(n, dtype=np.int64)
        self.cached = np.zeros(n, dtype=np.int64)
        self.first_token = np.full(n, np.nan)
        self.prefilled = np.empty(workers * slots, dtype=np.int64)
        #: per request its admission rank (the prefill order of a rank's requests)
        self.order = np.zeros(n, dtype=np.int64)
        self._admissions = 0
        self.take = np.zeros((workers, slots), dtype=np.int64)  # scratch: a step's chunks (allot_chunks)
        #: the most slots seated in any step (prefilling or decoding): the series' ``active``
        #: counts output tokens, which a prefilling request does not emit
        self.busy_peak = 0
        self.ended = 0  # the prompts whose prefill ended in the last step (prefilled[:ended])
        #: per rank, the prompt tokens its running requests have still to compute
        self.reserve = np.zeros(workers, dtype=np.int64)
        #: the KV bound of admission (0: none; :class:`PrefillModel` ``kv_tokens``)
        self.kv_cap = int(model.kv_tokens or 0)
        if self.kv_cap:
            big = np.flatnonzero(workload.prefill > self.kv_cap)
            if big.size:
                i = int(big[0])
                raise ConfigError(f"prefill.kv_tokens: request {i}'s prompt of {int(workload.prefill[i]):,} tokens "
                                  f"exceeds a rank's KV memory of {self.kv_cap:,} tokens ({big.size} such requests)")
        #: with preemption (issue 44): per request the generated tokens its next admission
        #: recomputes with its prompt, and whether it waits for that recompute; else ``None``
        self.resume: np.ndarray | None = None
        self.requeued: np.ndarray | None = None
        #: prefill tokens computed again after preemptions (each readmission's ``left_i``)
        self.recomputed_tokens = 0
        if model.preemption != "none":
            whole = workload.prefill + workload.decode
            big = np.flatnonzero(whole > self.kv_cap)
            if big.size:
                i = int(big[0])
                raise ConfigError(
                    f"prefill.kv_tokens: request {i}'s prompt and output of {int(whole[i]):,} tokens exceed a rank's "
                    f"KV memory of {self.kv_cap:,} tokens ({big.size} such requests); with preemption "
                    f"'{model.preemption}' a request alone on a rank must fit to the end (vLLM refuses a request "
                    "longer than max_model_len, which its KV cache must hold)")
            self.track_resumes()
        self.blocks = None
        self.caches: list[PrefixCache] | None = None
        if model.cache_blocks is not None:
            if workload.blocks is None:
                raise ConfigError("prefill.cache_blocks: the workload carries no prompt block hashes (a trace "
                                  "with a hash column, e.g. mooncake, or bfio.workloads.sessions); set cache_blocks: null")
            self.blocks = workload.blocks
            self.caches = [PrefixCache(model.cache_blocks) for _ in range(workers)]
        self._probes: dict = {}  # per probed request: the caches' versions, its hits, its cached tokens, its hashes

    @property
    def admissions(self) -> int:
        """The admissions so far: a request seated earlier has ``order[i] < admissions``."""
        return self._admissions

    def admitted(self, ids: np.ndarray, worker_of: np.ndarray, loads: np.ndarray) -> None:
        """Requests ``ids`` were seated (their loads counted ``s_i``): look their
        prompts up in their rank's cache; what is not cached is left to compute
        and not yet resident. ``ids`` come in admission order (their prefill order).
        A request handed over with its KV (a migration's transfer) brings it
        (:meth:`~bfio.engine.prefill_resume.Resumes._received`), one preempted or migrated
        without it recomputes it (:meth:`~bfio.engine.prefill_resume.Resumes._readmitted`)."""
        self.order[ids] = self._admissions + np.arange(ids.shape[0])
        self._admissions += int(ids.shape[0])
        if self.received is not None and self.received[ids].any():
            got = self.received[ids]
            self._received(ids[got], worker_of, loads)
            ids = ids[~got]
        if self.resume is not None and self.requeued[ids].any():
            self._readmitted(ids, worker_of, loads)
            return
        if self.caches is not None:
            bt = self.blocks.block_tokens
            for i in ids.tolist():
                hit = self.caches[worker_of[i]].match(self.blocks.blocks_of(i))
                if hit:
                    self.cached[i] = cached_tokens(hit, bt, self.prefill[i])
        left = self.prefill[ids] - self.cached[ids]
        self.left[ids] = left
        np.subtract.at(loads, worker_of[ids], left)
        np.add.at(self.reserve, worker_of[ids], left)

    def _prefix_hit(self, i: int, g: int, lookup: bool) -> int:
        """The tokens of request ``i``'s prompt rank ``g``'s cache holds
        (:func:`cached_tokens` of its matched leading blocks, 0 without caches): an
        admission's lookup (``lookup``, counted) or a planner's probe (counting nothing)."""
        if self.caches is None:
            return 0
        cache, blocks = self.caches[g], self.blocks.blocks_of(i)
        hit = cache.match(blocks) if lookup else cache.probe(blocks)
        return cached_tokens(hit, self.blocks.block_tokens, self.prefill[i]) if hit else 0

    def cache_versions(self) -> list[int] | None:
        """Per rank, its prefix cache's :attr:`PrefixCache.version` now (``None`` without
        caches): what :meth:`_probed_hits` compares with a request's last probe."""
        return None if self.caches is None else [cache.version for cache in self.caches]

    def _probed_hits(self, i: int, versions: list[int] | None = None) -> np.ndarray:
        """Per rank, :meth:`_prefix_hit`'s probe of request ``i``'s prompt (0 without
        caches), its hashes read once and each rank probed again only when its cache
        changed since this request's last probe there (:attr:`PrefixCache.version`; a
        migration planner's cost, issue 45, probes the running requests every call).
        ``versions``: :meth:`cache_versions`, read once for many requests while the
        caches are unchanged (``None``: read here)."""
        if self.caches is None:
            return np.zeros(self.reserve.shape[0], dtype=np.int64)
        if versions is None:
            versions = self.cache_versions()
        seen = self._probes.get(i)
        if seen is None:
            b = self.blocks
            seq = b.hashes[b.offsets[i]:b.offsets[i + 1]].tolist()
            hits = [cache.leading(seq) for cache in self.caches]
        elif seen[0] != versions:
            seq, hits = seen[3], list(seen[1])
            for g, cache in enumerate(self.caches):
                if seen[0][g] != versions[g]:
                    hits[g] = cache.leading(seq)
        else:
            return seen[2]
        bt, prompt = self.blocks.block_tokens, int(self.prefill[i])
        cached = np.array([cached_tokens(h, bt, prompt) if h else 0 for h in hits], dtype=np.int64)
        cached.flags.writeable = False  # handed out again while the caches are unchanged
        self._probes[i] = (versions, hits, cached, seq)
        return cached

    def committed(self, loads: np.ndarray) -> np.ndarray:
        """Per rank, the KV tokens its running requests hold or will hold once their
        prefill is done (what the KV bound of admission reads)."""
        return loads + self.reserve

    def step(self, slot_request, prefill, decode, generated, finish, finish_step, loads, active, completed,
             n_completed, clock, step, overhead, t_l, p_idle, p_max, gamma, series, record_loads, worker_of,
             step_coef):
        """One step (:func:`run_prefill_step`); the prompts whose prefill ended enter
        their rank's cache. Returns ``(clock, step, n_completed, series rows)``."""
        clock, step, n_done, n_rows, ended = run_prefill_step(
            slot_request, prefill, decode, generated, self.left, self.model.chunk_tokens, self.model.request_chunk,
            finish, finish_step,
            self.first_token, loads, active, completed, n_completed, clock, step, overhead, t_l,
            self.model.token_s, p_idle, p_max, gamma, series.buf, series.n, record_loads, series.load_rows,
            self.prefilled, self.order, self.take, step_coef)
        self.reserve -= self.take.sum(axis=1)
        self.stepped(active, n_done - n_completed, ended, worker_of)
        return clock, step, n_done, n_rows

    def stepped(self, active: np.ndarray, retired: int, ended: int, worker_of: np.ndarray) -> None:
        """After a step (lockstep, :meth:`step`; an independent rank's,
        :class:`bfio.sim.engine.IndependentPrefillEngine`): the peak of the slots
        seated in it (prefilling and decoding requests, the ``retired`` ones
        included), and the ``ended`` prompts whose prefill ended (``prefilled``)
        enter their rank's cache (``ended`` kept: a step charged later, :mod:`bfio.sim.transfer`)."""
        self.busy_peak = max(self.busy_peak, int(active.sum()) + retired)
        self.ended = ended
        if self.caches is not None:
            for i in self.prefilled[:ended].tolist():
                self.caches[worker_of[i]].insert(self.blocks.blocks_of(i))

    def metrics(self, arrival: np.ndarray, finish: np.ndarray, decode: np.ndarray) -> dict:
        """TTFT (first token less arrival), the decode-only TPOT (first to last
        token over ``o_i - 1``), prefill tokens computed and the prefix-cache hit
        rate in prompt tokens, overall and its range over the ranks."""
        ttft = self.first_token - arrival
        multi = decode > 1
        tpot = (finish[multi] - self.first_token[multi]) / (decode[multi] - 1)
        prompt = int(self.prefill.sum())
        hit = int(self.cached.sum())
        out = {"ttft_s_mean": float(np.mean(ttft)), "ttft_s_p50": float(np.percentile(ttft, 50)),
               "ttft_s_p99": float(np.percentile(ttft, 99)),
               "tpot_decode_s_mean": float(np.mean(tpot)) if tpot.size else float("nan"),
               "tpot_decode_s_p99": float(np.percentile(tpot, 99)) if tpot.size else float("nan"),
               "prefill_tokens_computed": prompt - hit, "cache_hit_rate": hit / prompt}
        if self.resume is not None:
            out["recomputed_tokens"] = self.recomputed_tokens
        if self.caches is not None:
            rates = [c.hits / c.lookups for c in self.caches if c.lookups]
            out.update({"cache_hit_rate_blocks": sum(c.hits for c in self.caches)
                        / max(1, sum(c.lookups for c in self.caches)),
                        "cache_hit_rate_rank_min": float(min(rates)) if rates else float("nan"),
                        "cache_hit_rate_rank_max": float(max(rates)) if rates else float("nan")})
        return out

