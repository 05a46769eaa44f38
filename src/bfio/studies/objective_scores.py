"""The objective study's choose stage scored (issue 11, :mod:`bfio.studies.objective_study`):
each setting's imbalance and throughput relative to BF-IO with ``H = 0``
(:func:`scores`) and the recommended setting (:func:`recommend`; the product
``recommendation.json`` every confirm job reads, :func:`recommendation`).

Apart from the study's simulations so that the product job and the study's
table start without the simulator (issue 42); part of the simulations' code
(the study's ``modules``): the confirm runs follow the recommendation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError

KEY_COLUMNS = ("discount", "new_requests")


def scores(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting (``discount``, ``new_requests``): the mean over cells (trace,
    workers, seed, ``H > 0``) of imbalance and throughput relative to BF-IO with
    ``H = 0`` on the same trace, ``G`` and seed (the same program under every
    setting), and the worst plateau ratio (imbalance at the largest ``H`` over
    the setting's best ``H``, per trace and seed)."""
    if not (runs["horizon"] == 0).any():
        raise ConfigError("objective_study.choose.horizons: needs 0 (the H = 0 runs are the reference)")
    key = ["trace", "workers", "seed"]
    h0 = runs[runs["horizon"] == 0].groupby(key)[["avg_imbalance", "throughput"]].mean().add_suffix("_h0")
    df = runs[runs["horizon"] > 0].join(h0, on=key)
    df["imbalance_ratio"] = df["avg_imbalance"] / df["avg_imbalance_h0"]
    df["throughput_ratio"] = df["throughput"] / df["throughput_h0"]
    out = df.groupby(list(KEY_COLUMNS)).agg(imbalance_score=("imbalance_ratio", "mean"),
                                           throughput_score=("throughput_ratio", "mean"),
                                           runs=("imbalance_ratio", "size")).reset_index()
    hmax = df["horizon"].max()
    g = df.groupby([*KEY_COLUMNS, *key])
    best = g["avg_imbalance"].min()
    last = df[df["horizon"] == hmax].set_index([*KEY_COLUMNS, *key])["avg_imbalance"]
    plateau = (last / best.reindex(last.index)).groupby(list(KEY_COLUMNS)).max().rename("plateau_worst")
    out = out.merge(plateau.reset_index(), on=list(KEY_COLUMNS), how="left")
    return out.sort_values("imbalance_score", kind="mergesort").reset_index(drop=True)


def recommend(runs: pd.DataFrame, max_throughput_cost_pct: float = 1.0) -> dict:
    """The lowest imbalance score among settings within ``max_throughput_cost_pct``
    of the best throughput score (ties: the larger discount, then ``predicted``)."""
    sc = scores(runs)
    ok = sc[sc["throughput_score"] >= sc["throughput_score"].max() * (1 - max_throughput_cost_pct / 100)]
    ok = ok.sort_values(["imbalance_score", "discount"], ascending=[True, False], kind="mergesort")
    top = ok.iloc[0]
    return {"discount": float(top["discount"]), "new_requests": str(top["new_requests"]),
            "imbalance_score": float(top["imbalance_score"]), "throughput_score": float(top["throughput_score"]),
            "plateau_worst": float(top["plateau_worst"]) if np.isfinite(top["plateau_worst"]) else None,
            "settings_compared": int(len(sc)), "max_throughput_cost_pct": float(max_throughput_cost_pct)}


def recommendation(runs: pd.DataFrame, section: dict) -> dict:
    """The product ``recommendation.json`` of the choose runs: :func:`recommend` under
    ``objective_study.choose.max_throughput_cost_pct``."""
    return recommend(runs, float(section["choose"]["max_throughput_cost_pct"]))



__all__ = ["KEY_COLUMNS", "scores", "recommend", "recommendation"]
