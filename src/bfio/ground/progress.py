"""Progress of long runs.

* On a terminal, :func:`progress` shows a tqdm bar (quiet when ``CI`` is set or
  stderr is not a terminal, e.g. inside a pipeline job).
* Inside :func:`log_progress` (every pipeline script runs in it, see
  :func:`script_log`) every bar also writes its progress to a
  logger: ``done / total (percent), elapsed, ETA`` at most every ``every_s``
  seconds (and once more when it completes), so a job's log file shows how
  far it is.
* :class:`CallProgress` reports calls of unknown number (BF-IO's exact-solver
  calls): count, mean time per call, elapsed, every
  :data:`CALL_PROGRESS_EVERY_S` seconds to stderr (quiet when ``CI`` is set)
  or to the job's log.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import importlib.util
import logging
import os
import sys
import time
import traceback
from pathlib import Path


@functools.cache
def _tqdm():
    """tqdm's bar class, imported with the first bar or line: a pipeline job
    that shows none (a table's, a figure's) never pays its 40-50 ms (issue 42).
    tqdm.auto picks the notebook widget bar, which needs ipywidgets (else it
    warns "IProgress not found"): use it only when ipywidgets is importable."""
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm

#: (logger, minimum seconds between two lines) while :func:`log_progress` is active.
_SINK: list[tuple[logging.Logger, float]] = []


def progress_enabled() -> bool:
    return not os.environ.get("CI") and sys.stderr.isatty()


def format_eta(seconds: float) -> str:
    """``'42 s'``, ``'3.5 min'``, ``'1.2 h'``; ``'?'`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def progress_line(desc: str, done: float, total: float | None, elapsed: float) -> str:
    """``'simulate bfio: 400/1000 (40%), elapsed 12 s, ETA 18 s'``."""
    head = f"{desc}: " if desc else ""
    if not total:
        return f"{head}{done:g} done, elapsed {format_eta(elapsed)}"
    eta = elapsed / done * (total - done) if done > 0 else float("nan")
    return (f"{head}{done:g}/{total:g} ({100 * done / total:.0f}%), elapsed {format_eta(elapsed)}, "
            f"ETA {format_eta(eta)}")


@contextlib.contextmanager
def log_progress(logger: logging.Logger, every_s: float = 30.0):
    """While active, every :func:`progress` bar also logs to ``logger``."""
    if every_s < 0:
        raise ValueError(f"log_progress: every_s must be >= 0, got {every_s}")
    _SINK.append((logger, float(every_s)))
    try:
        yield logger
    finally:
        _SINK.pop()


class Progress:
    """A tqdm bar that also logs (see :func:`log_progress`); same ``update`` /
    ``close`` / context-manager use as tqdm."""

    def __init__(self, bar, desc: str, total, sink):
        self.bar, self.desc, self.total = bar, desc, total
        self.n = 0
        self._sink = sink
        self._t0 = self._last = time.perf_counter()
        self._logged_at = None

    def update(self, n: float = 1) -> None:
        self.n += n
        self.bar.update(n)
        if self._sink is None:
            return
        logger, every = self._sink
        now = time.perf_counter()
        finished = self.total is not None and self.n >= self.total
        # the closing line only for a bar that has logged before (a run longer
        # than every_s): short runs inside a batch stay out of the log
        if now - self._last >= every or (finished and self._logged_at is not None and self._logged_at != self.n):
            logger.info(progress_line(self.desc, self.n, self.total, now - self._t0))
            self._last, self._logged_at = now, self.n

    def close(self) -> None:
        self.bar.close()

    def __getattr__(self, name):
        if name == "bar":  # not yet set (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.bar, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def progress(total=None, desc: str = "", enabled: bool | None = None, log: bool = True, **kwargs) -> Progress:
    """A tqdm bar, disabled unless :func:`progress_enabled` (or ``enabled=True``);
    inside :func:`log_progress` it also logs its progress (unless ``log=False``:
    the caller logs each item itself)."""
    on = progress_enabled() if enabled is None else enabled
    bar = _tqdm()(total=total, desc=desc, disable=not on, leave=False, **kwargs)
    return Progress(bar, desc, total, _SINK[-1] if (_SINK and log) else None)




#: Seconds between two progress lines in a pipeline job's log.
PROGRESS_LOG_EVERY_S = 30.0

#: Seconds between two lines of a :class:`CallProgress` (exact-solver calls of BF-IO).
CALL_PROGRESS_EVERY_S = 30.0


class CallProgress:
    """Progress of a long sequence of calls whose number is not known in advance
    (the exact solver's routing calls of one BF-IO run: ``--solver gurobi`` or
    ``highs`` can take minutes before a request finishes and moves the
    simulation's bar). :meth:`record` counts a call and its duration; at most
    every ``every_s`` seconds (:data:`CALL_PROGRESS_EVERY_S` when ``None``, read
    at each call) it writes ``'<desc>: 120 calls, mean 0.35 s/call (max 2.1 s),
    step 340, elapsed 42 s'``: to the logger of :func:`log_progress` when one is
    active (a pipeline job's log), else to stderr unless ``CI`` is set (quiet,
    as the progress bars are)."""

    def __init__(self, desc: str, every_s: float | None = None, unit: str = "call"):
        self.desc, self.unit, self.every_s = desc, unit, every_s
        self.calls, self.total_s, self.max_s = 0, 0.0, 0.0
        self._t0 = self._last = time.perf_counter()
        self.lines = 0

    def line(self, step: int | None = None, extra: str = "", now: float | None = None) -> str:
        now = time.perf_counter() if now is None else now
        mean = self.total_s / self.calls if self.calls else float("nan")
        head = f"{self.desc}: " if self.desc else ""
        where = f", step {step}" if step is not None else ""
        return (f"{head}{self.calls} {self.unit}{'s' if self.calls != 1 else ''}, mean {mean:.3g} s/{self.unit} "
                f"(max {self.max_s:.3g} s){where}, elapsed {format_eta(now - self._t0)}"
                + (f"; {extra}" if extra else ""))

    def record(self, seconds: float, step: int | None = None, extra=None) -> str | None:
        """Count one call of ``seconds``; return the line written, if any.
        ``extra``: a string, or a callable giving one (only built when a line is due)."""
        self.calls += 1
        self.total_s += float(seconds)
        self.max_s = max(self.max_s, float(seconds))
        now = time.perf_counter()
        every = CALL_PROGRESS_EVERY_S if self.every_s is None else self.every_s
        if now - self._last < every:
            return None
        sink = _SINK[-1] if _SINK else None
        if sink is None and os.environ.get("CI"):
            return None
        self._last = now
        text = self.line(step, extra() if callable(extra) else (extra or ""), now)
        if sink is not None:
            sink[0].info(text)
        else:
            _tqdm().write(text, file=sys.stderr)  # above a terminal's bar, not through it
        self.lines += 1
        return text


_EXIT_HOOKED = False


def exit_without_collection() -> None:
    """At this process's exit, freeze the garbage collector (:func:`gc.freeze`;
    the other exit handlers, e.g. logging's flush, run as before): the
    interpreter's shutdown then frees what reference counting frees but no
    longer searches the whole heap for cycles, which in a job that loaded numba,
    pandas and the simulator cost 0.4-0.5 s CPU, a fifth of a smoke-scale
    simulation job. Only for a process with nothing left to finalize when it
    ends (a pipeline job: its outputs are written and closed); registered once."""
    global _EXIT_HOOKED
    if not _EXIT_HOOKED:
        atexit.register(gc.freeze)
        _EXIT_HOOKED = True


@contextlib.contextmanager
def script_log(path, name: str = "bfio"):
    """Send logging, stdout and stderr of a pipeline script to ``path`` (its
    Snakemake ``log:``); a failure is written there with its traceback.

    The job's process then exits without the interpreter's last garbage
    collection (:func:`exit_without_collection`)."""
    exit_without_collection()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        handler = logging.StreamHandler(f)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = f
        t0 = time.perf_counter()
        try:
            # every progress bar of the job (simulations, study batches) logs
            # "done/total, elapsed, ETA" here at least every 30 s
            with log_progress(logging.getLogger(name), every_s=PROGRESS_LOG_EVERY_S):
                yield logging.getLogger(name)
            logging.getLogger(name).info("done in %.2f s", time.perf_counter() - t0)
        except BaseException:
            traceback.print_exc(file=f)
            f.flush()
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err
            root.removeHandler(handler)


__all__ = ["progress", "progress_enabled", "log_progress", "progress_line", "format_eta", "Progress",
           "script_log", "exit_without_collection", "PROGRESS_LOG_EVERY_S", "CallProgress", "CALL_PROGRESS_EVERY_S"]
