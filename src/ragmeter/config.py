"""EvalConfig: defaults < YAML file < RAGMETER_* environment < CLI flags.

Every default the command line shows lives here, and so do the rules that derive one setting
from another (the run-file folder from the store, the case timeout from the target timeout).
The resolved config is saved with every run, with secrets redacted.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragmeter.config_errors import describe_validation_error
from ragmeter.errors import InputError
from ragmeter.redaction import REDACTED, redact
from ragmeter.yamlio import YamlError, load_yaml

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "DEFAULT_STORE",
    "ENV_FIELDS",
    "REDACTED",
    "SEED_ALIASES",
    "ConfigError",
    "EvalConfig",
    "TargetConfig",
    "case_timeout_for",
    "config_from_snapshot",
    "load_config",
    "redact",
    "run_folder_for",
    "validate_grounding_model",
]


DEFAULT_STORE = ".ragmeter/runs.db"
# run files go into this folder beside the store (.ragmeter/runs for the default store)
RUNS_FOLDER = "runs"
DEFAULT_OUTPUT_DIR = f".ragmeter/{RUNS_FOLDER}"  # an in-memory store's run files
DEFAULT_SEED = 0
DEFAULT_TOP_K = 5
DEFAULT_TARGET_TIMEOUT_S = 30.0
DEFAULT_CASE_TIMEOUT_S = 60.0
DEFAULT_RELEVANCE_LEVEL = 1
# cases retrieving a gold id, at least, else retrieval fails as unmatchable (docs/metrics.md)
DEFAULT_ID_SPACE_MIN_OVERLAP = 0.05
# the share of its cases a metric must be measured on (paired on, in a comparison) for a goal or
# a gate to rely on it
DEFAULT_COVERAGE_FLOOR = 0.9
# the highest relevance grade a gold passage can have (0-3, docs/datasets.md)
MAX_RELEVANCE_GRADE = 3
DEFAULT_NDCG_GAIN: Literal["linear", "exponential"] = "linear"
DEFAULT_BREAKDOWNS = ("category", "difficulty", "answerable")
DEFAULT_JUDGE_TIMEOUT_S = 60.0
# seed 003's guardrail thresholds: a score at or above warn is flagged, at or above block blocked
DEFAULT_INJECTION_WARN = 0.40
DEFAULT_INJECTION_BLOCK = 0.50
DEFAULT_JUDGE_RETRIES = 1
# compare and --baseline: significance level of the paired tests, smallest regression
DEFAULT_ALPHA = 0.05
DEFAULT_MARGIN = 0.02
# ragmeter runs: how many runs are listed
RUNS_LIST_LIMIT = 50
# ragmeter reference-server
SERVER_HOST = "127.0.0.1"
SERVER_PORT = 8000


class ConfigError(InputError):
    """A config file, variable or option that does not make a valid config (exit code 2)."""


GROUNDING_MODELS = ("auto", "lexical")
NLI_PREFIX = "nli:"  # grounding_model "nli:PATH": a local NLI / cross-encoder model folder


def validate_grounding_model(value: str) -> str:
    """``value`` if it is a grounding model spec (``auto``, ``lexical`` or ``nli:PATH``), else a
    ValueError that lists them. Whether PATH holds a usable model is checked before the first
    question (``ragmeter.metrics.grounding.nli.check_grounding_model``)."""
    if value in GROUNDING_MODELS:
        return value
    if value.startswith(NLI_PREFIX) and value[len(NLI_PREFIX) :].strip():
        return value
    raise ValueError(
        f"grounding_model {value!r} is not one of auto, lexical, nli:PATH (PATH: a folder "
        "holding an NLI model, docs/grounding.md)"
    )


def run_folder_for(store: str) -> str:
    """Where run files go when no output folder is given: ``runs`` beside the store."""
    if store == ":memory:":
        return DEFAULT_OUTPUT_DIR
    return str(Path(store).parent / RUNS_FOLDER)


def case_timeout_for(target_timeout_s: float) -> float:
    """The time one case may take, retries included, when only the target timeout is given:
    three requests' worth, and at least a second more than one."""
    return max(target_timeout_s * 3, target_timeout_s + 1)


# the seeds' field names -> ragmeter's (a seed 002 DatasetName is a str: read as its name)
SEED_ALIASES = {
    "samples_per_dataset": "samples",
    "rag_server_url": "target.url",
    "targets": "goals",
}


