"""The calibrated step model's coefficients, fitted to the public kernel
profiles (:mod:`bfio.step_model.profiles`; values, files and errors:
``docs/step_model.md``).

Each profiled operation gets a form linear in a few features, fitted by
non-negative least squares on relative error (every row weighted by ``1/y``,
so small and large batches count alike; coefficients >= 0, so the step time is
monotone in each feature), with :data:`HOLDOUT` of each file's rows held out by
a seeded draw (:data:`SPLIT_SEED`) and the fit's relative error reported on
them:

- attention decode, one layer (``a100_attention_*``, ``is_prefill`` False):
  ``d0 + d_n b + d_kv (b kv)`` over ``batch_size`` ``b`` and ``kv_cache_size``
  ``kv`` (``b kv``: the batch's KV tokens, the rank's load ``L_g``);
- attention prefill, one layer (``is_prefill`` True): ``f1 c + f2 c^2 + f3 c kv``
  over ``prefill_chunk_size`` ``c`` and the context before it ``kv``;
- the dense ops of one layer (``<gpu>_<model>_mlp.csv``, every op but ``emb``,
  at the model's tensor-parallel degree): ``m0 + m1 x`` over ``num_tokens`` ``x``;
- all-reduce (``<gpu>_dgx_all_reduce.csv``, within one node): ``r0 + r1 bytes``,
  over the model's TP group (``tp_all_reduce``, TP > 1) and over
  :data:`SYNC_WORKERS` GPUs (``dp_all_reduce``, the step's DP collective).

:func:`step_coefficients` composes them into the per-step coefficients of
:mod:`bfio.step_model` (seconds).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from bfio.step_model.profiles import ATTENTION_FILE, all_reduce_file, data_root, mlp_file, read_profile

#: share of each profile file's rows held out of the fit
HOLDOUT = 0.2
#: seed of the held-out draw (``numpy.random.default_rng``)
SPLIT_SEED = 44
#: the non-attention ops of one layer in ``mlp.csv`` (``emb`` runs once a step, not per layer)
LAYER_OPS = ("input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
             "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")
#: attention ops of one layer in the attention profile, besides the kernel itself
ATTN_RESHAPE = ("attn_input_reshape", "attn_output_reshape")


@dataclass(frozen=True)
class ModelShape:
    """What the profiles do not say of a model: its layer count (``num_hidden_layers``
    of its Hugging Face ``config.json``) and the tensor-parallel degree assumed per
    data-parallel rank (the fewest GPUs of 80 GB holding its fp16 weights with room
    for KV). ``hidden``, heads: as ``mlp.csv`` lists them."""

    layers: int
    hidden: int
    q_heads: int
    kv_heads: int
    tp: int


MODELS = {
    "Llama-2-7b-hf": ModelShape(layers=32, hidden=4096, q_heads=32, kv_heads=32, tp=1),
    "CodeLlama-34b-Instruct-hf": ModelShape(layers=48, hidden=8192, q_heads=64, kv_heads=8, tp=2),
    "Llama-2-70b-hf": ModelShape(layers=80, hidden=8192, q_heads=64, kv_heads=8, tp=4),
}
#: the attention profile's shape per GPU: 64 query and 8 KV heads of 128 at TP 2
PROFILED_Q_HEADS_PER_GPU = 32
PROFILED_KV_HEADS_PER_GPU = 4
#: memory bandwidth (GB/s) and dense fp16 tensor throughput (TFLOP/s) of the SXM
#: parts (NVIDIA A100 and H100 datasheets): attention is profiled on an A100 only;
#: on an H100 decode attention (memory bound) is scaled by the bandwidth ratio,
#: prefill attention (compute bound) by the throughput ratio
GPUS = {"a100": {"bandwidth": 2039.0, "tflops": 312.0}, "h100": {"bandwidth": 3350.0, "tflops": 989.0}}
#: the data-parallel step's own collective: one small all-reduce (the ranks'
#: batch sizes, as vLLM's and SGLang's DP coordination exchange) of this many bytes
#: over this many GPUs of one node (the all-reduce fit over every message size at
#: that many GPUs, read at the smallest size the profile holds)
SYNC_BYTES = 2048
SYNC_WORKERS = 8
#: bytes of one activation element (fp16/bf16)
ACT_BYTES = 2


@dataclass(frozen=True)
class OpFit:
    """One operation's fit: feature names, coefficients (ms), and the relative error
    ``|pred - y| / y`` on the held-out rows (median, max) and their count."""

    op: str
    file: str
    features: tuple[str, ...]
    coef: tuple[float, ...]
    train_rows: int
    heldout_rows: int
    heldout_median_rel_err: float
    heldout_max_rel_err: float

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ np.asarray(self.coef)

    def to_dict(self) -> dict:
        return asdict(self)


def split(n: int, seed: int = SPLIT_SEED, share: float = HOLDOUT) -> np.ndarray:
    """The held-out mask of a file of ``n`` rows (deterministic: seeded draw)."""
    return np.random.default_rng(seed).random(n) < share


def _fit(op: str, file: str, names: tuple[str, ...], X: np.ndarray, y: np.ndarray) -> tuple[OpFit, np.ndarray]:
    """Non-negative least squares on relative error over the rows not held out."""
    from scipy.optimize import nnls  # local: scipy.optimize loads when a step model is fitted (startup)

    held = split(len(y))
    A, b = X[~held], y[~held]
    coef, _ = nnls(A / b[:, None], np.ones_like(b))
    rel = np.abs(X[held] @ coef - y[held]) / y[held]
    return OpFit(op, file, names, tuple(float(c) for c in coef), int((~held).sum()), int(held.sum()),
                 float(np.median(rel)), float(rel.max())), held


def _median(frame, ops) -> np.ndarray:
    return sum(frame[f"time_stats.{o}.median"].to_numpy(dtype=float) for o in ops)


def attention_rows(data_dir=None, verify=True):
    """``(decode (X, y), prefill (X, y))`` of the attention profile: features as the
    module docstring says, ``y`` the layer's attention time (ms, with its reshapes)."""
    a = read_profile(ATTENTION_FILE, data_dir, verify)
    d = a[~a["is_prefill"].astype(bool)]
    b, kv = d["batch_size"].to_numpy(float), d["kv_cache_size"].to_numpy(float)
    dec = (np.column_stack([np.ones_like(b), b, b * kv]), _median(d, ("attn_decode",) + ATTN_RESHAPE))
    p = a[a["is_prefill"].astype(bool)]
    c, kv = p["prefill_chunk_size"].to_numpy(float), p["kv_cache_size"].to_numpy(float)
    pre = (np.column_stack([c, c * c, c * kv]), _median(p, ("attn_prefill",) + ATTN_RESHAPE))
    return dec, pre


