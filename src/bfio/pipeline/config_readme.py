"""``config/README.md``'s rows of the configuration keys whose type, default and
meaning are declared in code (issue 43): the run parameters the schema takes from
:mod:`bfio.engine.run_parameters` (``slots`` everywhere, a prefix setting's
``time_scale``, ``prefix_study.prefill.*``) and BF-IO's options, the ``bfio``
section (:data:`bfio.policies.bfio_options.OPTIONS`: each option's ``doc``, or its
help). Each such row is derived from the declaration, so the README cannot drift
from it and a new option is one declaration; the other rows are written by hand
and checked against the schema by ``tests/test_config_readme.py``.

``python -m bfio.pipeline.config_readme`` rewrites those rows of ``config/README.md`` in
place, and writes the row of a declared key the README lacks next to its
siblings' (``--check``: exit 1 when one is out of date or missing, nothing written)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from bfio.pipeline.config import _registry_enums
from bfio.policies import policy_class
from bfio.ground.options import Registry, declared
from bfio.engine.run_parameters import SECTIONS, parameter
from bfio.studies.registry import studies

#: A schema key without a default.
NO_DEFAULT = object()
README = Path(__file__).resolve().parents[3] / "config" / "README.md"
SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


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


def schema_nodes(schema: dict, root: dict | None = None, prefix: str = ""):
    """``(dotted key, node)`` of every key of ``schema``: its properties, map entries
    (``<name>``; ``<label>`` for ``variants``) and the keys of list items (``[]``),
    recursively, through ``$ref`` and ``allOf``; each node with its ``$ref`` inlined."""
    root = schema if root is None else root
    node = _resolve(schema, root)
    for part in node.get("allOf", []):
        yield from schema_nodes(part, root, prefix)
    for name, sub in node.get("properties", {}).items():
        key = f"{prefix}.{name}" if prefix else name
        yield key, _resolve(sub, root)
        yield from schema_nodes(sub, root, key)
    entry = node.get("additionalProperties")
    if isinstance(entry, dict):
        key = f"{prefix}.<label>" if prefix.endswith("variants") else f"{prefix}.<name>"
        yield key, _resolve(entry, root)
        yield from schema_nodes(entry, root, key)
    if isinstance(node.get("items"), dict):
        yield from schema_nodes(node["items"], root, f"{prefix}[]")


def schema_keys(schema: dict, root: dict | None = None, prefix: str = ""):
    """``(dotted key, default or NO_DEFAULT)`` of every key of ``schema`` (:func:`schema_nodes`)."""
    for key, node in schema_nodes(schema, root, prefix):
        yield key, node.get("default", NO_DEFAULT)


def value_words(option) -> str:
    """The README's type cell of a declared parameter: ``integer >= 1``, ``number in 0..1``,
    ``number in (0, 1]``, ``` `none`, `vllm` or `sglang` ```, ``string from `bfio.solvers.SOLVERS` ``
    (a :class:`~bfio.ground.options.Registry`), ``string: <pattern_help>``; ``or null``
    when none is a value of its own."""
    if isinstance(option.choices, Registry):
        words = f"string from `{option.choices}`"
    elif option.choices is None and option.pattern_help:
        words = f"string: {option.pattern_help}"
    elif option.allowed() is not None:
        names = [f"`{v}`" for v in option.allowed()] + (["null"] if option.derived else [])
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    else:
        number = "{:,d}" if option.type is int else "{:g}"
        words = "integer" if option.type is int else "number"
        lo, hi, above = option.minimum, option.maximum, option.exclusive_minimum
        if lo is not None and hi is not None:
            words += f" in {number.format(lo)}..{number.format(hi)}"
        elif above is not None and hi is not None:
            words += f" in ({number.format(above)}, {number.format(hi)}]"
        elif lo is not None:
            words += f" >= {number.format(lo)}"
        elif above is not None:
            words += f" > {number.format(above)}"
        elif hi is not None:
            words += f" <= {number.format(hi)}"
    return words + (" or null" if option.derived else "")


def _row(key: str, option, node: dict, top: dict) -> str:
    """One README row of ``key``, a declared ``option`` at schema ``node``; ``top``: the
    top-level schema properties (a nested key without a default falls back to the top-level
    key of the same parameter)."""
    name = key.rsplit(".", 1)[-1].removesuffix("[]")
    if "default" in node:
        default = f"`{render(node['default'])}`"
    elif key != name and top.get(name, {}).get("x-parameter") == node.get("x-parameter"):
        default = f"none (top-level `{name}`)"
    else:
        default = "none"
    own = node.get("description")
    text = own if own and own != option.help_text() else option.doc or option.help  # the marker's own words win
    return _cells(key, option, default, text)


def _cells(key: str, option, default: str, text: str) -> str:
    text = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
    return f"| `{key}` | {value_words(option)} | {default} | {text} |"


def _policy_row(key: str, option) -> str:
    """The README row of a policy option (the ``bfio`` section): the schema fills in no
    default, the policy's own is named (``none (policy: `20`)``, or the words of a
    derived one); its meaning is the option's ``doc`` (else its help)."""
    default = (f"none ({option.derived})" if option.default is None and option.derived else
               "none" if option.default is None else f"none (policy: `{render(option.default)}`)")
    return _cells(key, option, default, option.doc or option.help)


