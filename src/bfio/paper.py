"""The paper's printed Table 1 and Table 2 values: targets to compare against,
never inputs to any computation.

Each row maps a metric to ``(printed value, scale)`` where the value in SI
units (imbalance in tokens, throughput in tokens/s, TPOT in s/token, energy in
J) is ``printed * scale``. ``printed`` keeps the paper's digits so a
comparison can round ours to the same number of significant digits.
"""

from __future__ import annotations

from bfio.lookahead import run_keys

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
# admission and the greedy placement (the library defaults are drain:100 and auto, see
# bfio.policies.bfio) and the project's default objective (bfio.solvers.objective; the printed IO is the
# 'paper-literal' objective, rows bfio_h<H>_literal). The pipeline's are the `bfio` section of
# config/config.yaml; tests/test_config_readme.py checks the two agree.
PAPER_BFIO_OPTIONS = {"predictor": "oracle", "solver": "fast", "admission": "free", "objective": "default",
                      "placement": "greedy"}

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


def compare_to_printed(value: float, printed: str, scale: float, metric: str) -> str:
    """``'equal'`` (``value`` rounds to the printed digits), else ``'better'`` or
    ``'worse'`` than the printed value in the metric's direction."""
    if matches_printed(value, printed, scale):
        return "equal"
    ref = float(printed) * scale
    return "better" if (value > ref if HIGHER_IS_BETTER[metric] else value < ref) else "worse"


#: Row-key names this module used to hold, now in :mod:`bfio.lookahead.run_keys` (the one
#: module that writes and reads run keys); importing them from here still works
#: and warns (DeprecationWarning).
MOVED_TO_RUN_KEYS = ("row_key", "admission_label", "LITERAL_SUFFIX", "BFIO_ROW_PATTERN")


def __getattr__(name: str):
    if name in MOVED_TO_RUN_KEYS:
        import warnings

        warnings.warn(f"bfio.runs.paper.{name} moved to bfio.lookahead.run_keys.{name}", DeprecationWarning, stacklevel=2)
        return getattr(run_keys, name)
    raise AttributeError(f"module 'bfio.runs.paper' has no attribute '{name}'")


__all__ = ["TABLE1", "TABLE2", "TABLE_SETTINGS", "HIGHER_IS_BETTER", "PAPER_BFIO_OPTIONS", "printed_digits",
           "round_like", "compare_to_printed", "matches_printed", "at_least_as_good"]
