"""The paper's printed Table 1 and Table 2 values: targets to compare against,
never inputs to any computation.

Each row maps a metric to ``(printed value, scale)`` where the value in SI
units (imbalance in tokens, throughput in tokens/s, TPOT in s/token, energy in
J) is ``printed * scale``. ``printed`` keeps the paper's digits so a
comparison can round ours to the same number of significant digits.
"""

from __future__ import annotations

import re


# Scales of the printed units (paper Table 1 and Table 2 headers).
TABLE1_UNITS = {"avg_imbalance": (1e8, "x1e8 tokens"), "throughput": (1e3, "1e3 tok/s"),
                "tpot": (1.0, "s/tok"), "energy_j": (1e6, "MJ")}
TABLE2_UNITS = {"avg_imbalance": (1e4, "x1e4 tokens"), "throughput": (1e4, "1e4 tok/s"),
                "tpot": (1e-2, "1e-2 s/tok"), "energy_j": (1e3, "kJ")}

# Printed values (as strings, to keep the printed digits).
TABLE1 = {
    "fcfs": {"avg_imbalance": "37.0", "throughput": "5.47", "tpot": "2.97", "energy_j": "29.1"},
    "jsq_tokens": {"avg_imbalance": "28.5", "throughput": "6.15", "tpot": "2.64", "energy_j": "27.8"},
    "bfio_h0": {"avg_imbalance": "9.94", "throughput": "8.55", "tpot": "1.93", "energy_j": "23.4"},
    "bfio_h20": {"avg_imbalance": "3.03", "throughput": "10.1", "tpot": "1.70", "energy_j": "21.3"},
    "bfio_h40": {"avg_imbalance": "2.49", "throughput": "10.5", "tpot": "1.67", "energy_j": "20.6"},
    "bfio_h60": {"avg_imbalance": "2.44", "throughput": "10.4", "tpot": "1.66", "energy_j": "20.9"},
    "bfio_h80": {"avg_imbalance": "2.43", "throughput": "10.4", "tpot": "1.70", "energy_j": "21.0"},
    "bfio_h100": {"avg_imbalance": "2.51", "throughput": "10.4", "tpot": "1.67", "energy_j": "20.9"},
}
TABLE2 = {
    "fcfs": {"avg_imbalance": "27.9", "throughput": "8.00", "tpot": "1.42", "energy_j": "396"},
    "jsq_tokens": {"avg_imbalance": "28.2", "throughput": "7.99", "tpot": "1.42", "energy_j": "396"},
    "bfio_h0": {"avg_imbalance": "2.92", "throughput": "9.03", "tpot": "1.26", "energy_j": "386"},
    "bfio_h20": {"avg_imbalance": "1.65", "throughput": "9.13", "tpot": "1.25", "energy_j": "383"},
}

# Experiment settings of the two tables (Section 6 and Appendix D).
TABLE_SETTINGS = {
    "table1": {"trace": "longbench", "requests": 80_000, "seed": 42, "workers": 256, "slots": 72,
               "horizons": [0, 20, 40, 60, 80, 100], "values": TABLE1, "units": TABLE1_UNITS},
    "table2": {"trace": "burstgpt", "requests": 100_000, "seed": 42, "workers": 16, "slots": 72,
               "horizons": [0, 20], "values": TABLE2, "units": TABLE2_UNITS},
}

# BF-IO options of the paper's experiments: oracle decode lengths, Eq. (IO) with free
# admission (the library's default admission is aging:200, see bfio.policies.bfio) and the
# project's default objective (bfio.solvers.objective; the printed IO is the
# 'paper-literal' objective, rows bfio_h<H>_literal).
PAPER_BFIO_OPTIONS = {"predictor": "oracle", "solver": "fast", "admission": "free", "objective": "default"}

# Direction in which a metric is better.
HIGHER_IS_BETTER = {"avg_imbalance": False, "throughput": True, "tpot": False, "energy_j": False}


def printed_digits(printed: str) -> int:
    """Significant digits of a printed number such as ``'2.97'`` (3) or ``'396'`` (3)."""
    digits = printed.replace(".", "").lstrip("0")
    return max(1, len(digits))


def round_like(value: float, printed: str, scale: float) -> str:
    """Our SI ``value`` in the paper's unit, rounded to the printed digits."""
    x = value / scale
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return f"{x:.{decimals}f}"


def matches_printed(value: float, printed: str, scale: float) -> bool:
    """True when ``value`` rounds to exactly the paper's printed digits."""
    return round_like(value, printed, scale) == printed


def at_least_as_good(value: float, printed: str, scale: float, metric: str) -> bool:
    """``value`` equal to the printed value at printed precision, or better."""
    if matches_printed(value, printed, scale):
        return True
    ref = float(printed) * scale
    return value > ref if HIGHER_IS_BETTER[metric] else value < ref


# Row keys of BF-IO: bfio_h<H> (the default objective) and bfio_h<H>_literal (Eq. (IO) as
# printed, objective 'paper-literal'). Produced by row_key, parsed by parse_bfio_row only.
LITERAL_SUFFIX = "_literal"
#: Regular expression of a BF-IO row key (also the policy registry's, :data:`bfio.policies.KEYED_ROWS`).
BFIO_ROW_PATTERN = "bfio_h([0-9]+)(" + LITERAL_SUFFIX + ")?"
_BFIO_ROW = re.compile(f"^{BFIO_ROW_PATTERN}$")
_ADMISSION_ROW = re.compile(r"^bfio_h(\d+)_(free|fifo|aging)(\d*)$")


def row_key(policy: str, horizon: int | None = None, objective: str = "default", admission: str | None = None) -> str:
    """``('bfio', 40)`` -> ``'bfio_h40'``; ``('bfio', 40, 'paper-literal')`` -> ``'bfio_h40_literal'``;
    ``('bfio', 40, admission='aging:200')`` -> ``'bfio_h40_aging200'`` (the starvation study's rows,
    :func:`parse_admission_row`)."""
    if policy != "bfio":
        return policy
    key = f"bfio_h{int(horizon)}" + (LITERAL_SUFFIX if objective == "paper-literal" else "")
    return key if admission is None else f"{key}_{admission_label(admission)}"


def admission_label(admission: str) -> str:
    """Path- and label-safe form of a BF-IO admission rule: ``'aging:200'`` -> ``'aging200'``
    (raises :class:`~bfio.errors.ConfigError` for an unknown rule)."""
    from bfio.solvers.instance import parse_admission

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
    from bfio.solvers.objective import OBJECTIVES

    H, objective = parse_bfio_row(row)
    if objective == "paper-literal":
        return {"horizon": H, "objective": objective, **OBJECTIVES[objective]}
    return {"horizon": H}


def compare_to_printed(value: float, printed: str, scale: float, metric: str) -> str:
    """``'equal'`` (``value`` rounds to the printed digits), else ``'better'`` or
    ``'worse'`` than the printed value in the metric's direction."""
    if matches_printed(value, printed, scale):
        return "equal"
    ref = float(printed) * scale
    return "better" if (value > ref if HIGHER_IS_BETTER[metric] else value < ref) else "worse"


__all__ = ["TABLE1", "TABLE2", "TABLE_SETTINGS", "HIGHER_IS_BETTER", "printed_digits", "round_like",
           "compare_to_printed", "matches_printed", "at_least_as_good", "row_key", "parse_bfio_row", "admission_label", "parse_admission_row", "paper_row",
           "bfio_row_options", "LITERAL_SUFFIX", "BFIO_ROW_PATTERN"]
