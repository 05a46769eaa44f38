"""Profiles of the theory grid and their resolution from the pipeline config.

``config["theory"]`` (validated against ``workflow/schemas/theory.schema.yaml``)
selects a ``profile`` (``full``: the issue's grid, ``smoke``: a reduced grid
for CI) and may override any key; nested sections are merged key by key.
"""

from __future__ import annotations

import copy

DISTRIBUTIONS = {
    "uniform": {"kind": "uniform"},
    "two_point": {"kind": "two_point", "low": 1, "p_low": 0.5},
    "longbench": {"kind": "trace", "trace": "longbench", "clip_quantile": 0.99},
    "burstgpt": {"kind": "trace", "trace": "burstgpt", "clip_quantile": 0.99},
}

DRIFTS = {
    "zero": {"kind": "zero"},
    "one": {"kind": "one"},
    "periodic": {"kind": "periodic", "values": [0.0, 1.0, 2.0, 1.0]},
    "random": {"kind": "random", "low": 0.0, "high": 2.0, "seed": 7},
    "speculative": {"kind": "speculative", "low": 1, "high": 4, "seed": 11},
    "speculative_per_request": {"kind": "speculative_per_request", "low": 1, "high": 4},
}

POWER = [
    {"name": "A100", "p_idle": 100.0, "p_max": 400.0, "gamma": 0.7},
    {"name": "A100_gamma0.5", "p_idle": 100.0, "p_max": 400.0, "gamma": 0.5},
    {"name": "A100_gamma0.9", "p_idle": 100.0, "p_max": 400.0, "gamma": 0.9},
    {"name": "H100_illustrative", "p_idle": 70.0, "p_max": 700.0, "gamma": 0.7},
]

FULL = {
    "profile": "full",
    "seed": 20251105,
    "s_max": 100,
    "data_dir": None,
    "distributions": DISTRIBUTIONS,
    "drifts": DRIFTS,
    "homogeneous": {
        "B": [8, 16, 32, 64, 128],
        "G": [2, 4, 8, 16, 32, 64, 128, 256],
        "distributions": ["uniform", "two_point", "longbench", "burstgpt"],
        "samples": 400,
        "decode_steps": 8,
    },
    "geometric": {
        "B": [8, 16, 32, 64, 128],
        "G": [2, 4, 16, 64, 256],
        "p": [0.05, 0.1, 0.2],
        "distributions": ["uniform", "two_point", "longbench"],
    },
    "drift": {
        "B": [8, 16, 32, 64, 128],
        "G": [2, 4, 16, 64, 256],
        "p": [0.1],
        "distributions": ["uniform"],
        "drifts": ["zero", "one", "periodic", "random", "speculative", "speculative_per_request"],
    },
    "slot": {"burn_in_mult": 8.0, "batch_mult": 10.0, "n_batches": 20, "pool_factor": 2.0},
    "energy": {
        "kappa": 1.005e-7,
        "decode_steps": 8,
        "power": POWER,
        "series": {"distribution": "uniform", "B": 32, "p": 0.1},
    },
    "tolerances": {"alpha": 0.01, "energy_rtol": 1e-9, "spread_tol": 4.0, "slope_tol": 0.1, "slope_z": 2.0},
}

SMOKE_OVERRIDES = {
    "profile": "smoke",
    "homogeneous": {"B": [8, 32], "G": [2, 16, 64], "distributions": ["uniform", "two_point"], "samples": 100},
    "geometric": {"B": [8, 32], "G": [2, 16], "p": [0.1, 0.2], "distributions": ["uniform", "two_point"]},
    "drift": {"B": [8, 32], "G": [4, 16], "p": [0.2], "distributions": ["uniform"]},
    "slot": {"n_batches": 10},
    "energy": {"series": {"distribution": "uniform", "B": 32, "p": 0.2}},
}

PROFILES = {"full": FULL}


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in ("distributions", "drifts"):
            out[k] = _merge(out[k], v)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            merged = dict(out[k])
            merged.update(copy.deepcopy(v))
            out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    return out


def resolve(cfg: dict | None = None) -> dict:
    """The full configuration for ``cfg`` (``{}``/``None``: the full profile)."""
    cfg = dict(cfg or {})
    profile = cfg.get("profile", "full")
    if profile == "full":
        base = copy.deepcopy(FULL)
    elif profile == "smoke":
        base = _merge(FULL, SMOKE_OVERRIDES)
    else:
        raise ValueError(f"unknown theory profile {profile!r}")
    cfg.pop("profile", None)
    out = _merge(base, cfg)
    out["profile"] = profile
    return out