def mlp_rows(gpu: str, model: str, tp: int, data_dir=None, verify=True):
    """``(X, y)``: the dense ops of one layer at tensor-parallel degree ``tp`` by ``num_tokens``."""
    m = read_profile(mlp_file(gpu, model), data_dir, verify)
    m = m[m["num_tensor_parallel_workers"] == tp]
    x = m["num_tokens"].to_numpy(float)
    return np.column_stack([np.ones_like(x), x]), _median(m, LAYER_OPS)


def all_reduce_rows(gpu: str, workers: int, data_dir=None, verify=True):
    """``(X, y)``: all-reduce over ``workers`` GPUs of one node by message bytes."""
    r = read_profile(all_reduce_file(gpu), data_dir, verify)
    r = r[(r["num_workers"] == workers) & (r["devices_per_node"] == workers)]
    s = r["size"].to_numpy(float)
    return np.column_stack([np.ones_like(s), s]), r["time_stats.all_reduce.median"].to_numpy(float)


def fit_ops(gpu: str, model: str, data_dir=None, verify: bool = True) -> dict[str, OpFit]:
    """Every operation's :class:`OpFit` for ``gpu`` and ``model``, from the profiles in
    ``data_dir`` (default: the data directory now; cached per process and directory)."""
    return _fit_ops(gpu, model, str(data_root(data_dir)), verify)


@lru_cache(maxsize=None)
def _fit_ops(gpu: str, model: str, data_dir: str, verify: bool) -> dict[str, OpFit]:
    shape = MODELS[model]
    (Xd, yd), (Xp, yp) = attention_rows(data_dir, verify)
    out = {"attn_decode": _fit("attn_decode", ATTENTION_FILE, ("1", "batch", "batch*kv"), Xd, yd)[0],
           "attn_prefill": _fit("attn_prefill", ATTENTION_FILE, ("chunk", "chunk^2", "chunk*kv"), Xp, yp)[0]}
    X, y = mlp_rows(gpu, model, shape.tp, data_dir, verify)
    out["mlp"] = _fit("mlp", mlp_file(gpu, model), ("1", "tokens"), X, y)[0]
    if shape.tp > 1:
        X, y = all_reduce_rows(gpu, shape.tp, data_dir, verify)
        out["tp_all_reduce"] = _fit("tp_all_reduce", all_reduce_file(gpu), ("1", "bytes"), X, y)[0]
    X, y = all_reduce_rows(gpu, SYNC_WORKERS, data_dir, verify)
    out["dp_all_reduce"] = _fit("dp_all_reduce", all_reduce_file(gpu), ("1", "bytes"), X, y)[0]
    return out


@dataclass(frozen=True)
class StepCoefficients:
    """The calibrated step time's coefficients (seconds): per rank
    ``alpha + a_kv L_g + a_n n_g + a_p P_g + a_p2 P_g^2``, the padded batch term
    ``beta max_g n_g`` and the collective ``comm`` (``docs/step_model.md``)."""

    alpha: float
    a_kv: float
    a_n: float
    a_p: float
    a_p2: float
    beta: float
    comm: float

    def to_dict(self) -> dict:
        return asdict(self)

    def array(self) -> np.ndarray:
        """The kernel's coefficient vector (:mod:`bfio.engine.step_time`, order of the fields)."""
        return np.array([self.alpha, self.a_kv, self.a_n, self.a_p, self.a_p2, self.beta, self.comm], dtype=np.float64)


