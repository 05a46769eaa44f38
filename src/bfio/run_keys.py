"""Run keys: the one module that writes, reads and labels the *row key* of a
run (the ``row`` of a results table and the ``<row>`` of a run path such as
``longbench/n80000-g256-b72/bfio_h40/seed42``).

A row key is

- a baseline's policy name (``fcfs``, ``jsq_tokens``, ...; the policy registry,
  :func:`bfio.policies.baselines`);
- ``bfio_h<H>``: BF-IO with lookahead ``H`` and the default objective
  (Section 4; ``docs/bfio.md``);
- ``bfio_h<H>_literal``: the same with Eq. (IO) as printed (objective
  ``paper-literal``: ``delta = 1``, new requests persist);
- ``bfio_h<H>_<admission>`` (``bfio_h40_aging200``): the starvation study's
  BF-IO rows with an admission rule.

Keys are made by :func:`row_key` and read back by :func:`parse_bfio_row`,
:func:`parse_admission_row` and :func:`bfio_row_options` only; tables and
figures read the ``horizon`` and ``objective`` columns a run stores
(:func:`bfio.experiments.run_one`; :func:`bfio.tables.stored_keys`), never
the key. The one exception is a file that stores no objective: the
per-experiment summaries (``results/tables/<experiment>_summary.csv``, which
keep their columns so results stay byte-identical), whose objective the
horizon-sweep figure reads from the key (:mod:`bfio.figures.horizon_sweep`).
:func:`row_label` is the key's display label (``BF-IO (H=40)``).
"""

from __future__ import annotations

import re
from typing import Callable

from bfio.admission import ADMISSIONS, parse_admission
from bfio.discount import OBJECTIVES

#: Suffix of a paper-literal BF-IO row key (``bfio_h40_literal``).
LITERAL_SUFFIX = "_literal"
#: Regular expression of a BF-IO row key (the policy registry's keyed rows,
#: :data:`bfio.policies.KEYED_ROWS`, and the config schema's row pattern).
BFIO_ROW_PATTERN = "bfio_h([0-9]+)(" + LITERAL_SUFFIX + ")?"
_BFIO_ROW = re.compile(f"^{BFIO_ROW_PATTERN}$")
#: A row of the starvation study, ``bfio_h<H>_<admission>``: the admission rules' registry.
_ADMISSION_ROW = re.compile(r"^bfio_h(\d+)_(" + "|".join(ADMISSIONS) + r")(\d*)$")


def row_key(policy: str, horizon: int | None = None, objective: str = "default", admission: str | None = None) -> str:
    """``('bfio', 40)`` -> ``'bfio_h40'``; ``('bfio', 40, 'paper-literal')`` -> ``'bfio_h40_literal'``;
    ``('bfio', 40, admission='aging:200')`` -> ``'bfio_h40_aging200'`` (the starvation study's rows,
    :func:`parse_admission_row`); any other policy -> its name."""
    if policy != "bfio":
        return policy
    key = f"bfio_h{int(horizon)}" + (LITERAL_SUFFIX if objective == "paper-literal" else "")
    return key if admission is None else f"{key}_{admission_label(admission)}"


def admission_label(admission: str) -> str:
    """Path- and label-safe form of a BF-IO admission rule: ``'aging:200'`` -> ``'aging200'``
    (raises :class:`~bfio.errors.ConfigError` for an unknown rule)."""
    parse_admission(admission)
    return admission.replace(":", "")


def parse_admission_row(row: str) -> tuple[int, str] | None:
    """``'bfio_h40_aging200'`` -> ``(40, 'aging:200')``, ``'bfio_h0_free'`` -> ``(0, 'free')``,
    anything else -> ``None`` (the inverse of :func:`row_key` with ``admission``)."""
    m = _ADMISSION_ROW.match(str(row))
    if not m:
        return None
    return int(m.group(1)), m.group(2) + (f":{m.group(3)}" if m.group(3) else "")


def parse_bfio_row(row: str) -> tuple[int, str] | None:
    """``'bfio_h40'`` -> ``(40, 'default')``, ``'bfio_h40_literal'`` -> ``(40, 'paper-literal')``,
    anything else -> ``None``."""
    m = _BFIO_ROW.match(str(row))
    if not m:
        return None
    return int(m.group(1)), ("paper-literal" if m.group(2) else "default")


def paper_row(row: str) -> str:
    """The printed row a run row is compared with (``bfio_h40_literal`` -> ``bfio_h40``)."""
    p = parse_bfio_row(row)
    return row_key("bfio", p[0]) if p else row


def bfio_row_options(row: str) -> dict:
    """Policy options a BF-IO row key fixes: its horizon and, for ``_literal``, the
    paper-literal objective (``delta = 1``, persisting new requests)."""
    H, objective = parse_bfio_row(row)
    if objective == "paper-literal":
        return {"horizon": H, "objective": objective, **OBJECTIVES[objective]}
    return {"horizon": H}


def row_label(row: str, policy_label: Callable[[str], str] = str) -> str:
    """Paper-style label of a row key: ``BF-IO (H=40)``, ``BF-IO (H=40, paper-literal)``;
    another key is shown by ``policy_label(key)`` (the policy registry's label,
    :func:`bfio.policies.policy_label`, passed in by the caller)."""
    p = parse_bfio_row(row)
    if p:
        name = policy_label("bfio")
        return f"{name} (H={p[0]})" if p[1] == "default" else f"{name} (H={p[0]}, {p[1]})"
    return policy_label(row)


__all__ = ["LITERAL_SUFFIX", "BFIO_ROW_PATTERN", "row_key", "admission_label", "parse_admission_row",
           "parse_bfio_row", "paper_row", "bfio_row_options", "row_label"]
