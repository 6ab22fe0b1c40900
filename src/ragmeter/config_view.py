"""What ``ragmeter config show`` and ``ragmeter config schema`` print: the effective config with
where each value came from (default, the file, an environment variable, or derived from another
setting), secrets redacted, and the config's JSON Schema."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragmeter.config import (
    ENV_FIELDS,
    ConfigError,
    EvalConfig,
    load_config,
    seed_aliases,
)
from ragmeter.redaction import redact
from ragmeter.yamlio import YamlError, load_yaml

__all__ = ["DEFAULT", "config_rows", "config_schema", "effective_config"]

DEFAULT = "default"
# settings derived from another one when not given themselves: field -> the one it follows
DERIVED = {"output_dir": "store", "case_timeout_s": "target.timeout_s", "target.type": "target.url"}
# config fields shown one sub-field a row
NESTED = ("target",)


def _file_paths(yaml_path: str | Path) -> set[str]:
    """The settings the file gives, as dotted paths (``target.url``), seed 002 names mapped."""
    try:
        loaded = load_yaml(Path(yaml_path), str(yaml_path)) or {}
    except YamlError as exc:
        raise ConfigError(f"cannot read config: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ConfigError(f"{yaml_path}: a config file must hold a mapping")
    try:
        data = seed_aliases(loaded)
    except ValueError as exc:
        raise ConfigError(f"{yaml_path}: invalid config: {exc}") from exc
    paths = set()
    for key, value in data.items():
        if key in NESTED and isinstance(value, dict):
            paths |= {f"{key}.{sub}" for sub in value}
        paths.add(str(key))
    return paths


def _flat(document: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if key in NESTED and isinstance(value, dict):
            flat |= {f"{key}.{sub}": inner for sub, inner in value.items()}
        else:
            flat[key] = value
    return flat


def effective_config(
    yaml_path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[EvalConfig, dict[str, str]]:
    """The config ``load_config`` resolves, and each setting's source: ``default``, the file's
    path, ``env NAME``, ``option`` (``overrides``) or ``derived from SETTING``."""
    env = dict(os.environ) if environ is None else environ
    config = load_config(yaml_path, overrides, env)
    given: dict[str, str] = {}
    if yaml_path is not None:
        given |= dict.fromkeys(_file_paths(yaml_path), str(yaml_path))
    for variable, path in ENV_FIELDS.items():
        if variable in env:
            given[".".join(path)] = f"env {variable}"
    for key, value in (overrides or {}).items():
        nested = key in NESTED and isinstance(value, dict)
        given |= dict.fromkeys([f"{key}.{sub}" for sub in value] if nested else [key], "option")
    sources: dict[str, str] = {}
    for key in _flat(config.model_dump()):
        source = given.get(key)
        if source is None and key in DERIVED and DERIVED[key] in given:
            source = f"derived from {DERIVED[key]}"
        sources[key] = source or DEFAULT
    return config, sources


def config_rows(config: EvalConfig, sources: dict[str, str]) -> list[tuple[str, Any, str]]:
    """(setting, value with secrets redacted, source) for every setting, in field order."""
    values = _flat(redact(json.loads(config.model_dump_json())))
    return [(key, value, sources.get(key, DEFAULT)) for key, value in values.items()]


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a config file (seed 002's field names included, as aliases)."""
    schema = EvalConfig.model_json_schema()
    schema["title"] = "ragmeter eval config"
    schema["description"] = (
        "A ragmeter eval config file (YAML or JSON). Precedence: defaults < this file < "
        "RAGMETER_* environment variables < command-line flags (docs/runs.md)."
    )
    properties = schema.setdefault("properties", {})
    properties["samples_per_dataset"] = {
        "description": "Seed 002's name of 'samples' (cases sampled per dataset).",
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
    }
    properties["rag_server_url"] = {
        "description": "Seed 002's name of 'target.url': the RAG server, an HTTP target.",
        "type": "string",
    }
    return schema
