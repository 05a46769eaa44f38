"""config/README.md lists every key of the pipeline's configuration, as the
schemas define it (workflow/schemas/config.schema.yaml, and theory.schema.yaml
for the ``theory`` section), with the default the schema fills in: no key
missing, none stale, no default out of date (issue 28). The rows of the keys
the run parameters declare are derived (:mod:`bfio.pipeline.config_readme`,
``tests/test_run_parameters.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bfio.pipeline.config_readme import NO_DEFAULT, render, schema_keys, study_sections

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow" / "schemas"
README = REPO / "config" / "README.md"


def pipeline_keys(config_schema: dict, theory_schema: dict, declared: set[str] | None = None) -> dict:
    """Every config key -> its schema default; ``theory.*`` from the theory schema
    (workflow/rules/theory.smk validates ``config["theory"]`` against it). The
    per-policy sections of ``policy_options`` (one per registered policy, derived
    from the option declarations) are documented once, as ``policy_options.<policy>``
    and ``policy_options.<policy>.<option>``: a new policy needs no edit here. So
    are the sections a study declares in its module (``declared``, default
    :func:`~bfio.pipeline.config_readme.study_sections`: ``<study>`` and ``<study>.<key>``; their keys' meanings
    are the schema's descriptions, :func:`test_a_study_declared_section_describes_its_keys`):
    a new study needs no edit here."""
    declared = study_sections() if declared is None else declared
    keys = {"<study>": NO_DEFAULT, "<study>.<key>": NO_DEFAULT}  # rows for whichever study declares one
    for key, default in schema_keys(config_schema):
        if key.startswith("policy_options."):
            parts = key.split(".")
            key = ".".join(["policy_options", "<policy>", *(["<option>"] if len(parts) > 2 else [])])
            default = NO_DEFAULT
        elif key.split(".")[0] in declared:
            key = "<study>" if "." not in key else "<study>.<key>"
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
    and the enums from the registries (:func:`bfio.pipeline.config._registry_enums`)."""
    from bfio.pipeline.config import _registry_enums

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


def undescribed_keys(section: str, schema: dict) -> list[str]:
    """The keys of config section ``section`` whose schema node has no ``description``
    (a ``$ref`` to a shared definition is described where it is defined)."""
    out = []

    def walk(node: dict, key: str) -> None:
        if "$ref" in node:
            return
        if not node.get("description"):
            out.append(key)
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{key}.{name}")
        items = node.get("items")
        for name, sub in (items.get("properties", {}) if isinstance(items, dict) else {}).items():
            walk(sub, f"{key}[].{name}")

    walk(schema["properties"][section], section)
    return out


def test_a_study_declared_section_describes_its_keys():
    """A section a study declares in its module (``Study.schema``) has no rows in
    config/README.md (``<study>.<key>`` stands for them): its keys describe themselves."""
    config, _ = _schemas()
    for section in study_sections():
        assert undescribed_keys(section, config) == [], section
    config["properties"]["mine"] = {"type": "object", "description": "a study's section",
                                    "properties": {"rows": {"type": "array", "items": {"type": "string"}},
                                                   "load": {"type": "number", "description": "the load"}}}
    assert undescribed_keys("mine", config) == ["mine.rows"]
    assert not any(k.startswith("mine") for k in pipeline_keys(config, {}, declared={"mine"}))
    assert "mine.rows" in pipeline_keys(config, {}, declared=set())


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


# --------------------------------------------------------------------------- policy defaults

#: A README default cell that names the policy's own default: ``none (policy: `aging:200`)``.
POLICY_DEFAULT = re.compile(r"none \(policy: `([^`]*)`\)")


def readme_options(rows: list[tuple[str, str]], classes: dict) -> list[tuple[str, str, object]]:
    """``(key, default cell, Option)`` of the README rows that document one
    declared option: ``bfio.<option>`` (policy ``bfio``) and
    ``policy_options.<policy>.<option>`` for a policy in ``classes`` (name ->
    class; the generic ``<policy>.<option>`` row names none)."""
    from bfio.ground.options import declared

    out = []
    for key, cell in rows:
        parts = key.split(".")
        if len(parts) == 2 and parts[0] == "bfio":
            policy, name = "bfio", parts[1]
        elif len(parts) == 3 and parts[0] == "policy_options" and parts[1] in classes:
            policy, name = parts[1], parts[2]
        else:
            continue
        options = {o.name: o for o in declared(classes[policy])}
        if name in options:  # a key the policy does not declare: the schema check above reports it
            out.append((key, cell, options[name]))
    return out


def option_default_problems(rows: list[tuple[str, str]], classes: dict) -> list[str]:
    """What the README's policy defaults get wrong about the ``Option`` defaults the
    policies declare (:class:`bfio.ground.options.Option`, the one place a
    policy option's default is written): an option with a default is shown as
    ``none (policy: `<default>`)`` (read back as YAML, so ``10`` is ``10.0``);
    one without (``derived``: the value comes from another option) names no
    single policy default."""
    out = []
    for key, cell, option in readme_options(rows, classes):
        m = POLICY_DEFAULT.fullmatch(cell)
        if option.default is None:
            if m:
                out.append(f"{key}: the policy declares no default ({option.derived}), "
                           f"config/README.md gives {cell}")
            continue
        written = yaml.safe_load(m.group(1)) if m else None
        if m is None or written != option.default or isinstance(written, bool) != isinstance(option.default, bool):
            out.append(f"{key}: the policy declares default `{render(option.default)}`, config/README.md gives {cell}")
    return out


def _policy_classes() -> dict:
    from bfio.policies import policy_class, registered

    return {name: policy_class(name) for name in registered()}


def test_readme_policy_defaults_are_the_declared_option_defaults():
    """Issue 28: the ``(policy: `...`)`` defaults of the ``bfio`` rows are the
    ``Option`` defaults of :data:`bfio.policies.bfio_options.OPTIONS`, every option is checked."""
    from bfio.ground.options import declared

    classes = _policy_classes()
    rows = readme_rows(README.read_text())
    checked = {key for key, _, _ in readme_options(rows, classes)}
    assert checked == {f"bfio.{o.name}" for o in declared(classes["bfio"])}
    assert option_default_problems(rows, classes) == []


def _readme_says(old: str, new: str):
    def edit(text: str, classes: dict):
        assert old in text
        return text.replace(old, new), classes
    return edit


def _declare(policy: str, option: str, default):
    def edit(text: str, classes: dict):
        import dataclasses

        from bfio.ground.options import declared

        cls = classes[policy]
        options = tuple(dataclasses.replace(o, default=default) if o.name == option else o for o in declared(cls))
        return text, {**classes, policy: type(cls.__name__, (cls,), {"options": options})}
    return edit


@pytest.mark.parametrize("edit, expected", [
    (_readme_says("`bfio.solvers.PLACEMENTS` | none (policy: `auto`)",
                  "`bfio.solvers.PLACEMENTS` | none (policy: `greedy`)"),
     ["bfio.placement: the policy declares default `auto`, config/README.md gives none (policy: `greedy`)"]),
    (_declare("bfio", "time_limit_s", 30.0),
     ["bfio.time_limit_s: the policy declares default `30.0`, config/README.md gives none (policy: `10.0`)"]),
    (_readme_says("| none (the objective's) | Offset discount", "| none (policy: `0.6`) | Offset discount"),
     ["bfio.discount: the policy declares no default (the objective's), config/README.md gives "
      "none (policy: `0.6`)"]),
    (_readme_says("| none (policy: `256`) |", "| none |"),
     ["bfio.shard_workers: the policy declares default `256`, config/README.md gives none"]),
    (_readme_says("| `policy_options.<policy>.<option>` |",
                  "| `policy_options.vllm_token_lb.running_tokens` | string | none (policy: `computed`) | x |\n"
                  "| `policy_options.<policy>.<option>` |"),
     ["policy_options.vllm_token_lb.running_tokens: the policy declares default `uncomputed`, "
      "config/README.md gives none (policy: `computed`)"]),
], ids=["README default changed", "declared default changed", "derived given a default", "default dropped",
        "policy_options row"])
def test_the_check_reports_a_policy_default_the_readme_does_not_match(edit, expected):
    """The check on the README text and the policy classes edited in memory (the files stay untouched)."""
    text, classes = edit(README.read_text(), _policy_classes())
    assert option_default_problems(readme_rows(text), classes) == expected


def test_paper_bfio_options_are_the_config_bfio_section():
    """Issue 28: :data:`bfio.runs.paper.PAPER_BFIO_OPTIONS` (the paper's BF-IO options, as the
    tests run the paper's rows) is the ``bfio`` section of config/config.yaml (what
    the pipeline's paper rows run), key for key."""
    from bfio.runs.paper import PAPER_BFIO_OPTIONS

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert config["bfio"] == PAPER_BFIO_OPTIONS


def test_the_derived_rows_leave_out_a_section_a_study_declares(monkeypatch):
    """``declared_rows`` writes no row inside a section a study declares (its
    ``<study>.<key>`` row stands for them), e.g. its settings' ``slots`` marker."""
    from bfio.pipeline import config_readme

    schema = config_readme.validated_schema()
    assert any(k.startswith("prefix_study.") for k in config_readme.declared_rows(schema))
    monkeypatch.setattr(config_readme, "study_sections", lambda: {"prefix_study"})
    rows = config_readme.declared_rows(schema)
    assert rows and not any(k.startswith("prefix_study.") for k in rows)
