"""The ``bfio`` command line: ``bfio simulate`` runs one simulation, ``bfio solve``
re-solves a saved BF-IO instance, ``bfio traces`` lists the known traces."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from bfio.errors import BfioError, ConfigError
from bfio.policies.base import DISPATCH_MODES
from bfio.workload import ARRIVAL_MODES

BFIO_OPTIONS = ("horizon", "predictor", "solver", "admission", "on_solver_error",
                "noise_low", "noise_high", "time_limit_s", "objective", "discount", "new_requests")


def _clean(obj):
    """JSON-safe copy: NaN/inf become null, numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(obj, dest: str) -> None:
    """Write ``obj`` as JSON to ``dest`` (``-`` for stdout) atomically: a file is
    either complete or absent, never partial."""
    text = json.dumps(_clean(obj), indent=2, sort_keys=True) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return
    _atomic_write(Path(dest), lambda tmp: tmp.write_text(text), "--json")


FRAME_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def check_writable(dest: str, option: str, suffixes=None) -> None:
    """Refuse, before any work is done, an output ``dest`` that cannot be
    written: a directory, a path under a file, a directory without write
    permission, or (``suffixes``) an unknown extension. ``-`` (stdout) passes."""
    if dest == "-" and suffixes is None:
        return
    path = Path(dest)
    if path.is_dir():
        raise ConfigError(f"{option} {dest}: is a directory, expected a file path")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} {dest}: unknown extension '{path.suffix}' (use {', '.join(suffixes)})")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"{option} {dest}: {parent} is a file, not a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".bfio-write-check.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ConfigError(f"{option} {dest}: cannot write in {parent} ({e.strerror or e})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {dest}: file is not writable")


def _atomic_write(path: Path, write, option: str) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it over
    ``path``; an OS error names the option and the file, and leaves nothing."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        write(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise ConfigError(f"{option} {path}: cannot write ({e.strerror or e})") from None
    finally:
        if tmp is not None and tmp.exists():
            tmp.unlink()


