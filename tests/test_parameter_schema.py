"""The config schema accepts and refuses the same configs whether the cluster,
arrival and prefill fragments are written in YAML or derived from their
declarations (issue 43, ``bfio.engine.run_parameters``): a few good and bad configs
through :func:`bfio.pipeline.config.validate_config`, written before the fragments were
derived and run unchanged after."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from bfio.pipeline.config import validate_config
from bfio.ground.errors import ConfigError
from bfio.engine.run_parameters import ARRIVAL_OPTION, SLOTS, STUDY_PREFILL

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
SETTING = {"name": "x", "workload": "trace", "trace": "mooncake", "requests": 10, "workers": 2}


def _config(**edits) -> dict:
    """smoke.yaml with a prefix study of one setting and the dotted ``edits``
    (``prefix_study__prefill``: ``prefix_study.prefill``)."""
    cfg = copy.deepcopy(SMOKE)
    cfg["prefix_study"] = {"settings": [dict(SETTING)]}
    for key, value in edits.items():
        node, *path = key.split("__")
        target = cfg
        for part in [node, *path][:-1]:
            target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
        last = [node, *path][-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return cfg


GOOD = {
    "as is": _config(),
    "slots": _config(slots=8),
    "experiment slots": _config(experiments__table1__slots=4),
    "setting slots": _config(prefix_study__settings__0={**SETTING, "slots": 16}),
    "replay slots": _config(online__replay__0={"name": "r", "trace": "azure_conv", "workers": 2, "slots": 3,
                                                "time_scales": [0.5]}),
    "generality slots": _config(generality={"traces": ["burstgpt"], "slots": 5}),
    "time scale": _config(prefix_study__settings__0={**SETTING, "time_scale": 0.5}),
    "prefill": _config(prefix_study__prefill={"chunk_tokens": 1024, "token_s": 0.0, "kv_tokens_per_rank": 250_000,
                                              "preemption": "vllm"}),
    "prefill as text": _config(prefix_study__prefill={"chunk_tokens": "1024", "token_s": "0.0002"}),
    "prefill at bounds": _config(prefix_study__prefill={"chunk_tokens": 2 ** 52 + 2 ** 45, "token_s": 1.0}),
}

BAD = {
    "slots 0": (_config(slots=0), "slots"),
    "slots text": (_config(slots="many"), "slots"),
    "slots fraction": (_config(slots=1.5), "slots"),
    "experiment slots 0": (_config(experiments__table1__slots=0), "experiments.table1.slots"),
    "setting slots 0": (_config(prefix_study__settings__0={**SETTING, "slots": 0}), "prefix_study.settings.0.slots"),
    "replay slots 0": (_config(online__replay__0={"name": "r", "trace": "azure_conv", "workers": 2, "slots": 0,
                                                   "time_scales": [0.5]}), "online.replay.0.slots"),
    "generality slots 0": (_config(generality={"traces": ["burstgpt"], "slots": 0}), "generality.slots"),
    "time scale 0": (_config(prefix_study__settings__0={**SETTING, "time_scale": 0}),
                     "prefix_study.settings.0.time_scale"),
    "time scale text": (_config(prefix_study__settings__0={**SETTING, "time_scale": "fast"}),
                        "prefix_study.settings.0.time_scale"),
    "chunk 0": (_config(prefix_study__prefill={"chunk_tokens": 0}), "prefix_study.prefill.chunk_tokens"),
    "chunk over the bound": (_config(prefix_study__prefill={"chunk_tokens": 2 ** 52 + 2 ** 45 + 1}),
                             "prefix_study.prefill.chunk_tokens"),
    "chunk fraction": (_config(prefix_study__prefill={"chunk_tokens": 2.5}), "prefix_study.prefill.chunk_tokens"),
    "token_s negative": (_config(prefix_study__prefill={"token_s": -1e-4}), "prefix_study.prefill.token_s"),
    "token_s over the bound": (_config(prefix_study__prefill={"token_s": 1.5}), "prefix_study.prefill.token_s"),
    "kv 0": (_config(prefix_study__prefill={"kv_tokens_per_rank": 0}), "prefix_study.prefill.kv_tokens_per_rank"),
    "preemption unknown": (_config(prefix_study__prefill={"preemption": "lifo"}), "prefix_study.prefill.preemption"),
    "prefill unknown key": (_config(prefix_study__prefill={"cache_blocks": 10}), "prefix_study.prefill.cache_blocks"),
    "prefill not a section": (_config(prefix_study__prefill=[1]), "prefix_study.prefill"),
}


@pytest.mark.parametrize("name", list(GOOD))
def test_a_good_config_is_accepted(name):
    validate_config(copy.deepcopy(GOOD[name]), SCHEMA)


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_config_is_refused_naming_its_key(name):
    cfg, key = BAD[name]
    with pytest.raises(ConfigError, match=rf"config key '{key}'"):
        validate_config(copy.deepcopy(cfg), SCHEMA)


def test_the_defaults_filled_in():
    """Left out, the top-level slots, a setting's time scale and the prefix study's
    prefill model take their defaults; a nested ``slots`` none (the top-level one applies)."""
    cfg = validate_config(_config(prefix_study__prefill={}), SCHEMA)
    assert cfg["slots"] == SLOTS.default
    setting = cfg["prefix_study"]["settings"][0]
    assert setting["time_scale"] == ARRIVAL_OPTION["time_scale"].default and "slots" not in setting
    # (written as the values 2048, 1.0e-4, 480000, none until the fragments were derived; the same values)
    assert cfg["prefix_study"]["prefill"] == {o.name: o.default for o in STUDY_PREFILL}
    assert "slots" not in cfg["experiments"]["table1"]
    cfg = _config()
    del cfg["slots"]
    assert validate_config(cfg, SCHEMA)["slots"] == SLOTS.default
