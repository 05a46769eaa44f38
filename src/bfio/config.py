"""The pipeline's configuration: validation against the JSON schema (defaults
filled in, enums from the package registries), cross-references between its
sections, named runs and the traces it may use. Every error names the dotted
config key at fault (``config key 'experiments.table1.requests': ...``).
"""

from __future__ import annotations

import copy
import math
import re
import sys
from pathlib import Path


from bfio.ground.errors import ConfigError
from bfio.runs.paper import TABLE_SETTINGS
from bfio.traces.registry import ARRIVAL_UNITS, KNOWN_TRACES, TRACE_ALIASES, TraceSpec
from bfio.traces.registry import trace_specs  # noqa: F401  (re-exported: bfio.pipeline.config.trace_specs)
from bfio.policies import baselines as registry_baselines, check_policy_options, policy_class, registered, row_pattern
from bfio.runs.experiments import experiment_rows
from bfio.studies.registry import studies
from bfio.studies.declared_rows import declare_config_rows
from bfio.traces.sources import trace_references  # noqa: F401  (re-exported: bfio.pipeline.config.trace_references)
from bfio.ground.limits import MAX_REQUESTS
from bfio.ground.options import schema_properties
from bfio.runs.run import resolve_row
from bfio.step_model import schema as step_model_schema
from bfio.engine.run_parameters import fill_schema


#: A module ``import jsonschema`` imports when installed that our schemas never use:
#: the grammar of its ``iri`` format checkers (``rfc3987_syntax``, which
#: ``jsonschema[format-nongpl]`` brings, e.g. for Jupyter) builds 38 lark parsers at
#: import, 3 s CPU, a third of building the pipeline's DAG. The pipeline's schemas
#: have no ``format`` keyword (``tests/test_pipeline_config.py`` checks it), so
#: validation is the same without it.
UNUSED_FORMAT_MODULE = "rfc3987_syntax"


def _jsonschema():
    """``jsonschema``, imported (when a config is validated, not by the modules that
    import this one) with :data:`UNUSED_FORMAT_MODULE` hidden while it loads; the
    module stays importable afterwards."""
    hide = "jsonschema" not in sys.modules and UNUSED_FORMAT_MODULE not in sys.modules
    if hide:
        sys.modules[UNUSED_FORMAT_MODULE] = None  # makes its import fail: jsonschema skips those checkers
    try:
        import jsonschema
    finally:
        if hide:
            del sys.modules[UNUSED_FORMAT_MODULE]
    return jsonschema


def _default_filling_validator():
    jsonschema = _jsonschema()
    base = jsonschema.Draft7Validator

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
                elif prop in instance:
                    instance[prop] = _from_command_line(instance[prop], sub)
        yield from base.VALIDATORS["properties"](validator, properties, instance, schema)

    def coerce_items(validator, items, instance, schema):
        if isinstance(instance, list) and isinstance(items, dict):
            for i, v in enumerate(instance):
                instance[i] = _from_command_line(v, items)
        yield from base.VALIDATORS["items"](validator, items, instance, schema)

    return jsonschema.validators.extend(base, {"properties": set_defaults, "items": coerce_items})


_INT_TEXT = re.compile(r"^[+-]?\d+$")


def _from_command_line(value, schema: dict):
    """A number given as text where the schema wants a number: ``snakemake
    --config seeds=[42]`` passes ``['42']`` (lists and numbers given on the
    command line arrive as strings). Anything else is returned unchanged, so the
    schema still refuses text that is not a number."""
    if not isinstance(value, str):
        return value
    t = schema.get("type")
    types = t if isinstance(t, list) else [t]
    text = value.strip()
    if ("integer" in types or "number" in types) and _INT_TEXT.match(text):
        return int(text)
    if "number" in types:
        try:
            v = float(text)
        except ValueError:
            return value
        return v if math.isfinite(v) else value
    return value