def seed_aliases(data: Any) -> Any:
    """``data`` with the seeds' field names (``samples_per_dataset``, ``rag_server_url``,
    ``targets``) moved to ragmeter's (``samples``, ``target.url``: an HTTP target, ``goals``);
    giving both names of one setting with different values is an error."""
    if not isinstance(data, dict) or not any(name in data for name in SEED_ALIASES):
        return data
    data = dict(data)
    for alias, path in SEED_ALIASES.items():
        if alias not in data:
            continue
        value = data.pop(alias)
        *parents, last = path.split(".")
        holder = data
        for key in parents:
            nested = holder.get(key)
            if isinstance(nested, BaseModel):  # a TargetConfig object
                nested = nested.model_dump(exclude_unset=True)
            holder[key] = dict(nested or {})
            holder = holder[key]
        if last in holder and holder[last] != value:
            raise ValueError(f"{alias} ({value!r}) and {path} ({holder[last]!r}) disagree")
        holder[last] = value
    return data


class TargetConfig(BaseModel):
    """Where the system under test lives and how to talk to it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # the target's type: a name registered under targets (http, python, replay, reference, a
    # plugin's); "kind", its old name, is read too
    type: str = "reference"
    url: str | None = None
    path: str | None = None
    callable: str | None = None
    corpus: str | None = None
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1)
    headers: dict[str, str] = Field(default_factory=dict)
    request_template: dict[str, Any] | None = None
    # how a reply is read (targets/formats.py); a response_mapping, when given, reads it instead
    response_format: str = "auto"
    response_mapping: dict[str, str] = Field(default_factory=dict)
    query_path: str = "/query"
    health_path: str | None = "/health"
    info_path: str | None = "/models/info"
    timeout_s: float = Field(default=DEFAULT_TARGET_TIMEOUT_S, gt=0)
    # a reply larger than this is a failed case (invalid_response), not a stored answer
    max_response_bytes: int = Field(default=10_000_000, ge=1)
    max_retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.2, ge=0)
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("response_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        from ragmeter.targets.formats import check_format

        return check_format(value)

    @model_validator(mode="after")
    def _mapping_or_format(self) -> TargetConfig:
        if self.response_mapping and self.response_format != "auto":
            why = f"response_format {self.response_format!r} both say how to read a reply"
            raise ValueError(f"response_mapping and {why}; give one of them")
        return self

    @model_validator(mode="before")
    @classmethod
    def _url_means_http(cls, data: Any) -> Any:
        # a URL with no type (RAGMETER_TARGET_URL, seed 002's rag_server_url) names an HTTP
        # target: the reference pipeline has no URL to ignore it for
        if isinstance(data, dict) and "kind" in data:  # a later layer's "type" wins
            data = {"type": data["kind"], **data}
            del data["kind"]
        if isinstance(data, dict) and data.get("url") and "type" not in data:
            return {**data, "type": "http"}
        return data


class ModelPrice(BaseModel):
    """USD per 1,000 tokens for one model (seed 002's cost table)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    input_per_1k: float = Field(ge=0)
    output_per_1k: float = Field(ge=0)


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, data: Any) -> Any:
        return seed_aliases(data)

    @field_validator("judge_tasks", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()] or None
        return value

    @field_validator("perspectives", mode="before")
    @classmethod
    def _perspective_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()] or None
        if isinstance(value, list):
            from ragmeter.metrics.base import PERSPECTIVES

            unknown = [name for name in value if name not in PERSPECTIVES]
            if unknown:
                raise ValueError(
                    f"unknown perspectives {', '.join(map(str, unknown))}; valid: "
                    f"{', '.join(PERSPECTIVES)}"
                )
        return value

    @field_validator("output")
    @classmethod
    def _output_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.removesuffix(".json").removesuffix(".md")
        if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
            raise ValueError(
                f"{value!r} must be a file name without a folder (the folder is output_dir)"
            )
        return name

    @field_validator("relevance_level")
    @classmethod
    def _reachable_relevance_level(cls, value: int) -> int:
        if value > MAX_RELEVANCE_GRADE:
            raise ValueError(
                f"{value} is above the highest relevance grade ({MAX_RELEVANCE_GRADE}): no gold "
                f"passage could count as relevant and every binary retrieval metric would be 0; "
                f"use 1-{MAX_RELEVANCE_GRADE} (1: any relevant passage, {MAX_RELEVANCE_GRADE}: "
                "direct answers only)"
            )
        return value

    @field_validator("grounding_model")
    @classmethod
    def _grounding_model(cls, value: str) -> str:
        return validate_grounding_model(value)

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
            "injection",
            "pipeline",
            "grounding",
            "semantic",
            "performance",
        ]
    )
    # seed 003's --perspective: the perspectives run and shown (None: all; metrics.base
    # PERSPECTIVES); a comma-separated string is read as a list
    perspectives: list[str] | None = None
    # seed 003's --suite: "smoke" asks a small seeded subset keeping every category
    suite: Literal["smoke", "full"] = "full"
    # seed 003's --output: the run files' name (NAME.json, NAME.md in output_dir); None: the
    # run id and time
    output: str | None = None
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    relevance_level: int = Field(default=DEFAULT_RELEVANCE_LEVEL, ge=1)
    ndcg_gain: Literal["linear", "exponential"] = DEFAULT_NDCG_GAIN
    require_snippet: bool = False
    # 0: no id-space check (DEFAULT_ID_SPACE_MIN_OVERLAP)
    id_space_min_overlap: float = Field(default=DEFAULT_ID_SPACE_MIN_OVERLAP, ge=0, le=1)
    abstention_phrases: list[str] = Field(default_factory=list)
    embedder: str = "minilm"
    # "auto", "lexical" or "nli:PATH" (validate_grounding_model; docs/grounding.md)
    grounding_model: str = "auto"
    # the input guardrail (family injection, docs/safety.md): the guardrail_scores key read and
    # the scores from which a case is flagged (warn) and blocked (seed 003's 0.40 / 0.50)
    injection_score_key: str = Field(default="injection", min_length=1)
    injection_warn_threshold: float = DEFAULT_INJECTION_WARN
    injection_block_threshold: float = DEFAULT_INJECTION_BLOCK
    # output leakage (family leakage, docs/safety.md): canaries checked in every case's answer,
    # values published on purpose (never a leak), and the copied-run length (words) from which
    # an answer copies a passage of a retrieved chunk
    leakage_canaries: list[str] = Field(default_factory=list)
    leakage_public_values: list[str] = Field(default_factory=list)
    verbatim_min_words: int = Field(default=50, ge=8)
    # -P FAMILY.PARAM=VALUE: one family's parameters (metrics.family; `ragmeter metrics --params`)
    metric_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    judge: str | None = None
    max_judge_cost: float | None = Field(default=None, ge=0)
    # one judge request waits at most judge_timeout_s and is retried judge_max_retries times
    judge_timeout_s: float = Field(default=DEFAULT_JUDGE_TIMEOUT_S, gt=0)
    judge_max_retries: int = Field(default=DEFAULT_JUDGE_RETRIES, ge=0)
    # environment variable holding the judge's API key (an http:// judge has no default one)
    judge_api_key_env: str | None = None
    # the judged tasks to run (None: all; see ragmeter.judges.tasks.TASKS); a comma-separated
    # string is read as a list (RAGMETER_JUDGE_TASKS)
    judge_tasks: list[str] | None = None
    spot_check: int = Field(default=0, ge=0)
    second_judge: str | None = None
    # the spot check's prompt versions: judged task (or template) -> version ("v1"); the
    # spot check asks them of the second judge, else of the run's own judge
    spot_check_prompts: dict[str, str] = Field(default_factory=dict)
    concurrency: int = Field(default=8, ge=1)
    # where target calls and scoring run (docs/runs.md, "Executors"): this process, or a Ray
    # cluster (the ray extra) at ray_address; without an address a local Ray instance is started
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    # score the answers in a second process while the run is asked (docs/runs.md, "Scoring
    # while asking"); false scores after the last answer, in this process
    score_while_asking: bool = True
    # derived from target.timeout_s when only that is given (case_timeout_for, in load_config)
    case_timeout_s: float = Field(default=DEFAULT_CASE_TIMEOUT_S, gt=0)
    samples: int | None = Field(default=None, ge=1)
    seed: int = DEFAULT_SEED
    bootstrap_resamples: int = Field(default=1000, ge=0)
    # gates under noise (docs/statistics.md): how a failed score enters an aggregate
    # ("exclude": left out, the coverage shows it; "zero"; "worst": the scale's worst end),
    # the coverage below which a target is not measured, and how many times each case is
    # asked (per-case means feed the aggregates)
    failed_as: Literal["exclude", "zero", "worst"] = "exclude"
    coverage_floor: float = Field(default=DEFAULT_COVERAGE_FLOOR, ge=0, le=1)
    repeats: int = Field(default=1, ge=1)
    breakdowns: list[str] = Field(default_factory=lambda: list(DEFAULT_BREAKDOWNS))
    # weighted score (seed 002): objective -> weight, objective -> feeds ("group:NAME" or a
    # metric name); None means the documented defaults (ragmeter.scoring.weighted)
    weights: dict[str, float] | None = None
    objectives: dict[str, list[str]] | None = None
    reference_cost_usd: float = Field(default=0.01, gt=0)
    reference_latency_ms: float = Field(default=1000.0, gt=0)
    # goals (seed 003's targets): {metric: "> 0.6"} or a list; None means the default table
    goals: dict[str, Any] | list[Any] | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    store: str = DEFAULT_STORE
    # not given: run_folder_for(store), so run files follow the store
    output_dir: str = DEFAULT_OUTPUT_DIR
    progress: bool = True
    # ``ragmeter eval``'s own settings (a config file may hold them; a run stores them): the
    # gate, the baseline check and its test, the console view, the traces, resume, dry run
    gate: bool = False
    baseline: str | None = None
    margin: float = Field(default=DEFAULT_MARGIN, ge=0)
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0, lt=1)
    verbose: bool = False
    save_trace: str | None = None
    resume: str | None = None
    dry_run: bool = False

    @field_validator("injection_block_threshold")
    @classmethod
    def _block_not_below_warn(cls, value: float, info: ValidationInfo) -> float:
        warn = info.data.get("injection_warn_threshold")
        if warn is not None and value < warn:
            raise ValueError(f"must not be below injection_warn_threshold ({warn})")
        return value

    @model_validator(mode="after")
    def _output_dir_beside_the_store(self) -> EvalConfig:
        if "output_dir" not in self.model_fields_set:
            # a derived default, not a setting: left out of model_fields_set so that a resumed
            # run keeps its own folder unless one is named
            self.__dict__["output_dir"] = run_folder_for(self.store)
        return self


