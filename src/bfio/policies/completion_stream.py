"""Option ``completions`` of every router with instant dispatch (issue 44, equal
information): what a router on lagged load reports (``report_interval`` K >= 1)
knows of the requests that finished since the last report.

- ``reported`` (the default; what vLLM's and SGLang's routers do): nothing. A
  finished request still counts on its rank, with the tokens and the slot the
  report gave it, until the next report.
- ``streamed``: the router sits in the output path (an engine's front end
  returns every request's last token), so it knows a request finished at the step
  it finishes, and takes it off the rank it counted it on: the report's
  ``loads`` less the tokens the report counted for it (``s_i + tau_i`` at the
  report, less its prompt's chunks still to compute then with the prefill model),
  one fewer ``running`` and one more ``free`` slot; or, when the report
  had it queued or the router bound it after the report, one fewer ``waiting`` and
  its prompt off ``waiting_tokens``. BF-IO drops it from the report's running
  requests and queues. Nothing else the stream carries is used: admissions and
  decode growth stay as reported (BF-IO's ``report_age: advance`` predicts them).

The state kept is per router (:class:`CompletionStream`): the rank each request
is counted on (the rank the report saw it running or queued on, else the rank the
router bound it to since: a request an engine moved between ranks, issue 45's
queue moves or migrations, is counted where the report saw it), and per report
the tokens each running request held then.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bfio.ground.options import Option

#: the values of option ``completions`` (module docstring)
COMPLETIONS = ("reported", "streamed")

COMPLETIONS_OPTION = Option(
    "completions", str, "reported",
    "with lagged reports (report_interval K >= 1): reported (a finished request counts until the next report, "
    "as vLLM's and SGLang's routers) | streamed (the router sees each request's last token in the output stream "
    "and takes it off its rank at once)",
    choices=COMPLETIONS, identity="non-default",
    doc="With instant dispatch on lagged reports (`report_interval` K >= 1): what the router knows of the "
        "requests finished since the last report. `reported` (the engines' routers): nothing, a finished "
        "request counts on its rank until the next report; `streamed`: the router is in the output path and "
        "takes a request off the rank it counted it on when its last token comes out "
        "(`bfio.policies.completion_stream`). No effect with the exact state (K = 0).")


class CompletionStream:
    """What option ``completions: streamed`` keeps (module docstring): ``rank[i]``
    the rank request ``i`` is counted on (-1: none yet), ``held[i]`` the tokens the
    current report counted for ``i`` running (-1: not running in it), ``done[i]``
    whether ``i`` has finished, and the per-rank corrections of the current report.
    Invariant: the corrections sum, per rank, what the report (with the router's
    bindings since) counted of the requests finished since it was taken, each once,
    on the rank it counted them on."""

    def __init__(self):
        self.reset()

    def _size(self, n: int, workers: int) -> None:
        if self.n != n or self.removed_loads.shape[0] != workers:
            self.n = n
            self.rank = np.full(n, -1, dtype=np.int64)
            self.held = np.full(n, -1, dtype=np.int64)
            self.done = np.zeros(n, dtype=bool)
            self.seen = 0
            self._zero(workers)

    def _zero(self, workers: int) -> None:
        self.removed_loads = np.zeros(workers, dtype=np.int64)
        self.removed_running = np.zeros(workers, dtype=np.int64)
        self.removed_waiting = np.zeros(workers, dtype=np.int64)
        self.removed_waiting_tokens = np.zeros(workers, dtype=np.int64)
        self.removed_prompt = np.zeros(workers, dtype=np.int64)

    def reset(self) -> None:
        self.n = -1
        self.removed_loads = np.zeros(0, dtype=np.int64)

    def bind(self, state, requests: np.ndarray, workers: np.ndarray) -> None:
        """The router bound ``requests`` to ``workers`` (its own choice: the front end knows it)."""
        self._size(len(state.workload), state.workers)
        self.rank[np.asarray(requests, dtype=np.int64)] = np.asarray(workers, dtype=np.int64)

    def new_report(self, state, queues: list[list[int]] | None = None) -> None:
        """A report is taken from ``state``: where it counts each running and queued
        request, what it counts of each running one, and no correction yet (it counts
        no finished request). ``queues``: the state's queues when the caller has
        walked them already (``state.queue_lists()``)."""
        self._size(len(state.workload), state.workers)
        self._observe(state)
        self.held.fill(-1)
        if state.slot_request is None:
            raise RuntimeError("completions: streamed needs the running requests of the state (slot_request)")
        sr = np.asarray(state.slot_request)
        g, b = np.nonzero(sr >= 0)
        ids = sr[g, b]
        # what the report's L_g counts of each: s_i + tau_i, less the prompt's chunks still
        # to compute with the prefill model (its CacheView)
        self.held[ids] = (state.workload.prefill[ids] + state.generated[ids] if state.prefill is None
                          else state.prefill.resident_tokens(ids, state.generated))
        self.rank[ids] = g
        # the queued ones where the report has them (else as bound)
        for g, queue in enumerate(state.queue_lists() if queues is None else queues):
            self.rank[queue] = g
        self._zero(state.workers)

    def _observe(self, state) -> np.ndarray:
        """The requests finished since the last call (``state.completed``, in order)."""
        new = np.asarray(state.completed[self.seen:], dtype=np.int64)
        self.seen = len(state.completed)
        self.done[new] = True
        return new

    def update(self, state) -> None:
        """Take the requests finished since the last call off the ranks the report
        counted them on (the module docstring's rule)."""
        self._size(len(state.workload), state.workers)
        new = self._observe(state)
        if new.size == 0:
            return
        rank = self.rank[new]
        if (rank < 0).any():
            raise RuntimeError(f"completions: streamed: request {int(new[rank < 0][0])} finished but no report "
                               "counted it and this router never bound it (a router's stream must see every binding)")
        running = self.held[new] >= 0
        np.add.at(self.removed_loads, rank[running], self.held[new][running])
        np.add.at(self.removed_running, rank[running], 1)
        np.add.at(self.removed_prompt, rank[running], state.workload.prefill[new[running]])
        np.add.at(self.removed_waiting, rank[~running], 1)
        np.add.at(self.removed_waiting_tokens, rank[~running], state.workload.prefill[new[~running]])

    def adjust(self, view):
        """The report ``view`` (a :class:`~bfio.policies.base.DispatchState`) less the
        finished requests (per-rank arrays only)."""
        prompt = view.running_prompt_tokens
        return replace(view, loads=view.loads - self.removed_loads, running=view.running - self.removed_running,
                       free=view.free + self.removed_running, waiting=view.waiting - self.removed_waiting,
                       waiting_tokens=view.waiting_tokens - self.removed_waiting_tokens,
                       running_prompt_tokens=None if prompt is None else prompt - self.removed_prompt)

    def drop_finished(self, slot_request: np.ndarray, queues: list[list[int]]) -> tuple[np.ndarray, list[list[int]]]:
        """A report's running requests (``slot_request``, a copy is returned) and queues
        without the finished requests (what BF-IO reads, slot by slot)."""
        sr = np.array(slot_request, copy=True)
        sr[(sr >= 0) & self.done[np.where(sr >= 0, sr, 0)]] = -1
        return sr, [[i for i in q if not self.done[i]] for q in queues]


__all__ = ["COMPLETIONS", "COMPLETIONS_OPTION", "CompletionStream"]