def _int_at_least(minimum: int, what: str):
    """argparse type: an integer >= ``minimum`` (``what`` names it in the error)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got '{text}'") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {v}")
        return v

    return parse


_positive_int = _int_at_least(1, "positive")
_seed_int = _int_at_least(0, "non-negative seed")
_nonneg_int = _int_at_least(0, "non-negative")


def _positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return v




def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bfio",
        description="Simulate barrier-synchronized data-parallel LLM decode under routing policies "
                    "(FCFS, JSQ, BF-IO, ...) in the paper's conventions.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("simulate", help="run one simulation and print its metrics",
                       description="Run one simulation. Metrics follow the paper convention "
                                   "(post-completion imbalance and power over steps 1..last admission); "
                                   "the pre-step measurement is reported beside it.")
    s.add_argument("--trace", required=True,
                   help="known trace name (longbench, burstgpt, arxiv, azure_code, azure_conv, vidur_arxiv, "
                        "sarathi_sharegpt, sharegpt_10k, longbench_v1; sha256-verified) or a path to a "
                        ".json/.jsonl/.csv/.parquet trace")
    s.add_argument("--requests", type=_positive_int, required=True,
                   help="number of requests N: drawn with replacement from the trace (backlog, poisson), or a "
                        "contiguous window of N of the trace's own rows at a --seed offset (trace)")
    s.add_argument("--seed", type=_seed_int, default=42, help="seed (>= 0) of the workload draw and of random policies (default 42)")
    s.add_argument("--workers", type=_positive_int, required=True, help="number of workers G")
    s.add_argument("--slots", type=_positive_int, default=72, help="slots (max batch size) per worker B (default 72)")
    from bfio.policies import registered, supporting

    s.add_argument("--policy", default="fcfs",
                   help="routing policy: " + ", ".join(registered()))
    s.add_argument("--json", metavar="DEST", help="write the result as one JSON object to DEST ('-' for stdout)")
    s.add_argument("--prefill-col", help="prefill-length column of a generic trace (default input_length)")
    s.add_argument("--decode-col", help="decode-length column of a generic trace (default output_length)")
    s.add_argument("--arrival-col", help="arrival-time column (seconds or timestamps), optional")
    s.add_argument("--data-dir", help="directory holding the known traces (default $BFIO_DATA_DIR or ../shared/data)")
    s.add_argument("--download", action="store_true",
                   help="a known trace missing from the data directory is fetched from its pinned public source "
                        "into --download-dir (sha256-verified; $BFIO_TRACE_BASE_URL names a mirror)")
    s.add_argument("--download-dir", default=None,
                   help="where downloaded traces are kept and looked for (default resources/traces, as the "
                        "pipeline's download_dir)")
    s.add_argument("--no-verify", action="store_true", help="skip the sha256 check of known traces")
    s.add_argument("--arrival-mode", choices=ARRIVAL_MODES, default=None,
                   help="backlog: the paper's pool of 4G requests, no arrival times (default); "
                        "poisson: requests drawn as in backlog, Poisson arrivals at --arrival-rate; "
                        "trace: the trace's own rows replayed at their timestamps (needs an arrival column), "
                        "times multiplied by --time-scale")
    s.add_argument("--arrival-rate", type=_positive_float, metavar="REQ_PER_S",
                   help="with --arrival-mode poisson: arrival rate in requests/s (required)")
    s.add_argument("--time-scale", type=_positive_float, metavar="X",
                   help="with --arrival-mode trace: multiply the replayed arrival times by X (> 0; < 1 compresses "
                        "time = more load; default 1)")
    s.add_argument("--dispatch", choices=DISPATCH_MODES, default="central",
                   help="central: one shared pool, the policy admits from it at every step (the paper's, default); "
                        "instant: each request is bound to one worker's FIFO queue on arrival (vLLM/SGLang "
                        "data-parallel routers); policies: " + ", ".join(supporting("instant")))
    s.add_argument("--admission-mode", choices=["backlog", "arrivals"], default=None,
                   help="deprecated alias: backlog = --arrival-mode backlog; arrivals = --arrival-mode poisson "
                        "with --arrival-rate, else --arrival-mode trace")
    s.add_argument("--series", metavar="FILE", help="also write the per-step series (.csv, .parquet or .pq; other extensions are refused)")
    s.add_argument("--per-request", metavar="FILE", help="also write per-request start/finish/wait (.csv, .parquet or .pq)")
    s.add_argument("--report-interval", type=_nonneg_int, metavar="K",
                   help="with --dispatch instant: the router sees the workers' load as reported every K steps, plus "
                        "its own dispatches since the last report (vLLM/SGLang routers route on such periodic "
                        "reports); 0 = the exact state (default)")
    g = s.add_argument_group("BF-IO options (with --policy bfio)")
    g.add_argument("--horizon", type=_nonneg_int, help="lookahead window H (default 0)")
    g.add_argument("--predictor", help="oracle | noisy | none | empirical | geometric (default oracle); "
                   "empirical and geometric learn from completed requests, no oracle (fast solver only)")
    g.add_argument("--noise-low", type=float, help="noisy predictor: d_lo in o_est = o * U[1-d_lo, 1+d_hi]")
    g.add_argument("--noise-high", type=float, help="noisy predictor: d_hi")
    g.add_argument("--solver", help="fast | highs | gurobi (default fast)")
    g.add_argument("--admission", help="aging:N | free | fifo (default aging:200: a request waiting 200 steps "
                   "is admitted first; free = Eq. (IO) as in the paper's tables)")
    g.add_argument("--on-solver-error", help="fail | fallback: what to do when an exact solver errors")
    g.add_argument("--time-limit-s", type=float, help="time limit per exact solve in seconds")
    from bfio.solvers.objective import NEW_REQUEST_MODELS, OBJECTIVES

    g.add_argument("--objective", choices=list(OBJECTIVES),
                   help="default (discount %g, new requests finish at their predicted length: the objective "
                   "study's choice) | paper-literal (Eq. (IO) as printed: no discount, new requests persist)"
                   % OBJECTIVES["default"]["discount"])
    g.add_argument("--discount", type=float, help="offset discount delta in (0, 1]: J weighs offset h by delta^h "
                   "(default: the objective's)")
    g.add_argument("--new-requests", choices=list(NEW_REQUEST_MODELS),
                   help="predicted: a new request adds s_j + h while h < its predicted decode length; persist: "
                   "at every offset (default: the objective's; persist for predictors without o_hat)")

    v = sub.add_parser("solve", help="solve a saved BF-IO instance (JSON) with one backend",
                       description="Solve a BF-IO integer program instance saved as JSON (its 'discount' and "
                                   "per-request 'waiting.lifetime' are part of the objective; files without "
                                   "them are delta = 1 with persisting new requests). The JSON result goes "
                                   "to stdout unless --json names a file; solver logs never do.")
    v.add_argument("--instance", required=True, help="instance JSON file")
    v.add_argument("--solver", default="fast", help="fast | highs | gurobi (default fast)")
    v.add_argument("--time-limit-s", type=float, default=None,
                   help="time limit for exact solvers, model build included (default 10)")
    v.add_argument("--json", metavar="DEST", default="-", help="where to write the JSON result ('-' for stdout)")

    t = sub.add_parser("traces", help="list the known traces: present (verified), missing, downloadable",
                       description="List every known trace: its status (present: in the data directory with the "
                                   "pinned sha256; downloaded: in the download directory, verified; missing; "
                                   "CHECKSUM-MISMATCH), whether it has a public source (downloadable) or is "
                                   "derived locally (local-only), and the file.")
    t.add_argument("--data-dir", help="directory holding the traces (default $BFIO_DATA_DIR or ../shared/data)")
    t.add_argument("--download-dir", default=None,
                   help="where downloaded traces are kept and looked for (default resources/traces)")
    t.add_argument("--download", action="store_true",
                   help="first fetch every missing downloadable trace into --download-dir (sha256-verified)")
    return p


def _policy_options(args) -> dict:
    opts = {k: getattr(args, k) for k in BFIO_OPTIONS if getattr(args, k) is not None}
    if opts and args.policy != "bfio":
        flags = ", ".join("--" + k.replace("_", "-") for k in opts)
        raise ConfigError(f"{flags}: only valid with --policy bfio (got --policy {args.policy})")
    if getattr(args, "report_interval", None) is not None:
        if args.dispatch != "instant":
            raise ConfigError(f"--report-interval: only valid with --dispatch instant (got --dispatch {args.dispatch}); "
                              "a central pool has no per-worker load reports")
        from bfio.policies import supporting

        if args.policy not in supporting("instant"):
            raise ConfigError(f"--report-interval: policy '{args.policy}' has no instant dispatch (policies: "
                              f"{', '.join(supporting('instant'))})")
        opts["report_interval"] = args.report_interval
    return opts


def _arrival_mode(args) -> str:
    """``--arrival-mode``, resolving the deprecated ``--admission-mode`` alias."""
    mode = args.arrival_mode
    if args.admission_mode is not None:
        legacy = "backlog" if args.admission_mode == "backlog" else (
            "poisson" if args.arrival_rate is not None else "trace")
        if mode is not None and mode != legacy:
            raise ConfigError(f"--admission-mode {args.admission_mode} (deprecated, means --arrival-mode {legacy}) "
                              f"contradicts --arrival-mode {mode}; give --arrival-mode only")
        print(f"bfio: warning: --admission-mode is deprecated; use --arrival-mode {legacy}", file=sys.stderr)
        mode = legacy
    mode = mode or "backlog"
    if args.arrival_rate is not None and mode != "poisson":
        raise ConfigError(f"--arrival-rate: only valid with --arrival-mode poisson (got {mode})")
    if mode == "poisson" and args.arrival_rate is None:
        raise ConfigError("--arrival-mode poisson: needs --arrival-rate REQ_PER_S")
    if args.time_scale is not None and mode != "trace":
        raise ConfigError(f"--time-scale: only valid with --arrival-mode trace (got {mode})")
    return mode


def cmd_simulate(args) -> int:
    from bfio.run import ArrivalSpec, RunSpec, simulate_run
    from bfio.traces import load_trace

    options = _policy_options(args)
    mode = _arrival_mode(args)
    _check_simulate_outputs(args)
    trace = load_trace(args.trace, prefill_col=args.prefill_col, decode_col=args.decode_col,
                       arrival_col=args.arrival_col, data_dir=_known_trace_dir(args), verify=not args.no_verify)
    if mode == "trace":
        if trace.arrival_s is None:
            raise ConfigError(f"--arrival-mode trace: trace {trace.path} has no arrival column; "
                              "name one with --arrival-col (or use --arrival-mode poisson --arrival-rate R)")
        if args.requests > len(trace):
            raise ConfigError(f"--requests: --arrival-mode trace replays the trace's own rows without resampling; "
                              f"trace {trace.name} has {len(trace)} rows, got --requests {args.requests}")
    arrival = ArrivalSpec(mode, rate=args.arrival_rate if mode == "poisson" else None,
                          time_scale=(args.time_scale or 1.0) if mode == "trace" else 1.0)
    spec = RunSpec(trace.name, args.requests, args.workers, args.slots, args.policy, args.seed, arrival,
                   args.dispatch, args.policy, tuple(sorted(options.items())))
    result = simulate_run(spec, trace.to_frame(), show_progress=None)
    summary = {"trace": trace.name, "arrival_mode": mode, "arrival_rate": args.arrival_rate,
               "time_scale": args.time_scale if mode == "trace" else None, **result.summary()}
    from bfio.solvers import warn_fallbacks

    fell_back = warn_fallbacks(result.metrics.get("solver_fallbacks", 0), result.metrics.get("solver_calls", 0),
                               options.get("solver", "fast"))
    if fell_back:
        summary.setdefault("warnings", []).append(fell_back)
    for dest, frame, option in ((args.series, result.series, "--series"),
                                (args.per_request, result.requests, "--per-request")):
        if dest:
            _write_frame(frame, dest, option)
    for w in result.warnings:
        print(f"bfio: warning: {w}", file=sys.stderr)
    if args.json:
        write_json(summary, args.json)
    else:
        m = result.metrics
        print(f"{trace.name} N={args.requests} G={args.workers} B={args.slots} policy={args.policy}: "
              f"AvgImbalance={m['avg_imbalance']:.4g} (pre-step {m['avg_imbalance_pre']:.4g}) tokens, "
              f"throughput={m['throughput']:.4g} tok/s, TPOT={m['tpot']:.4g} s/tok, "
              f"energy={m['energy_j']:.4g} J (pre-step {m['energy_j_pre']:.4g} J), "
              f"steps={result.steps} (window {result.window_steps}), wall={result.wall_s:.3f} s")
        print(f"  {mode} arrivals, {args.dispatch} dispatch: queue wait p50/p99={m['queue_wait_s_p50']:.4g}/"
              f"{m['queue_wait_s_p99']:.4g} s, TPOT p99={m['tpot_s_p99']:.4g} s/tok, e2e p99={m['e2e_s_p99']:.4g} s; "
              f"whole run: AvgImbalance={m['avg_imbalance_run']:.4g}, throughput={m['throughput_run']:.4g} tok/s, "
              f"energy={m['energy_j_run']:.4g} J")
    return 0


def _check_simulate_outputs(args) -> None:
    """Every check that needs no trace, before the trace is read or a step runs:
    the cluster size bound and the writability of each output."""
    from bfio.limits import MAX_SLOTS

    if args.workers * args.slots > MAX_SLOTS:
        raise ConfigError(f"--workers x --slots: G * B = {args.workers} * {args.slots} = "
                          f"{args.workers * args.slots:,} exceeds the bound of {MAX_SLOTS:,} slots (bfio.limits)")
    if args.json:
        check_writable(args.json, "--json")
    for dest, option in ((args.series, "--series"), (args.per_request, "--per-request")):
        if dest:
            check_writable(dest, option, FRAME_SUFFIXES)


def _write_frame(frame, dest: str, option: str = "--series") -> None:
    path = Path(dest)
    kind = FRAME_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(f"{option} {dest}: unknown extension '{path.suffix}' (use {', '.join(FRAME_SUFFIXES)})")
    _atomic_write(path, (lambda tmp: frame.to_parquet(tmp)) if kind == "parquet" else (lambda tmp: frame.to_csv(tmp)),
                  option)


def _check_instance_bounds(path: str) -> None:
    """Token counts of a saved instance within :mod:`bfio.limits`, checked
    before the instance loader (:mod:`bfio.solvers.instance`) casts them to
    int64, where ``1e30`` would overflow. Malformed files are left to the loader."""
    from bfio.limits import MAX_DECODE, MAX_PREFILL, MAX_SLOTS

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    waiting = data.get("waiting") if isinstance(data.get("waiting"), dict) else {}
    # a base load is at most B (<= MAX_SLOTS) requests of MAX_PREFILL + MAX_DECODE tokens
    fields = [("waiting.prefill", waiting.get("prefill"), MAX_PREFILL),
              ("waiting.lifetime", waiting.get("lifetime"), MAX_DECODE),
              ("waiting.age", waiting.get("age"), 2 ** 53),
              ("free", data.get("free"), MAX_SLOTS)]
    rows = data.get("base_loads")
    if isinstance(rows, list):
        fields += [(f"base_loads[{g}]", row, MAX_SLOTS * (MAX_PREFILL + MAX_DECODE)) for g, row in enumerate(rows)]
    for name, values, maximum in fields:
        if not isinstance(values, list):
            continue
        for k, v in enumerate(values):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > maximum:
                raise ConfigError(f"file {path}, field '{name}': entry {k} is {v!r}, above the bound "
                                  f"{maximum:,} (bfio.limits)")


def cmd_solve(args) -> int:
    from bfio.solvers.instance import solve_instance_file

    if args.json != "-":
        check_writable(args.json, "--json")
    _check_instance_bounds(args.instance)
    write_json(solve_instance_file(args.instance, args.solver, time_limit_s=args.time_limit_s), args.json)
    return 0


def _download_dir(args) -> Path:
    from bfio.download import DEFAULT_DOWNLOAD_DIR

    return Path(args.download_dir or DEFAULT_DOWNLOAD_DIR)


def _known_trace_dir(args):
    """The directory to read ``--trace`` from when it names a known trace: the
    data directory if the file is there, else the download directory if the
    file is there (fetched into it with ``--download``); a missing trace is a
    one-line error saying how to get it. ``--data-dir`` as given otherwise."""
    from bfio.traces import default_data_dir, resolve_trace

    path, spec = resolve_trace(args.trace, args.data_dir)
    if spec is None or path.exists():
        return args.data_dir
    ddir = _download_dir(args)
    if (ddir / spec.relpath).exists():
        return ddir
    if args.download and spec.url:
        from bfio.download import fetch_trace

        print(f"bfio: downloading trace '{spec.name}' into {ddir / spec.relpath}", file=sys.stderr)
        fetch_trace(spec, ddir)
        return ddir
    where = f"data directory {args.data_dir or default_data_dir()} ({path} does not exist)"
    if not spec.url:
        raise BfioError(f"trace '{spec.name}' is not in the {where} and has no public source (derived locally): "
                        f"point --data-dir or BFIO_DATA_DIR at a directory holding {spec.relpath}")
    size = f" ({spec.size / 1e3:,.0f} kB)" if spec.size else ""
    raise BfioError(f"trace '{spec.name}' is not in the {where}: add --download to fetch it{size} from its pinned "
                    f"source into {ddir} (sha256-verified), or point --data-dir or BFIO_DATA_DIR at a copy")


def cmd_traces(args) -> int:
    from bfio.download import fetch_trace
    from bfio.traces import KNOWN_TRACES, resolve_trace, sha256_of

    ddir = _download_dir(args)
    rows = []
    for name, spec in KNOWN_TRACES.items():
        path, _ = resolve_trace(name, args.data_dir)
        status = "present"
        if not path.exists():
            fetched = ddir / spec.relpath
            if not fetched.exists() and args.download and spec.url:
                fetch_trace(spec, ddir)
            if fetched.exists():
                path, status = fetched, "downloaded"
            else:
                status = "missing"
        if status != "missing" and sha256_of(path) != spec.sha256:
            status = "CHECKSUM-MISMATCH"
        rows.append((name, status, "downloadable" if spec.url else "local-only", path))
    print(f"{'trace':18s} {'status':18s} {'source':13s} path")
    for name, status, source, path in rows:
        print(f"{name:18s} {status:18s} {source:13s} {path}")
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"simulate": cmd_simulate, "solve": cmd_solve, "traces": cmd_traces}[args.command]
    try:
        return handler(args)
    except BfioError as e:
        print(f"bfio: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