# the environment layer: variable -> config field (a path into the config)
ENV_FIELDS: dict[str, tuple[str, ...]] = {
    "RAGMETER_STORE": ("store",),
    "RAGMETER_OUTPUT_DIR": ("output_dir",),
    "RAGMETER_CONCURRENCY": ("concurrency",),
    "RAGMETER_CASE_TIMEOUT_S": ("case_timeout_s",),
    "RAGMETER_SEED": ("seed",),
    "RAGMETER_SAMPLES": ("samples",),
    "RAGMETER_TARGET_URL": ("target", "url"),
    "RAGMETER_TARGET_TIMEOUT_S": ("target", "timeout_s"),
    "RAGMETER_JUDGE": ("judge",),
    "RAGMETER_JUDGE_MAX_COST": ("max_judge_cost",),
    "RAGMETER_JUDGE_TIMEOUT_S": ("judge_timeout_s",),
    "RAGMETER_JUDGE_MAX_RETRIES": ("judge_max_retries",),
    "RAGMETER_JUDGE_TASKS": ("judge_tasks",),
    "RAGMETER_SCORE_WHILE_ASKING": ("score_while_asking",),
}


def env_var(*path: str) -> str:
    """The environment variable of the config field at ``path`` (KeyError if it has none)."""
    return next(variable for variable, field in ENV_FIELDS.items() if field == path)


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
    option_names: dict[tuple[str, ...], str] | None = None,
) -> EvalConfig:
    """Resolve the config from its four layers; errors name the field and where its value
    came from: the command-line option (``option_names``: a field's path -> ``--perspective``),
    the environment variable, else the file."""
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
    for variable, path in ENV_FIELDS.items():
        if variable in env:
            _set_path(data, path, env[variable])
    data = _deep_merge(data, overrides or {})
    target = data.get("target")
    if isinstance(target, dict) and "timeout_s" in target and "case_timeout_s" not in data:
        # not a number: nothing derived, and the validation below names target.timeout_s
        with contextlib.suppress(TypeError, ValueError):
            data["case_timeout_s"] = case_timeout_for(float(target["timeout_s"]))
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        from_env = {path: variable for variable, path in ENV_FIELDS.items() if variable in env}
        default = f"{source}: invalid config" if yaml_path is not None else "invalid option"
        raise ConfigError(
            describe_validation_error(exc, default, option_names or {}, from_env)
        ) from exc


def config_snapshot(config: EvalConfig) -> dict[str, Any]:
    snapshot: dict[str, Any] = redact(json.loads(config.model_dump_json()))
    return snapshot


def config_from_snapshot(stored: dict[str, Any]) -> EvalConfig:
    """The config of a stored run from its snapshot (keys a newer or older version added are
    left out)."""
    known = {k: v for k, v in seed_aliases(stored).items() if k in EvalConfig.model_fields}
    return EvalConfig.model_validate(known)
