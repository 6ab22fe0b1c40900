"""EvalConfig: defaults < YAML file < RAGMETER_* environment < CLI flags.

The resolved config is saved with every run, with secrets redacted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.redaction import REDACTED, redact
from ragmeter.yamlio import YamlError, load_yaml

__all__ = [
    "DEFAULT_STORE",
    "REDACTED",
    "ConfigError",
    "EvalConfig",
    "TargetConfig",
    "load_config",
    "redact",
]


DEFAULT_STORE = ".ragmeter/runs.db"


class ConfigError(ValueError):
    pass


class TargetConfig(BaseModel):
    """Where the system under test lives and how to talk to it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: str = "reference"
    url: str | None = None
    path: str | None = None
    callable: str | None = None
    corpus: str | None = None
    top_k: int = Field(default=5, ge=1)
    headers: dict[str, str] = Field(default_factory=dict)
    request_template: dict[str, Any] | None = None
    response_mapping: dict[str, str] = Field(default_factory=dict)
    query_path: str = "/query"
    health_path: str | None = "/health"
    info_path: str | None = "/models/info"
    timeout_s: float = Field(default=30.0, gt=0)
    # a reply larger than this is a failed case (invalid_response), not a stored answer
    max_response_bytes: int = Field(default=10_000_000, ge=1)
    max_retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.2, ge=0)
    options: dict[str, Any] = Field(default_factory=dict)


class ModelPrice(BaseModel):
    """USD per 1,000 tokens for one model (seed 002's cost table)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    input_per_1k: float = Field(ge=0)
    output_per_1k: float = Field(ge=0)


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def price_table(self) -> dict[str, tuple[float, float]]:
        """``prices`` as (input, output) USD per 1k tokens by model, the judges' form."""
        return {m: (p.input_per_1k, p.output_per_1k) for m, p in self.prices.items()}

    name: str | None = None
    datasets: list[str] = Field(default_factory=lambda: ["demo"])
    field_map: dict[str, str] = Field(default_factory=dict)
    target: TargetConfig = Field(default_factory=TargetConfig)
    metrics: list[str] = Field(
        default_factory=lambda: [
            "retrieval",
            "lexical",
            "assertions",
            "context",
            "citation",
            "abstention",
            "grounding",
            "semantic",
            "performance",
        ]
    )
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    relevance_level: int = Field(default=1, ge=1)
    ndcg_gain: Literal["linear", "exponential"] = "linear"
    require_snippet: bool = False
    abstention_phrases: list[str] = Field(default_factory=list)
    embedder: str = "minilm"
    grounding_model: Literal["auto", "lexical"] = "auto"
    judge: str | None = None
    max_judge_cost: float | None = Field(default=None, ge=0)
    # one judge request waits at most judge_timeout_s and is retried judge_max_retries times
    judge_timeout_s: float = Field(default=60.0, gt=0)
    judge_max_retries: int = Field(default=1, ge=0)
    # environment variable holding the judge's API key (an http:// judge has no default one)
    judge_api_key_env: str | None = None
    spot_check: int = Field(default=0, ge=0)
    second_judge: str | None = None
    concurrency: int = Field(default=8, ge=1)
    case_timeout_s: float = Field(default=60.0, gt=0)
    samples: int | None = Field(default=None, ge=1)
    seed: int = 0
    bootstrap_resamples: int = Field(default=1000, ge=0)
    breakdowns: list[str] = Field(default_factory=lambda: ["category", "difficulty", "answerable"])
    # weighted score (seed 002): objective -> weight, objective -> feeds ("group:NAME" or a
    # metric name); None means the documented defaults (ragmeter.scoring.weighted)
    weights: dict[str, float] | None = None
    objectives: dict[str, list[str]] | None = None
    reference_cost_usd: float = Field(default=0.01, gt=0)
    reference_latency_ms: float = Field(default=1000.0, gt=0)
    # targets (seed 003): {metric: "> 0.6"} or a list; None means the default table
    targets: dict[str, Any] | list[Any] | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    store: str = DEFAULT_STORE
    output_dir: str = ".ragmeter/runs"
    progress: bool = True


_ENV_FIELDS: dict[str, tuple[str, ...]] = {
    "RAGMETER_STORE": ("store",),
    "RAGMETER_OUTPUT_DIR": ("output_dir",),
    "RAGMETER_CONCURRENCY": ("concurrency",),
    "RAGMETER_CASE_TIMEOUT_S": ("case_timeout_s",),
    "RAGMETER_SEED": ("seed",),
    "RAGMETER_SAMPLES": ("samples",),
    "RAGMETER_TARGET_URL": ("target", "url"),
    "RAGMETER_TARGET_TIMEOUT_S": ("target", "timeout_s"),
}


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def load_config(
    yaml_path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> EvalConfig:
    """Resolve the config from its four layers; errors name the file and field."""
    data: dict[str, Any] = {}
    source = "options"
    if yaml_path is not None:
        source = str(yaml_path)
        try:
            loaded = load_yaml(Path(yaml_path), str(yaml_path)) or {}
        except YamlError as exc:
            raise ConfigError(f"cannot read config: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{yaml_path}: a config file must hold a mapping")
        data = loaded
    env = os.environ if environ is None else environ
    for variable, path in _ENV_FIELDS.items():
        if variable in env:
            _set_path(data, path, env[variable])
    data = _deep_merge(data, overrides or {})
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        where = f"{source}: invalid config" if yaml_path is not None else "invalid option"
        raise ConfigError(f"{where}: {problems}") from exc


def config_snapshot(config: EvalConfig) -> dict[str, Any]:
    snapshot: dict[str, Any] = redact(json.loads(config.model_dump_json()))
    return snapshot
