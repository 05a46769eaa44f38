"""bfio.traces.download: fetching a pinned file from a local HTTP server on the
loopback interface (tests/trace_server.py) that serves it, corrupts it, drops
the connection mid-file or never answers; and the CLI's ``--download``."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pytest
from trace_server import TraceServer, corrupted

from bfio.cli import main
from bfio.traces.download import BASE_URL_ENV, base_url, fetch, fetch_trace, trace_url
from bfio.ground.errors import ChecksumError, DownloadError
from bfio.traces.registry import KNOWN_TRACES, TraceSpec

REL = "sub/file.bin"


@pytest.fixture
def served(tmp_path):
    """A 300 kB file under ``tmp_path/root/sub`` and its sha256."""
    data = np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / REL).write_bytes(data)
    return root, data, hashlib.sha256(data).hexdigest()


def leftovers(directory: Path) -> list[str]:
    """Every file in ``directory`` (temp files included)."""
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_fetch_streams_verifies_and_renames(served, tmp_path):
    root, data, digest = served
    dest = tmp_path / "out" / "deep" / "file.bin"
    with TraceServer(root) as srv:
        assert fetch(f"{srv.url}/{REL}", dest, digest, timeout=5) == dest
        assert srv.requests[REL] == 1
    assert dest.read_bytes() == data
    assert leftovers(dest.parent) == ["file.bin"]


def test_corrupted_file_is_refused_naming_url_and_both_digests(served, tmp_path):
    root, data, digest = served
    dest = tmp_path / "out" / "file.bin"
    with TraceServer(root, "corrupt") as srv:
        url = f"{srv.url}/{REL}"
        with pytest.raises(ChecksumError) as e:
            fetch(url, dest, digest, timeout=5, attempts=3, backoff=0)
        assert srv.requests[REL] == 1  # a wrong file is not retried
    msg = str(e.value)
    assert url in msg and digest in msg and hashlib.sha256(corrupted(data)).hexdigest() in msg
    assert leftovers(dest.parent) == []  # nothing half-written, no temp file


def test_a_failed_download_leaves_an_existing_file_untouched(served, tmp_path):
    root, _, digest = served
    dest = tmp_path / "file.bin"
    dest.write_bytes(b"earlier")
    with TraceServer(root, "corrupt") as srv, pytest.raises(ChecksumError):
        fetch(f"{srv.url}/{REL}", dest, digest, timeout=5)
    assert dest.read_bytes() == b"earlier" and leftovers(tmp_path) == ["file.bin", "root"]


def test_connection_dropped_mid_file_is_retried_then_reported(served, tmp_path):
    root, _, digest = served
    dest = tmp_path / "out" / "file.bin"
    waits = []
    with TraceServer(root, "drop") as srv:
        url = f"{srv.url}/{REL}"
        with pytest.raises(DownloadError) as e:
            fetch(url, dest, digest, timeout=5, attempts=3, backoff=0.5, sleep=waits.append)
        assert srv.requests[REL] == 3
    assert waits == [0.5, 1.0]  # exponential backoff between the 3 attempts
    msg = str(e.value)
    assert url in msg and "3 attempts" in msg and "mid-file" in msg and str(dest) in msg
    assert leftovers(dest.parent) == []


def test_a_dropped_connection_then_a_good_answer_succeeds(served, tmp_path):
    root, data, digest = served
    dest = tmp_path / "file.bin"
    waits = []
    with TraceServer(root, "drop", bad_requests=2) as srv:
        fetch(f"{srv.url}/{REL}", dest, digest, timeout=5, attempts=3, backoff=0.01, sleep=waits.append)
        assert srv.requests[REL] == 3
    assert dest.read_bytes() == data and len(waits) == 2


def test_a_server_that_never_answers_times_out(served, tmp_path):
    root, _, digest = served
    dest = tmp_path / "out" / "file.bin"
    with TraceServer(root, "hang") as srv:
        url = f"{srv.url}/{REL}"
        t0 = time.monotonic()
        with pytest.raises(DownloadError) as e:
            fetch(url, dest, digest, timeout=0.3, attempts=2, backoff=0)
        elapsed = time.monotonic() - t0
        assert srv.requests[REL] == 2
    assert 0.6 <= elapsed < 10, elapsed
    assert url in str(e.value) and "timeout" in str(e.value)
    assert leftovers(dest.parent) == []


def test_http_404_is_not_retried(served, tmp_path):
    root, _, digest = served
    with TraceServer(root) as srv:
        with pytest.raises(DownloadError, match="HTTP 404"):
            fetch(f"{srv.url}/nosuch.bin", tmp_path / "x.bin", digest, timeout=5, attempts=3, backoff=0)
        assert srv.requests["nosuch.bin"] == 1


def test_nothing_listening_is_a_download_error(served, tmp_path):
    _, _, digest = served
    with TraceServer(tmp_path) as srv:
        url = f"{srv.url}/{REL}"
    with pytest.raises(DownloadError, match="2 attempts failed"):  # server closed: connection refused
        fetch(url, tmp_path / "x.bin", digest, timeout=2, attempts=2, backoff=0)


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="attempts"):
        fetch("http://127.0.0.1:9/x", tmp_path / "x", "0" * 64, attempts=0)
    with pytest.raises(ValueError, match="timeout"):
        fetch("http://127.0.0.1:9/x", tmp_path / "x", "0" * 64, timeout=0)


def test_trace_url_mirror_and_env(monkeypatch):
    spec = KNOWN_TRACES["azure_code"]
    monkeypatch.delenv(BASE_URL_ENV, raising=False)
    assert base_url(None) is None and trace_url(spec, base_url(None)) == spec.url
    monkeypatch.setenv(BASE_URL_ENV, "http://127.0.0.1:1/env/")
    assert trace_url(spec, base_url(None)) == f"http://127.0.0.1:1/env/{spec.relpath}"
    assert trace_url(spec, base_url("http://m.example/d")) == f"http://m.example/d/{spec.relpath}"  # config first
    assert trace_url(KNOWN_TRACES["longbench_v1"], "http://m.example/d") is None  # derived: never fetched


def test_fetch_trace_reuses_a_verified_file_and_replaces_a_bad_one(served, tmp_path):
    root, data, digest = served
    spec = TraceSpec("t", REL, digest, "a", "b", url="http://example.invalid/never-used")
    ddir = tmp_path / "dl"
    with TraceServer(root) as srv:
        assert fetch_trace(spec, ddir, base=srv.url, timeout=5).read_bytes() == data
        assert fetch_trace(spec, ddir, base=srv.url, timeout=5).read_bytes() == data
        assert srv.requests[REL] == 1  # reused
        (ddir / REL).write_bytes(b"damaged")
        assert fetch_trace(spec, ddir, base=srv.url, timeout=5).read_bytes() == data
        assert srv.requests[REL] == 2
    with pytest.raises(DownloadError, match="no public download source"):
        fetch_trace(TraceSpec("d", "x/y.csv", digest, "a", "b"), ddir)


# --------------------------------------------------------------------------- CLI


def test_simulate_without_the_trace_says_how_to_get_it_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(["simulate", "--trace", "burstgpt", "--requests", "50", "--workers", "2",
               "--data-dir", str(tmp_path / "nodata")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "burst_data_8000.json" in err and "--download" in err and "--data-dir" in err
    rc = main(["simulate", "--trace", "longbench_v1", "--requests", "50", "--workers", "2",
               "--data-dir", str(tmp_path / "nodata"), "--download"])
    err = capsys.readouterr().err
    assert rc == 2 and "no public source" in err and len(err.strip().splitlines()) == 1


def test_simulate_download_fetches_once_then_reuses(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["simulate", "--trace", "burstgpt", "--requests", "200", "--workers", "4", "--json", "-"]
    rel = KNOWN_TRACES["burstgpt"].relpath
    metrics = ("avg_imbalance", "throughput", "energy_j", "tpot", "steps")
    with TraceServer(data_dir) as srv:
        monkeypatch.setenv(BASE_URL_ENV, srv.url)
        assert main([*args, "--data-dir", str(tmp_path / "nodata"), "--download"]) == 0
        fetched = json.loads(capsys.readouterr().out)
        assert (tmp_path / "resources" / "traces" / rel).read_bytes() == (data_dir / rel).read_bytes()
        # found in the download directory afterwards: no --download, no request
        assert main([*args, "--data-dir", str(tmp_path / "nodata")]) == 0
        reused = json.loads(capsys.readouterr().out)
        assert srv.requests == {rel: 1}
    assert main([*args, "--data-dir", str(data_dir)]) == 0
    local = json.loads(capsys.readouterr().out)
    assert {k: fetched[k] for k in metrics} == {k: local[k] for k in metrics} == {k: reused[k] for k in metrics}


def test_simulate_download_refetches_a_corrupted_download(data_dir, tmp_path, capsys, monkeypatch):
    # issue 26 item 24: the checksum error said "re-download it", but --download reused the damaged file
    monkeypatch.chdir(tmp_path)
    rel = KNOWN_TRACES["burstgpt"].relpath
    damaged = tmp_path / "resources" / "traces" / rel
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"damaged")
    args = ["simulate", "--trace", "burstgpt", "--requests", "50", "--workers", "2", "--data-dir", str(tmp_path / "no")]
    assert main(args) == 2
    assert "rerun with --download" in capsys.readouterr().err
    with TraceServer(data_dir) as srv:
        monkeypatch.setenv(BASE_URL_ENV, srv.url)
        assert main([*args, "--download"]) == 0
        assert srv.requests == {rel: 1}
    assert damaged.read_bytes() == (data_dir / rel).read_bytes()


def test_pipeline_checksum_error_says_how_to_recover(tmp_path):
    from bfio.ground.errors import ChecksumError
    from bfio.runs.experiments import prepare_trace

    bad = tmp_path / "burst.json"
    bad.write_text("{}")
    with pytest.raises(ChecksumError, match="download_trace fetches it again.*download=true"):
        prepare_trace("burstgpt", bad, tmp_path / "t.parquet", tmp_path / "s.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["burst.json"]


def test_traces_lists_present_missing_downloadable(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with TraceServer(data_dir) as srv:
        monkeypatch.setenv(BASE_URL_ENV, srv.url)
        assert main(["traces", "--data-dir", str(tmp_path / "nodata")]) == 0
        rows = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines()[1:]}
        assert srv.requests == {}
        assert main(["traces", "--data-dir", str(tmp_path / "nodata"), "--download"]) == 0
        after = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines()[1:]}
        public = [n for n, s in KNOWN_TRACES.items() if s.url]
        assert srv.requests == {KNOWN_TRACES[n].relpath: 1 for n in public}
    assert set(rows) == set(KNOWN_TRACES)
    for name, spec in KNOWN_TRACES.items():
        assert rows[name][1] == "missing"
        assert rows[name][2] == ("downloadable" if spec.url else "local-only")
        assert after[name][1] == ("downloaded" if spec.url else "missing"), after[name]
    assert main(["traces", "--data-dir", str(data_dir)]) == 0
    present = [ln.split() for ln in capsys.readouterr().out.splitlines()[1:]]
    assert all(r[1] == "present" and r[3].startswith(str(data_dir)) for r in present)


# -- issue 26, items 14 and 15: an overall deadline, a size cap, no stale partial files -----------
def test_a_trickling_server_hits_the_attempts_deadline(served, tmp_path, monkeypatch):
    import bfio.traces.download

    root, data, digest = served
    monkeypatch.setattr(bfio.traces.download, "DEADLINE_TIMEOUTS", 4)  # 4 x 0.5 s per attempt
    dest = tmp_path / "out" / "file.bin"
    t0 = time.monotonic()
    with TraceServer(root, "trickle") as srv:
        with pytest.raises(DownloadError, match="deadline"):
            fetch(f"{srv.url}/{REL}", dest, digest, timeout=0.5, attempts=1)
    assert time.monotonic() - t0 < 15
    assert leftovers(dest.parent) == []


def test_an_endless_stream_stops_at_the_pinned_size(served, tmp_path):
    root, data, digest = served
    dest = tmp_path / "out" / "file.bin"
    with TraceServer(root, "endless") as srv:
        with pytest.raises(ChecksumError, match="more than the pinned 300,000 bytes"):
            fetch(f"{srv.url}/{REL}", dest, digest, timeout=5, attempts=3, size=len(data))
        assert srv.requests[REL] == 1  # another file than the pinned one: not retried
    assert leftovers(dest.parent) == []


def test_a_partial_file_of_a_killed_download_is_removed(served, tmp_path):
    root, data, digest = served
    dest = tmp_path / "out" / "file.bin"
    dest.parent.mkdir(parents=True)
    (dest.parent / ".file.bin.abc123.part").write_bytes(b"half")
    with TraceServer(root) as srv:
        fetch(f"{srv.url}/{REL}", dest, digest, timeout=5)
    assert leftovers(dest.parent) == ["file.bin"]