def step_coefficients(gpu: str, model: str, data_dir=None, verify: bool = True) -> StepCoefficients:
    """The per-step coefficients of ``model`` on ``gpu`` from :func:`fit_ops` (ms -> s):

    - ``alpha = layers (d0 s_bw + m0 + [tp > 1] 2 r0)``: each layer's fixed costs
      (the attention kernel's, the dense ops' weight reads, two TP all-reduces);
    - ``a_kv = layers d_kv s_kv s_bw``, ``a_n = layers d_n s_bw``: decode attention per
      resident KV token and per decoding request; ``s_kv`` the KV heads per GPU
      relative to the profile's (decode attention reads the KV cache);
    - ``a_p = layers (m1 + f1 s_q s_fl + [tp > 1] 2 r1 hidden ACT_BYTES)``,
      ``a_p2 = layers f2 s_q s_fl``: a prefill token's dense ops, attention and
      TP all-reduce bytes; ``s_q`` the query heads per GPU relative to the profile's;
    - ``beta = layers (m1 + [tp > 1] 2 r1 hidden ACT_BYTES)``: a decode token's dense
      ops and all-reduce bytes, on the batch padded to the largest rank's;
    - ``comm = r0' + r1' SYNC_BYTES``: one small all-reduce over the node's
      :data:`SYNC_WORKERS` GPUs (their all-reduce fit ``r0' + r1' bytes``).

    ``s_bw``, ``s_fl``: A100 over ``gpu`` bandwidth and throughput (1 on an A100)."""
    shape, ops = MODELS[model], fit_ops(gpu, model, data_dir, verify)
    d0, d_n, d_kv = ops["attn_decode"].coef
    f1, f2, _ = ops["attn_prefill"].coef
    m0, m1 = ops["mlp"].coef
    r0, r1 = ops["tp_all_reduce"].coef if shape.tp > 1 else (0.0, 0.0)
    s_bw = GPUS["a100"]["bandwidth"] / GPUS[gpu]["bandwidth"]
    s_fl = GPUS["a100"]["tflops"] / GPUS[gpu]["tflops"]
    s_kv = (shape.kv_heads / shape.tp) / PROFILED_KV_HEADS_PER_GPU
    s_q = (shape.q_heads / shape.tp) / PROFILED_Q_HEADS_PER_GPU
    ms, n = 1e-3, shape.layers
    ar_token = 2 * r1 * shape.hidden * ACT_BYTES
    return StepCoefficients(alpha=ms * n * (d0 * s_bw + m0 + 2 * r0), a_kv=ms * n * d_kv * s_kv * s_bw,
                            a_n=ms * n * d_n * s_bw, a_p=ms * n * (m1 + f1 * s_q * s_fl + ar_token),
                            a_p2=ms * n * f2 * s_q * s_fl, beta=ms * n * (m1 + ar_token),
                            comm=ms * (ops["dp_all_reduce"].coef[0] + ops["dp_all_reduce"].coef[1] * SYNC_BYTES))


def report_markdown(data_dir=None) -> str:
    """The tables of ``docs/step_model.md`` between its ``fit-tables`` markers:
    every operation's fit and held-out error, and the step coefficients, per
    (gpu, model); ``tests/test_step_model.py`` checks the document holds them."""
    lines = ["| gpu | model | op | file | coefficients (ms) | train / held-out rows | held-out rel. error "
             "median / max |", "|---|---|---|---|---|---|---|"]
    steps = ["| gpu | model | TP | alpha (ms) | a_kv (ns/token) | a_n (us/request) | a_p (us/token) | "
             "a_p2 (ps/token^2) | beta (us/request) | comm (us) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for gpu in GPUS:
        for model, shape in MODELS.items():
            for f in fit_ops(gpu, model, data_dir).values():
                coef = ", ".join(f"{n}: {c:.4g}" for n, c in zip(f.features, f.coef))
                lines.append(f"| {gpu} | {model} | {f.op} | `{f.file}` | {coef} | {f.train_rows} / {f.heldout_rows} "
                             f"| {f.heldout_median_rel_err:.1%} / {f.heldout_max_rel_err:.1%} |")
            c = step_coefficients(gpu, model, data_dir)
            steps.append(f"| {gpu} | {model} | {shape.tp} | {c.alpha * 1e3:.4g} | {c.a_kv * 1e9:.4g} | "
                         f"{c.a_n * 1e6:.4g} | {c.a_p * 1e6:.4g} | {c.a_p2 * 1e12:.4g} | {c.beta * 1e6:.4g} | "
                         f"{c.comm * 1e6:.4g} |")
    return "\n".join(["Operation fits (per layer; all-reduce per call):", "", *lines, "",
                      "Step coefficients (seconds scaled as the header says):", "", *steps])