def study_sections() -> set[str]:
    """The config sections whose schema a study declares in its own module
    (:attr:`bfio.studies.registry.Study.schema`): config/README.md documents them
    by the rows ``<study>`` and ``<study>.<key>`` (the schema's descriptions), not key by key."""
    return {name for name, study in studies().items() if study.schema is not None}


def declared_rows(schema: dict) -> dict[str, str]:
    """README key -> its row, for every key of the validated ``schema`` (the schema as
    :func:`bfio.pipeline.config._registry_enums` fills it in) that a run parameter declares,
    outside the sections a study declares (:func:`study_sections`)."""
    rows, top = {}, schema.get("properties", {})
    if "bfio" in top:  # BF-IO's options (bfio.pipeline.config._registry_enums fills the section from them)
        for option in declared(policy_class("bfio")):
            rows[f"bfio.{option.name}"] = _policy_row(f"bfio.{option.name}", option)
    own = study_sections()
    for key, node in schema_nodes(schema):
        if key.split(".")[0].removesuffix("[]") in own:
            continue
        if "x-parameter" in node:
            rows[key] = _row(key, parameter(node["x-parameter"]), node, top)
        if "x-parameters" in node:
            for option in SECTIONS[node["x-parameters"]]:
                rows[f"{key}.{option.name}"] = _row(f"{key}.{option.name}", option, node["properties"][option.name],
                                                    top)
    return rows


_ROW_KEY = re.compile(r"^\| `([^`]+)` \|")


def _parent(key: str) -> str:
    return key.rsplit(".", 1)[0] if "." in key else ""


def regenerate(text: str, rows: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with each row of a key in ``rows`` replaced by its derived row, and the
    row of a key the text lacks written next to its siblings' (the keys of the same
    parent in ``rows``): after the row of the nearest sibling before it in ``rows``
    (schema order), else before the nearest after it, else after its parent's row.
    Returns the text and the keys of ``rows`` it found no place for (in schema order)."""
    lines = text.splitlines(keepends=True)
    where: dict[str, int] = {}
    for i, line in enumerate(lines):
        m = _ROW_KEY.match(line)
        if m:
            where.setdefault(m.group(1), i)
            if m.group(1) in rows:
                lines[i] = rows[m.group(1)] + ("\n" if line.endswith("\n") else "")
    keys, after, missing = list(rows), {}, []
    for n, key in enumerate(keys):
        if key in where:
            continue
        siblings = [k for k in keys if _parent(k) == _parent(key) and k in where]
        before = [k for k in keys[:n] if k in siblings]
        later = [k for k in keys[n + 1:] if k in siblings]
        if before:
            at = where[before[-1]] + 1
        elif later:
            at = where[later[0]]
        elif _parent(key) in where:
            at = where[_parent(key)] + 1
        else:
            missing.append(key)
            continue
        after.setdefault(at, []).append(rows[key] + "\n")
    out = []
    for i, line in enumerate(lines):
        out += after.get(i, [])
        out.append(line)
    out += after.get(len(lines), [])
    return "".join(out), missing


def validated_schema(path: Path = SCHEMA) -> dict:
    """The config schema as :func:`bfio.pipeline.config.validate_config` checks a config against it."""
    return _registry_enums(yaml.safe_load(Path(path).read_text()))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = README.read_text()
    new, missing = regenerate(text, declared_rows(validated_schema()))
    if missing:
        print(f"config/README.md has no place for the rows of: {', '.join(missing)} (no row of a sibling or "
              "of the parent key; add one, any cells, and rerun)", file=sys.stderr)
        return 1
    if new == text:
        return 0
    if "--check" in argv:
        print("config/README.md: declared rows out of date or missing; run python -m bfio.pipeline.config_readme",
              file=sys.stderr)
        return 1
    README.write_text(new)
    print("config/README.md: declared rows rewritten")
    return 0


__all__ = ["NO_DEFAULT", "render", "schema_nodes", "schema_keys", "value_words", "study_sections", "declared_rows",
           "regenerate", "validated_schema", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
