"""config/README.md lists every key of the pipeline's configuration, as the
schemas define it (workflow/schemas/config.schema.yaml, and theory.schema.yaml
for the ``theory`` section), with the default the schema fills in: no key
missing, none stale, no default out of date (issue 28)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow" / "schemas"
README = REPO / "config" / "README.md"
NO_DEFAULT = object()


def render(value) -> str:
    """A default as config/README.md writes it (in backticks): YAML flow style, one line."""
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=float("inf")).strip()
    return text.removesuffix("\n...").strip()


def _resolve(node: dict, root: dict) -> dict:
    """``node`` with its ``$ref`` (``#/definitions/...``, ``#/$defs/...``) inlined; its own keys win."""
    while "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def schema_keys(schema: dict, root: dict | None = None, prefix: str = ""):
    """``(dotted key, default or NO_DEFAULT)`` of every key of ``schema``: its
    properties, map entries (``<name>``; ``<label>`` for ``variants``) and the
    keys of list items (``[]``), recursively, through ``$ref`` and ``allOf``."""
    root = schema if root is None else root
    node = _resolve(schema, root)
    for part in node.get("allOf", []):
        yield from schema_keys(part, root, prefix)
    for name, sub in node.get("properties", {}).items():
        key = f"{prefix}.{name}" if prefix else name
        yield key, _resolve(sub, root).get("default", NO_DEFAULT)
        yield from schema_keys(sub, root, key)
    entry = node.get("additionalProperties")
    if isinstance(entry, dict):
        key = f"{prefix}.<label>" if prefix.endswith("variants") else f"{prefix}.<name>"
        yield key, _resolve(entry, root).get("default", NO_DEFAULT)
        yield from schema_keys(entry, root, key)
    if isinstance(node.get("items"), dict):
        yield from schema_keys(node["items"], root, f"{prefix}[]")


def pipeline_keys(config_schema: dict, theory_schema: dict) -> dict:
    """Every config key -> its schema default; ``theory.*`` from the theory schema
    (workflow/rules/theory.smk validates ``config["theory"]`` against it). The
    per-policy sections of ``policy_options`` (one per registered policy, derived
    from the option declarations) are documented once, as ``policy_options.<policy>``
    and ``policy_options.<policy>.<option>``: a new policy needs no edit here."""
    keys = {}
    for key, default in schema_keys(config_schema):
        if key.startswith("policy_options."):
            parts = key.split(".")
            key = ".".join(["policy_options", "<policy>", *(["<option>"] if len(parts) > 2 else [])])
            default = NO_DEFAULT
        keys[key] = default
    return {**keys, **dict(schema_keys(theory_schema, prefix="theory"))}


def readme_rows(text: str) -> list[tuple[str, str]]:
    """``(key, default cell)`` of every row of the Markdown tables whose header
    is ``| key | ... | default | ...``; the key is the first cell without its
    backticks (a cell that is not one key in backticks is kept as it is)."""
    rows, default_col = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            default_col = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "key":
            default_col = cells.index("default")
        elif default_col is not None and not set(cells[0]) <= set("-: "):
            m = re.fullmatch(r"`([^`]+)`", cells[0])
            rows.append((m.group(1) if m else cells[0], cells[default_col]))
    return rows


def problems(keys: dict, rows: list[tuple[str, str]]) -> list[str]:
    """What the README rows get wrong about the schema ``keys``. A schema default
    is written as the whole default cell, ``render(default)`` in backticks; the
    cell of a key without a schema default must not start with a backtick."""
    out, listed = [], {}
    for key, cell in rows:
        if key in listed:
            out.append(f"{key}: listed twice in config/README.md")
        listed[key] = cell
    out += [f"{key}: in the schema, missing from config/README.md" for key in keys if key not in listed]
    out += [f"{key}: in config/README.md, not in the schema" for key in listed if key not in keys]
    for key, default in keys.items():
        cell = listed.get(key)
        if cell is None:
            continue
        if default is NO_DEFAULT and cell.startswith("`"):
            out.append(f"{key}: no schema default, config/README.md gives {cell}")
        elif default is not NO_DEFAULT and cell != f"`{render(default)}`":
            out.append(f"{key}: schema default `{render(default)}`, config/README.md gives {cell}")
    return out


def _schemas() -> tuple[dict, dict]:
    """The schemas as a config is validated against them: the policy sections
    (``bfio``, ``policy_options``) derived from the policies' option declarations
    and the enums from the registries (:func:`bfio.config._registry_enums`)."""
    from bfio.config import _registry_enums

    config, theory = (yaml.safe_load((SCHEMAS / name).read_text())
                      for name in ("config.schema.yaml", "theory.schema.yaml"))
    return _registry_enums(config), theory


def test_readme_lists_every_schema_key_with_its_default():
    keys = pipeline_keys(*_schemas())
    # the walk reaches nested sections, definitions, list items and maps
    for key in ("figures.sample_workers", "experiments.<name>.horizons", "online.poisson[].trace",
                "online.variants.<label>.policy", "extra_traces.<name>.path", "theory.energy.power[].gamma"):
        assert key in keys
    assert problems(keys, readme_rows(README.read_text())) == []


def _add_key(config, theory):
    config["properties"]["figures"]["properties"]["not_a_real_option"] = {"type": "integer", "default": 1}


def _change_default(config, theory):
    config["definitions"]["experiment"]["properties"]["horizons"]["default"] = [0]


def _drop_default(config, theory):
    del config["properties"]["slots"]["default"]


def _drop_key(config, theory):
    del theory["properties"]["slot"]["properties"]["pool_factor"]


@pytest.mark.parametrize("edit, expected", [
    (_add_key, ["figures.not_a_real_option: in the schema, missing from config/README.md"]),
    (_change_default, ["experiments.<name>.horizons: schema default `[0]`, config/README.md gives `[]`"]),
    (_drop_default, ["slots: no schema default, config/README.md gives `72`"]),
    (_drop_key, ["theory.slot.pool_factor: in config/README.md, not in the schema"]),
], ids=["added key", "changed default", "removed default", "removed key"])
def test_the_check_reports_a_schema_the_readme_does_not_match(edit, expected):
    """The check on a copy of the schemas edited in memory (the files stay untouched)."""
    config, theory = _schemas()  # fresh copies
    edit(config, theory)
    assert problems(pipeline_keys(config, theory), readme_rows(README.read_text())) == expected
