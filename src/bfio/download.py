"""Fetching the known traces from their pinned public sources.

One job: copy a URL to a file whose sha256 is pinned, so that a file at the
destination is always complete and verified. :func:`fetch` streams the
response into a temporary file in the destination directory, hashing while it
writes, checks the byte count against ``Content-Length`` and the digest against
the pinned one, and only then renames the file into place (``os.replace``).
Connection errors, timeouts, short reads and HTTP 408/429/5xx are retried with
exponential backoff; a digest mismatch is not (the server sends another file).
On every failure path the temporary file is removed: nothing half-written is
left behind.

Used by the pipeline's ``download_trace`` rule (config keys ``download*``,
``workflow/rules/traces.smk``) and by ``bfio simulate --download`` /
``bfio traces --download``.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from bfio.ground.errors import ChecksumError, DownloadError
from bfio.traces.registry import TraceSpec, sha256_of

#: Environment variable naming a mirror of the data directory (overrides every
#: trace's pinned host; the config key ``download_url_base`` takes precedence).
BASE_URL_ENV = "BFIO_TRACE_BASE_URL"
#: Where downloaded traces go unless told otherwise (the pipeline's default
#: ``download_dir``, relative to the working directory).
DEFAULT_DOWNLOAD_DIR = "resources/traces"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF_S = 2.0
#: Slowest transfer an attempt accepts, in bytes per second: an attempt of a file
#: of known size must end within ``timeout + size / MIN_RATE_BPS`` seconds (a
#: server that trickles a byte now and then never trips the idle timeout).
MIN_RATE_BPS = 16_384
#: Without a known size an attempt ends after this many idle timeouts in all.
DEADLINE_TIMEOUTS = 20
_CHUNK = 1 << 16

log = logging.getLogger("bfio.traces.download")


class _ShortRead(OSError):
    """The connection ended before ``Content-Length`` bytes arrived."""


def base_url(configured: str | None = None) -> str | None:
    """The mirror to fetch from: ``configured`` (config key
    ``download_url_base``) if set, else ``$BFIO_TRACE_BASE_URL``, else ``None``
    (each trace's pinned source)."""
    return configured or os.environ.get(BASE_URL_ENV) or None


def trace_url(spec: TraceSpec, base: str | None = None) -> str | None:
    """Where to fetch ``spec`` from: ``<base>/<relpath>`` when a mirror is
    given (a server with the data directory's layout), else its pinned public
    source; ``None`` for a trace without one (derived locally: never fetched,
    even from a mirror)."""
    if not spec.url:
        return None
    if base:
        return base.rstrip("/") + "/" + urllib.parse.quote(spec.relpath)
    return spec.url


def _retryable(e: BaseException) -> bool:
    if isinstance(e, urllib.error.HTTPError):
        return e.code in (408, 429) or e.code >= 500
    return isinstance(e, (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException,
                          _ShortRead, _TooSlow))


def _describe(e: BaseException, timeout: float) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, _ShortRead):
        return str(e)
    reason = e.reason if isinstance(e, urllib.error.URLError) else e
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g} s (timeout)"
    if isinstance(e, http.client.IncompleteRead):
        got = len(e.partial) if isinstance(e.partial, (bytes, bytearray)) else e.partial
        return f"connection closed mid-file ({got} bytes read)"
    if isinstance(e, _TooSlow):
        return str(e)
    return f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__


class _TooSlow(OSError):
    """An attempt went past its overall deadline (retryable, like a timeout)."""


def attempt_deadline(timeout: float, size: int | None) -> float:
    """Seconds one attempt may take in all (:data:`MIN_RATE_BPS`, :data:`DEADLINE_TIMEOUTS`)."""
    return timeout + size / MIN_RATE_BPS if size else timeout * DEADLINE_TIMEOUTS