def _key_path(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        m = re.match(r"'([^']+)' is a required property", error.message)
        if m:
            parts.append(m.group(1))
    if error.validator == "additionalProperties":
        m = re.search(r"\('([^']+)'", error.message)
        if m:
            parts.append(m.group(1))
    return ".".join(parts) or "<top level>"


def validate_config(config: dict, schema) -> dict:
    """Validate ``config`` against the pipeline schema (a dict or a YAML path),
    fill in defaults (in place, also returned) and check cross-references.

    Raises :class:`~bfio.ground.errors.ConfigError` whose message starts with the
    dotted key at fault, e.g. ``config key 'experiments.table1.requests': ...``.
    """
    if not isinstance(schema, dict):
        import yaml  # local: as jsonschema above

        with open(schema) as f:
            schema = yaml.safe_load(f)
    schema = _registry_enums(schema)
    # snakemake --config download=false passes the string 'false' (download=False the bool)
    if isinstance(config.get("download"), str) and config["download"].lower() in ("true", "false"):
        config["download"] = config["download"].lower() == "true"
    figs = config.get("figures") if isinstance(config.get("figures"), dict) else {}
    explicit_figures = {k: figs[k] for k in ("horizon_sweep", "worker_sweep") if k in figs}
    validator_cls = _default_filling_validator()
    validator = validator_cls(schema)
    # Fill defaults first (iter_errors runs the properties hook), then report
    # the first error in document order.
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        raise ConfigError(f"config key '{_key_path(e)}': {e.message}")
    _check_references(config)
    for key, name in explicit_figures.items():
        if name is not None and name not in config["experiments"]:
            raise ConfigError(f"config key 'figures.{key}': '{name}' is not an experiment (experiments: "
                              f"{', '.join(config['experiments']) or 'none'}); name one, or null for no figure")
    _check_policies(config)
    declare_config_rows(config)  # its variants' and admission rows' specs, by label (bfio.lookahead.run_keys)
    for name, study in studies().items():  # each study's own cross-checks (bfio.studies.registry.Study.validate)
        if study.validate is not None and study.active(config):
            study.validate(config[name], config)
    _check_request_counts(config)
    return config


def _check_request_counts(obj, path: str = "", seen: set | None = None) -> None:
    """Every config key ``requests`` (experiments, studies) within
    :data:`bfio.ground.limits.MAX_REQUESTS`, so a huge count fails when the config
    loads (the dry run), not in a job. Each dict or list is visited once (by
    ``id``): a YAML alias shares one object between places, and seven nested
    levels of them (a 4 kB "alias bomb") would otherwise be millions of visits."""
    seen = set() if seen is None else seen
    if isinstance(obj, (dict, list)):
        if id(obj) in seen:
            return
        seen.add(id(obj))
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        key = f"{path}.{k}" if path else str(k)
        if k == "requests" and isinstance(v, int) and not isinstance(v, bool) and v > MAX_REQUESTS:
            raise ConfigError(f"config key '{key}': {v:,} exceeds the bound of {MAX_REQUESTS:,} requests "
                              "(bfio.ground.limits.MAX_REQUESTS)")
        _check_request_counts(v, key, seen)


def _registry_enums(schema: dict) -> dict:
    """A copy of ``schema`` whose policy sections (``bfio``, ``policy_options``)
    are the policies' option declarations (:func:`bfio.ground.options.schema_properties`:
    types, allowed values from the registries, no defaults but the policies'
    own), whose policy names come from the policy registry (the experiments' baseline
    enum, :func:`bfio.policies.baselines`, and the row pattern,
    :func:`bfio.policies.row_pattern`), whose studies' sections hold the names
    their registries give (each study's :attr:`~bfio.studies.registry.Study.schema_enums`:
    the predictor study's predictors, the starvation study's admission rules and
    cost metrics), and whose run parameters (slots, arrivals, the prefill model)
    are their declarations (:func:`bfio.engine.run_parameters.fill_schema`), so the schema
    never lists them twice."""
    schema = fill_schema(schema)
    defs = schema.get("definitions", {})
    if "row" in defs:
        defs["row"]["pattern"] = row_pattern()
    base = defs.get("experiment", {}).get("properties", {}).get("baselines", {}).get("items")
    if base is not None:
        base["enum"] = list(registry_baselines())
    props = schema.get("properties", {})
    if "bfio" in props:
        props["bfio"]["properties"] = schema_properties(policy_class("bfio"))
    if "policy_options" in props:
        props["policy_options"]["properties"] = {
            name: {"type": "object", "additionalProperties": False,
                   "description": f"options of policy '{name}' (bfio.ground.options)",
                   "properties": schema_properties(policy_class(name))}
            for name in registered() if name != "bfio" and policy_class(name).options}
    for name, study in studies().items():  # a plugin study's section, from its declaration
        if study.schema is not None:
            props[name] = copy.deepcopy(study.schema)
        if study.schema_enums is not None and "properties" in props.get(name, {}):
            study.schema_enums(props[name]["properties"])  # its registries' names (Study.schema_enums)
    for section in props.values():  # a study's step model: its options' declarations (bfio.step_model.OPTIONS)
        if isinstance(section, dict) and "step_model" in section.get("properties", {}):
            section["properties"]["step_model"] = {**step_model_schema(),
                                                   **{k: v for k, v in section["properties"]["step_model"].items()
                                                      if k == "description"}}
    unit = props.get("extra_traces", {}).get("additionalProperties", {}).get("properties", {}).get("arrival_unit")
    if unit is not None:
        unit["enum"] = sorted(ARRIVAL_UNITS)
    return schema


def _check_policies(config: dict) -> None:
    """The policy options sections, every study variant and every study row build a policy."""
    bfio = config.get("bfio") or {}
    check_policy_options("bfio", "bfio", dict(bfio))
    for name, options in (config.get("policy_options") or {}).items():
        check_policy_options(f"policy_options.{name}", name, dict(options))
    for study in studies():
        section = config.get(study) or {}
        variants = section.get("variants") or {}
        for label in variants:
            try:
                policy, opts = resolve_row(label, variants, bfio)
            except ConfigError as e:
                raise ConfigError(f"config key '{study}.variants.{label}': {e}") from None
            check_policy_options(f"{study}.variants.{label}", policy, opts)


#: Where a named run (config key ``run_name``) writes everything: its own
#: working directory, so the default run's results/, figures/ and logs/ are
#: never touched.
NAMED_RUN_DIR = "runs"
_RUN_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def named_run(config: dict, user_config: dict | None, cwd=None) -> str | None:
    """Apply a *named run*: if the user's own configuration (the merged
    ``--configfile`` files and ``--config`` values, Snakemake's
    ``overwrite_config``) sets ``run_name``, it **replaces** the workflow's
    default config (``config/config.yaml``) instead of extending it: ``config``
    becomes a copy of ``user_config`` (in place; keys it does not set take the
    schema defaults). Relative paths (``data_dir``, ``download_dir``,
    ``extra_traces.*.path``) are made absolute against ``cwd`` (the directory
    snakemake was started in). Returns the run's working directory,
    ``runs/<run_name>`` under ``cwd``, or ``None`` (no named run; ``config``
    untouched).

    Raises :class:`~bfio.ground.errors.ConfigError` for a malformed ``run_name``.
    """
    name = (user_config or {}).get("run_name")
    if name is None:
        if config.get("run_name") is not None:
            raise ConfigError("config key 'run_name': set it in your own config file (--configfile), "
                              "not in config/config.yaml; a named run replaces the default config")
        return None
    if not isinstance(name, str) or not _RUN_NAME_RE.match(name):
        raise ConfigError(f"config key 'run_name': {name!r} is not a lowercase identifier of at most 64 "
                          "characters (letters, digits, '_', starting with a letter), e.g. 'mytrace'")
    cwd = Path(cwd if cwd is not None else Path.cwd()).resolve()
    new = copy.deepcopy(user_config)

    def absolute(p):
        return str(p) if Path(p).is_absolute() else str(cwd / p)

    for key, default in (("data_dir", "../shared/data"), ("download_dir", "resources/traces")):
        new[key] = absolute(new.get(key, default))
    for entry in (new.get("extra_traces") or {}).values():
        if isinstance(entry, dict) and "path" in entry:
            entry["path"] = absolute(entry["path"])
    config.clear()
    config.update(new)
    return str(cwd / NAMED_RUN_DIR / name)


def _check_traces(config: dict) -> None:
    for name, entry in (config.get("extra_traces") or {}).items():
        if name in KNOWN_TRACES or name in TRACE_ALIASES:
            raise ConfigError(f"config key 'extra_traces.{name}': '{name}' is already a known trace; "
                              "choose another name")
        path = Path(entry["path"]) if isinstance(entry, dict) and "path" in entry else None
        if path is not None and path.is_dir():  # a missing file is reported when a job needs it
            raise ConfigError(f"config key 'extra_traces.{name}.path': {path} is a directory, expected a trace "
                              "file (.csv, .jsonl, .json, .parquet)")
    names = trace_specs(config)
    for key, t in trace_references(config):
        if t not in names:
            raise ConfigError(f"config key '{key}': unknown trace '{t}' (known: {', '.join(KNOWN_TRACES)}; "
                              "define others under 'extra_traces')")


def _check_references(config: dict) -> None:
    _check_traces(config)
    exps = config.get("experiments", {})
    for name, exp in exps.items():
        if not experiment_rows(exp):
            raise ConfigError(f"config key 'experiments.{name}': no baselines and no horizons, nothing to run")
        if exp["trace"] not in config["traces"]:
            raise ConfigError(f"config key 'experiments.{name}.trace': '{exp['trace']}' is not listed in "
                              f"'traces' ({', '.join(config['traces'])})")
        again = [s for s in exp.get("extra_seeds", []) if s in config["seeds"]]
        if again:
            raise ConfigError(f"config key 'experiments.{name}.extra_seeds': {again} already in 'seeds' "
                              f"({config['seeds']}); list only the seeds beyond them")
        table = exp.get("paper_table")
        if table and table not in TABLE_SETTINGS:
            raise ConfigError(f"config key 'experiments.{name}.paper_table': unknown table '{table}'")
    figs = config.get("figures", {})
    for key in ("trajectories", "power"):
        for name, rows in figs.get(key, {}).items():
            if name not in exps:
                continue  # figure for an experiment this config does not run: skipped
            missing = [r for r in rows if r not in experiment_rows(exps[name])]
            if missing:
                raise ConfigError(f"config key 'figures.{key}.{name}': rows {missing} are not rows of "
                                  f"experiment '{name}' ({', '.join(experiment_rows(exps[name]))})")
    for t in figs.get("distributions", []):
        if t not in config["traces"]:
            raise ConfigError(f"config key 'figures.distributions': '{t}' is not listed in 'traces'")
    ws = figs.get("worker_sweep")
    if ws in exps:
        rows = experiment_rows(exps[ws])
        for key in ("worker_sweep_baseline", "worker_sweep_target"):
            if figs.get(key) not in rows:
                raise ConfigError(f"config key 'figures.{key}': '{figs.get(key)}' is not a row of "
                                  f"experiment '{ws}' ({', '.join(rows)})")


