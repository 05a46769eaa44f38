"""``bfio traces``: the known traces and their status (present, downloaded,
missing, checksum mismatch), and where ``bfio simulate --trace <name>`` reads a
known trace from (:func:`bfio.traces.registry.locate_known_trace`, the
pipeline's rule too)."""

from __future__ import annotations

import sys
from pathlib import Path

from bfio.ground.errors import BfioError
from bfio.traces.download import DEFAULT_DOWNLOAD_DIR, fetch_trace
from bfio.traces.registry import (
    KNOWN_TRACES, default_data_dir, locate_known_trace, pinned_status, resolve_trace, sha256_of)


def add_parser(subparsers) -> None:
    """The ``traces`` subcommand and its options."""
    t = subparsers.add_parser("traces", help="list the known traces: present (verified), missing, downloadable",
                              description="List every known trace: its status (present: in the data directory with the "
                                          "pinned sha256; downloaded: in the download directory, verified; missing; "
                                          "CHECKSUM-MISMATCH), whether it has a public source (downloadable) or is "
                                          "derived locally (local-only), and the file.")
    t.add_argument("--data-dir", help="directory holding the traces (default $BFIO_DATA_DIR or ../shared/data)")
    t.add_argument("--download-dir", default=None,
                   help="where downloaded traces are kept and looked for (default resources/traces)")
    t.add_argument("--download", action="store_true",
                   help="first fetch every missing downloadable trace into --download-dir (sha256-verified)")


def download_dir(args) -> Path:
    return Path(args.download_dir or DEFAULT_DOWNLOAD_DIR)


def download_mode(args) -> str:
    """The CLI fetches on request only: ``--download`` is the pipeline's
    ``download: auto``, without it ``download: false``."""
    return "auto" if args.download else "never"


def known_trace_dir(args):
    """The directory to read ``--trace`` from when it names a known trace: the
    data directory if the file is there, else the download directory if the
    file is there (fetched into it with ``--download``); a missing trace is a
    one-line error saying how to get it. ``--data-dir`` as given otherwise."""
    path, spec = resolve_trace(args.trace, args.data_dir)
    if spec is None or path.exists():
        return args.data_dir
    ddir = download_dir(args)
    found = locate_known_trace(spec, args.data_dir or default_data_dir(), ddir, download_mode(args))
    if found is not None:
        if not found.exists() or (args.download and (pinned_status(found, spec) is not None
                                                     or sha256_of(found) != spec.sha256)):  # missing or corrupted
            print(f"bfio: downloading trace '{spec.name}' into {found}", file=sys.stderr)
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
    ddir = download_dir(args)
    data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    rows = []
    for name, spec in KNOWN_TRACES.items():
        path = data_dir / spec.relpath
        found = locate_known_trace(spec, data_dir, ddir, download_mode(args))
        if found is not None and found != path and not found.exists():
            fetch_trace(spec, ddir)
        status = "missing" if found is None else "present" if found == path else "downloaded"
        path = found or path
        if status != "missing":  # neither a pipe nor a device is read; a wrong size is not hashed
            problem = pinned_status(path, spec)
            if problem is not None and "regular file" in problem:
                status = "NOT-A-FILE"
            elif problem is not None or sha256_of(path) != spec.sha256:
                status = "CHECKSUM-MISMATCH"
        rows.append((name, status, "downloadable" if spec.url else "local-only", path))
    print(f"{'trace':18s} {'status':18s} {'source':13s} path")
    for name, status, source, path in rows:
        print(f"{name:18s} {status:18s} {source:13s} {path}")
    return 0