def _fetch_once(url: str, dest: Path, sha256: str, timeout: float, size: int | None = None) -> int:
    """One attempt: download (at most ``size`` bytes, within
    :func:`attempt_deadline`), verify, rename. Returns the byte count."""
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(name)
    deadline = time.monotonic() + attempt_deadline(timeout, size)
    try:
        h = hashlib.sha256()
        n = 0
        req = urllib.request.Request(url, headers={"User-Agent": "bfio-trace-download"})
        with os.fdopen(fd, "wb") as f, urllib.request.urlopen(req, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            while chunk := resp.read1(_CHUNK):
                h.update(chunk)
                f.write(chunk)
                n += len(chunk)
                if size is not None and n > size:
                    raise ChecksumError(dest, f"downloaded from {url}: more than the pinned {size:,} bytes "
                                              "arrived; the server sends another file than the pinned trace, "
                                              "so nothing was written")
                if time.monotonic() > deadline:
                    raise _TooSlow(f"slower than {MIN_RATE_BPS:,} bytes/s: {n:,} bytes in "
                                   f"{attempt_deadline(timeout, size):.0f} s (the attempt's deadline)")
        if length is not None and length.isdigit() and n != int(length):
            raise _ShortRead(f"connection closed mid-file: {n} of {int(length)} bytes received")
        actual = h.hexdigest()
        if actual != sha256:
            raise ChecksumError(dest, f"downloaded from {url}: sha256 is {actual}, expected {sha256} "
                                      f"({n} bytes); the server sent another file than the pinned trace, "
                                      "so nothing was written")
        os.replace(tmp, dest)
        return n
    finally:
        if tmp.exists():
            tmp.unlink()


def fetch(url: str, dest, sha256: str, *, timeout: float = DEFAULT_TIMEOUT_S, attempts: int = DEFAULT_ATTEMPTS,
          backoff: float = DEFAULT_BACKOFF_S, sleep=time.sleep, size: int | None = None) -> Path:
    """Download ``url`` to ``dest``, verified against ``sha256``; return ``dest``.

    ``timeout``: seconds without an answer (connect or next bytes) before an
    attempt is abandoned; ``attempts``: tries in all; ``backoff``: seconds
    before the second try, doubled before each further one. Raises
    :class:`~bfio.ground.errors.ChecksumError` (URL, expected and actual digest) on a
    digest mismatch and :class:`~bfio.ground.errors.DownloadError` (URL, attempts,
    last error) when every attempt failed; ``dest`` is then untouched (an
    earlier file stays, no partial file appears). ``size`` (the pinned byte
    count): more bytes stop the attempt at once (a checksum error, not retried),
    and an attempt ends by :func:`attempt_deadline`. Partial files that a killed
    earlier download left beside ``dest`` are removed first.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    dest = Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(f"cannot download {url}: cannot create directory {dest.parent} "
                            f"({e.strerror or e})") from None
    for stale in dest.parent.glob(f".{dest.name}.*.part"):  # left by a killed download
        stale.unlink(missing_ok=True)
    for attempt in range(1, attempts + 1):
        t0 = time.perf_counter()
        try:
            n = _fetch_once(url, dest, sha256, timeout, size)
        except ChecksumError:
            raise
        except Exception as e:  # noqa: BLE001 (classified below)
            if not _retryable(e):
                if isinstance(e, urllib.error.HTTPError) or not isinstance(e, OSError):
                    raise DownloadError(f"cannot download {url} to {dest}: {_describe(e, timeout)}") from e
                raise DownloadError(f"cannot download {url} to {dest}: cannot write in {dest.parent} "
                                    f"({e.strerror or e})") from e
            what = _describe(e, timeout)
            if attempt == attempts:
                raise DownloadError(f"cannot download {url} to {dest}: {attempts} attempt"
                                    f"{'s' if attempts > 1 else ''} failed, the last with: {what}; "
                                    "nothing was written") from e
            wait = backoff * 2 ** (attempt - 1)
            log.warning("download %s: attempt %d/%d failed (%s); retrying in %.1f s", url, attempt, attempts,
                        what, wait)
            sleep(wait)
            continue
        log.info("downloaded %s to %s: %d bytes in %.2f s, sha256 %s verified", url, dest, n,
                 time.perf_counter() - t0, sha256)
        return dest
    raise AssertionError("unreachable")  # pragma: no cover


def fetch_trace(spec: TraceSpec, download_dir=DEFAULT_DOWNLOAD_DIR, *, base: str | None = None,
                **kwargs) -> Path:
    """Known trace ``spec`` at ``download_dir/<relpath>``: reused when the file
    there already has the pinned sha256, else fetched (:func:`fetch`, keyword
    arguments passed on) from its source or the mirror ``base``
    (:func:`base_url`). A trace without a public source raises
    :class:`~bfio.ground.errors.DownloadError`."""
    dest = Path(download_dir) / spec.relpath
    url = trace_url(spec, base_url(base))
    if url is None:
        raise DownloadError(f"trace '{spec.name}' has no public download source (it is derived locally); "
                            f"put {spec.relpath} under the data directory")
    if dest.is_file() and (spec.size is None or dest.stat().st_size == spec.size) and sha256_of(dest) == spec.sha256:
        return dest
    return fetch(url, dest, spec.sha256, **{"size": spec.size, **kwargs})


__all__ = ["fetch", "fetch_trace", "trace_url", "base_url", "BASE_URL_ENV", "DEFAULT_DOWNLOAD_DIR",
           "DEFAULT_TIMEOUT_S", "DEFAULT_ATTEMPTS", "DEFAULT_BACKOFF_S"]
