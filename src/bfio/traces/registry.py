"""The known traces (Section 6.1 and the generality study): for each, where it
lives under the data directory, its pinned sha256, its columns and (if any)
its public source; how a name maps to a file (:func:`resolve_trace`) and the
pinned-digest check (:func:`verify_sha256`). Reading and validating a trace
file is :mod:`bfio.traces`; where the pipeline or the CLI finds a known trace
(data directory or download directory) is :func:`locate_known_trace`.

Deliberately free of numpy and pandas: the config validation and the
pipeline's start-up import it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from bfio.ground.errors import ChecksumError, TraceError

PAPER_TRACE_SOURCE = (
    "https://raw.githubusercontent.com/Echoscd/Load-Balancing-Release/"
    "6ae705d5c18e475a1f0a7ed6697c722b76a07d98/{file}"
)
AZURE_TRACE_SOURCE = (
    "https://raw.githubusercontent.com/Azure/AzurePublicDataset/"
    "b469a113cedca53ddc3bdea71a143dc4b7d8700c/data/{file}"
)
# The further traces' origins (../shared/data/README.md: repository @ commit : path).
VIDUR_ARXIV_SOURCE = (
    "https://raw.githubusercontent.com/microsoft/vidur/7d47513363ec447a741ac5e47241580b47724fbf/"
    "data/processed_traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv"
)
SARATHI_SHAREGPT_SOURCE = (
    "https://raw.githubusercontent.com/microsoft/sarathi-serve/72339db5b120614033b317880ad3a05a5e4c9415/"
    "data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"
)
MOONCAKE_TRACE_SOURCE = (
    "https://raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28/"
    "FAST25-release/traces/{file}"
)
SHAREGPT_10K_SOURCE = (
    "https://raw.githubusercontent.com/AKafakA/vidur_opt_scheduler/20bdc49d6c1d23de84c9d4e7a8626ea33fe498f4/"
    "data/trace_data/sharegpt/sharegpt_val_10k_llama2.csv"
)


@dataclass(frozen=True)
class TraceSpec:
    """A trace the project knows by name: where it lives under the data
    directory, its pinned sha256, its columns and (if any) a public source."""

    name: str
    relpath: str
    sha256: str
    prefill_col: str
    decode_col: str
    arrival_col: str | None = None
    url: str | None = None
    description: str = ""
    #: data rows of the pinned file (config cross-checks, e.g. replay windows)
    rows: int | None = None
    #: bytes of the pinned file (what a download costs; README "Data")
    size: int | None = None
    #: the longest prompt and output (tokens) of the pinned file: upper bounds of
    #: workloads drawn from it, checked when a config loads (generated prefix workloads)
    longest: tuple[int, int] | None = None
    #: unit of a numeric arrival column (:data:`ARRIVAL_UNITS`); timestamps carry their own
    arrival_unit: str = "s"
    #: column holding each prompt's KV-block hashes (prefix caching, :mod:`bfio.engine.prefix`)
    hash_col: str | None = None
    #: tokens per block of ``hash_col``
    block_tokens: int | None = None


#: Units a numeric arrival column may be in, as the number of them per second.
ARRIVAL_UNITS = {"s": 1, "ms": 1000, "us": 1_000_000}

KNOWN_TRACES: dict[str, TraceSpec] = {
    t.name: t
    for t in [
        TraceSpec("longbench", "paper-traces/longbench_data_8000.json",
                  "03677fdcc5d46eb6fe47fffb7de07b43f95ab2395db48430d8dc4071dde1d8c7",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="longbench_data_8000.json"),
                  rows=8000, size=546843, longest=(4045928, 346), description="LongBench-v2 (paper Table 1)"),
        TraceSpec("burstgpt", "paper-traces/burst_data_8000.json",
                  "f030a60ce35565661e0669484037f823af68a48fcf51e9ef043c9223e4580361",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="burst_data_8000.json"),
                  rows=8000, size=525317, longest=(14117, 3206), description="BurstGPT (paper Table 2)"),
        TraceSpec("arxiv", "paper-traces/arxiv_data_8000.json",
                  "6c45abface3b26619953fd91c981ec93d861ac9910fccf3816103df3901f285f",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="arxiv_data_8000.json"),
                  rows=8000, size=1281545, longest=(8190, 10944), description="arXiv summarization (paper repository)"),
        TraceSpec("azure_code", "azure-llm-2023/AzureLLMInferenceTrace_code.csv",
                  "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6",
                  "ContextTokens", "GeneratedTokens", "TIMESTAMP",
                  url=AZURE_TRACE_SOURCE.format(file="AzureLLMInferenceTrace_code.csv"),
                  rows=8819, size=320117, longest=(7437, 1899), description="Azure LLM inference 2023, code (CC-BY-4.0)"),
        TraceSpec("azure_conv", "azure-llm-2023/AzureLLMInferenceTrace_conv.csv",
                  "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8",
                  "ContextTokens", "GeneratedTokens", "TIMESTAMP",
                  url=AZURE_TRACE_SOURCE.format(file="AzureLLMInferenceTrace_conv.csv"),
                  rows=19366, size=719188, longest=(14050, 1000), description="Azure LLM inference 2023, conversation (CC-BY-4.0)"),
        TraceSpec("vidur_arxiv", "vidur/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
                  "9d3580538d915ca75e4aaaa54590b42dbb17abc6d74c8913310cf07c232adcdc",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=VIDUR_ARXIV_SOURCE,
                  rows=28257, size=884932, longest=(4054, 4056), description="vidur arXiv summarization, Llama-2 tokenizer (MIT)"),
        TraceSpec("sarathi_sharegpt", "sarathi_serve/sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
                  "6d6c296302a853e2669a674a96f269283e60c57e60363bd450588a1066919f9f",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=SARATHI_SHAREGPT_SOURCE,
                  rows=30731, size=949600, longest=(8141, 1024), description="sarathi-serve ShareGPT 8k filtered (Apache-2.0)"),
        TraceSpec("sharegpt_10k", "vidur_opt_scheduler/sharegpt_val_10k_llama2.csv",
                  "e8eb6769b07f47a44fcb8caecf78dfc247103d65f84c4053bd9ae593caa01c63",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=SHAREGPT_10K_SOURCE,
                  rows=10000, size=278423, longest=(3973, 1734), description="ShareGPT validation 10k, Llama-2 tokenizer (MIT)"),
        TraceSpec("longbench_v1", "longbench/longbench_v1_llama2-7b-chat-4k_lengths.csv",
                  "d69d97d67302d9e0c7a18096005eeb7e317cfa194cbc7ded4b3830c1d607b58f",
                  "est_prompt_tokens", "pred_tokens",
                  rows=4750, size=220223, longest=(72970, 502), description="LongBench v1 with llama2-7b-chat-4k outputs (MIT, derived)"),
        TraceSpec("mooncake", "mooncake/synthetic_trace.jsonl",
                  "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131",
                  "input_length", "output_length", "timestamp",
                  url=MOONCAKE_TRACE_SOURCE.format(file="synthetic_trace.jsonl"),
                  rows=3993, size=1136313, longest=(191378, 893), arrival_unit="ms", hash_col="hash_ids", block_tokens=512,
                  description="Mooncake FAST'25 synthetic trace with prefix-block hashes (Apache-2.0)"),
    ]
}
TRACE_ALIASES = {"burst": "burstgpt", "longbench_v2": "longbench"}


def sha256_of(path) -> str:
    """The sha256 of the regular file ``path``; a named pipe or a device (which
    would block or never end) is a :class:`~bfio.ground.errors.TraceError` naming it."""
    check_regular(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_data_dir() -> Path:
    """``$BFIO_DATA_DIR`` if set; else ``shared/data`` beside this checkout (the
    layout of the paper's machines: ``<checkout>/../shared/data``), when the
    package runs from a checkout; else ``../shared/data`` from the working
    directory. Never searched upwards: an unrelated folder two levels up is not
    taken for the traces."""
    env = os.environ.get("BFIO_DATA_DIR")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3]  # src/bfio/traces/registry.py -> the checkout
    if (checkout / "pyproject.toml").is_file():
        return checkout.parent / "shared" / "data"
    return Path("../shared/data")


def resolve_trace(name_or_path, data_dir=None) -> tuple[Path, TraceSpec | None]:
    """Map a known trace name (e.g. ``longbench``) to its file, or pass a path through."""
    key = TRACE_ALIASES.get(str(name_or_path), str(name_or_path))
    if key in KNOWN_TRACES:
        spec = KNOWN_TRACES[key]
        root = Path(data_dir) if data_dir is not None else default_data_dir()
        return root / spec.relpath, spec
    return Path(name_or_path), None


#: How to recover from a known trace whose file is not the pinned one, by
#: where it was read (README "Data").
CHECKSUM_RECOVERY = {
    "cli": "a download: rerun with --download to fetch a fresh copy (the file is replaced only once the new one "
           "verifies); a copy in the data directory: restore the original or point --data-dir elsewhere",
    "pipeline": "a download (under download_dir): delete it and rerun snakemake, rule download_trace fetches it "
                "again; a copy in data_dir: restore the original, or run with --config download=true to read a "
                "verified download instead",
}


def special_kind(st: os.stat_result) -> str:
    """What a file of status ``st`` that is not a regular file is, as errors say it."""
    m = st.st_mode
    return ("a named pipe, FIFO" if stat.S_ISFIFO(m) else "a device" if stat.S_ISCHR(m) or stat.S_ISBLK(m)
            else "a directory" if stat.S_ISDIR(m) else "a socket" if stat.S_ISSOCK(m) else "a special file")


def not_regular(st: os.stat_result) -> str:
    """Why a trace of status ``st`` (not a regular file) is refused, as errors say it."""
    return f"is not a regular file ({special_kind(st)}); a trace must be a regular file"


def check_regular(path) -> os.stat_result:
    """The status of ``path``, a :class:`~bfio.ground.errors.TraceError` naming it unless
    it is a regular file (checked before anything reads it: a named pipe blocks,
    ``/dev/zero`` never ends)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(path, not_regular(st))
    return st


def pinned_status(path, spec: TraceSpec) -> str | None:
    """Why ``path`` cannot be known trace ``spec``'s pinned file without hashing it
    (``None``: it may be): not a regular file, or not the pinned size."""
    try:
        st = check_regular(path)
    except TraceError as e:
        return str(e).split(": ", 1)[1]
    if spec.size is not None and st.st_size != spec.size:
        return f"size is {st.st_size:,} bytes, expected the pinned {spec.size:,}"
    return None


def verify_sha256(path, expected: str, recovery: str = "cli", size: int | None = None) -> str:
    """The sha256 of ``path``, refused unless it is ``expected``; the error says
    how to recover (:data:`CHECKSUM_RECOVERY`, by who reads the file). Before
    reading: ``path`` must be a regular file (a named pipe or ``/dev/zero`` would
    block or never end) of ``size`` bytes when the size is pinned."""
    st = check_regular(path)
    if size is not None and st.st_size != size:
        raise ChecksumError(path, f"size is {st.st_size:,} bytes, expected the pinned {size:,} (of sha256 {expected}); "
                                  f"the file is not the pinned trace (if it is {CHECKSUM_RECOVERY[recovery]})")
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(path, f"sha256 is {actual}, expected {expected}; the file is not the pinned trace "
                                  f"(if it is {CHECKSUM_RECOVERY[recovery]})")
    return actual


def locate_known_trace(spec: TraceSpec, data_dir, download_dir, mode: str = "auto") -> Path | None:
    """Where known trace ``spec`` is read from, or ``None`` when it cannot be
    (the one rule of the pipeline, :func:`bfio.traces.sources.known_trace_path`,
    and of ``bfio simulate``/``bfio traces``; README "Data").

    ``mode`` ``'auto'``: ``data_dir/<relpath>`` if the file is there, else (a
    trace with a public source) ``download_dir/<relpath>``, to be fetched
    unless already there. ``'always'``: ``download_dir`` for every trace with
    a public source. ``'never'``: ``data_dir``, else a file already in
    ``download_dir`` (copied or fetched earlier); nothing is to be fetched. A
    trace without a public source is read from ``data_dir`` only."""
    local = Path(data_dir) / spec.relpath
    fetched = Path(download_dir) / spec.relpath
    if spec.url and mode == "always":
        return fetched
    if local.exists():
        return local
    if spec.url and (mode == "auto" or fetched.exists()):
        return fetched
    return None


def trace_specs(config: dict) -> dict[str, TraceSpec]:
    """Every trace name the config may use: :data:`~bfio.traces.registry.KNOWN_TRACES`
    plus the ``extra_traces`` entries (``relpath`` is the configured path)."""
    out = dict(KNOWN_TRACES)
    for name, e in (config.get("extra_traces") or {}).items():
        out[name] = TraceSpec(name, str(e["path"]), e.get("sha256"), e["prefill_col"], e["decode_col"],
                              e.get("arrival_col"), description=e.get("description") or f"extra trace {e['path']}",
                              arrival_unit=e.get("arrival_unit", "s"))
    return out
