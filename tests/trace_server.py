"""A local HTTP server on the loopback interface serving a directory, for the
download tests (the machines have no internet). Besides serving files it can
misbehave: send a corrupted file, drop the connection mid-file, never
answer, trickle one byte every 0.2 s, or stream without end. It counts the requests per path."""

from __future__ import annotations

import collections
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

#: What the server does with a GET of an existing file.
MODES = ("ok", "corrupt", "drop", "hang", "trickle", "endless")


def corrupted(data: bytes) -> bytes:
    """The bytes the server sends in mode 'corrupt': the middle byte flipped
    (same length, so only the digest can tell)."""
    i = len(data) // 2
    return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server API)
        srv = self.server
        rel = unquote(urlparse(self.path).path).lstrip("/")
        with srv.lock:
            srv.requests[rel] += 1
            n = srv.requests[rel]
        mode = srv.modes.get(rel, srv.mode) if n <= srv.good_after else "ok"
        path = (srv.root / rel).resolve()
        if srv.root not in path.parents or not path.is_file():
            self.send_error(404)
            return
        if mode == "hang":  # accept the request, never answer
            srv.release.wait(60)
            return
        data = path.read_bytes()
        if mode in ("trickle", "endless"):  # one byte every 0.2 s / bytes without end, no length
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            try:
                while not srv.release.is_set():
                    if mode == "trickle":
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        srv.release.wait(0.2)
                    else:
                        self.wfile.write(b"x" * 65536)
            except OSError:  # the client gave up
                pass
            return
        if mode == "corrupt":
            data = corrupted(data)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode == "drop":  # half the announced bytes, then close
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class TraceServer:
    """``with TraceServer(root, mode) as srv:`` serves ``root`` at ``srv.url``
    (``http://127.0.0.1:<port>``). ``mode`` applies to every request, or only
    to the first ``bad_requests`` of each path (``ok`` afterwards); ``modes``
    (relative path -> mode) overrides it per file."""

    def __init__(self, root, mode: str = "ok", bad_requests: int | None = None, modes: dict | None = None):
        assert mode in MODES and set((modes or {}).values()) <= set(MODES), (mode, modes)
        self._srv = _Server(("127.0.0.1", 0), _Handler)
        self._srv.root = Path(root).resolve()
        self._srv.mode = mode
        self._srv.modes = dict(modes or {})
        self._srv.good_after = bad_requests if bad_requests is not None else float("inf")
        self._srv.requests = collections.Counter()
        self._srv.lock = threading.Lock()
        self._srv.release = threading.Event()
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}"
        self._thread = threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def requests(self) -> collections.Counter:
        """GET requests per relative path so far."""
        with self._srv.lock:
            return collections.Counter(self._srv.requests)

    def __enter__(self) -> "TraceServer":
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._srv.release.set()
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join(5)
