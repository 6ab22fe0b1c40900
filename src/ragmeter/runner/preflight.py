"""Checks made before the first question: a mistake the user made must cost nothing.

Names (metric families, judges), the options that only make sense together, the output folder,
the cases themselves and the judge's key and server are all checked here, so a run never asks
300 questions and then stops on ``--metrics nope``.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.config import EvalConfig
from ragmeter.errors import InputError
from ragmeter.models import Case
from ragmeter.redaction import ENV_REFERENCE
from ragmeter.registry import UnknownNameError, registry
from ragmeter.runner.selection import run_families

if TYPE_CHECKING:
    from ragmeter.run_record import MetricDeclaration


def check_names(config: EvalConfig) -> None:
    """Every metric family named in the config exists and declares its metrics correctly (a
    plugin's undeclared group or kind stops the run here, not after the questions)."""
    from ragmeter.metrics.base import MetricDeclarationError, MetricSettings
    from ragmeter.metrics.family import check_params, declarations

    check_embedder(config)
    for family in config.metrics:
        try:
            declarations(family, MetricSettings.for_run(config))
        except UnknownNameError as exc:
            raise InputError(f"--metrics: {exc}; list them with `ragmeter metrics`") from None
        except MetricDeclarationError as exc:
            origin = registry.origin("metrics", family)
            raise InputError(f"--metrics {family} ({origin}): {exc}") from None
        except InputError:
            raise
        except Exception as exc:  # a plugin written for another version (e.g. no kind=)
            origin = registry.origin("metrics", family)
            raise InputError(
                f"--metrics {family} ({origin}) cannot build its metrics: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    check_params(config.metric_params, run_families(config))
    check_objectives(config)


def check_embedder(config: EvalConfig) -> None:
    """The embedder spec names a registered embedder (``minilm``, ``openai:MODEL``,
    ``http://HOST:PORT/v1#MODEL`` or a plugin's): a misspelt one would otherwise fail
    ``semantic_similarity`` on every case, after every question was asked."""
    spec = config.embedder.strip()
    if spec.startswith(("http://", "https://")):
        return
    name = spec.partition(":")[0]
    known = registry.names("embedders")
    if name in known:
        return
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.7)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise InputError(
        f"embedder: unknown embedder {config.embedder!r}{hint} (known: {', '.join(known)}; "
        "write 'minilm', 'openai:MODEL' or 'http://HOST:PORT/v1#MODEL', docs/semantic.md)"
    )


def metric_catalogue(config: EvalConfig) -> dict[str, tuple[str, MetricDeclaration]]:
    """Every metric the registered families declare under this config's settings: name ->
    (its family, its declaration)."""
    from ragmeter.metrics.base import MetricSettings
    from ragmeter.metrics.family import declarations

    settings = MetricSettings.for_run(config)
    found: dict[str, tuple[str, MetricDeclaration]] = {}
    for family in registry.names("metrics"):
        for metric in declarations(family, settings):
            found.setdefault(metric.name, (family, metric))
    return found


def _no_metric(where: str, name: str, known: list[str]) -> InputError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return InputError(f"{where}: no metric {name!r}{hint} (`ragmeter metrics` lists them)")


def check_objectives(config: EvalConfig) -> None:
    """Every feed of the configured ``objectives`` is a metric or ``group:NAME`` of a known
    group: an unknown name would silently leave its objective out of the weighted score."""
    if not config.objectives:
        return
    from ragmeter.metrics.base import GROUPS

    known = list(metric_catalogue(config))
    for objective, feeds in config.objectives.items():
        for feed in feeds:
            prefix, sep, name = feed.partition(":")
            where = f"objectives: {objective}"
            if sep and prefix == "group":
                if name not in GROUPS:
                    raise InputError(
                        f"{where}: no metric group {name!r} in {feed!r}; groups: "
                        f"{', '.join(GROUPS)}"
                    )
            elif sep:
                raise InputError(f"{where}: feed {feed!r} must be 'group:NAME' or a metric name")
            elif feed not in known:
                raise _no_metric(where, feed, known)


def check_options(config: EvalConfig) -> None:
    """Options that need each other, and the folder the run file goes to."""
    if config.spot_check and not config.judge:
        raise InputError("--spot-check re-judges cases with a second judge: name --judge too")
    if config.spot_check and not (config.second_judge or config.spot_check_prompts):
        raise InputError(
            "--spot-check needs --second-judge SPEC (the judge to compare with) or "
            "--spot-check-prompt TASK=VERSION (the prompt version to compare with)"
        )
    if config.second_judge and not config.judge:
        raise InputError("--second-judge is used by --spot-check: name --judge too")
    if config.judge_tasks:
        from ragmeter.judges.tasks import TASKS

        unknown = sorted(set(config.judge_tasks) - set(TASKS))
        if unknown:
            raise InputError(
                f"judge_tasks: unknown judged tasks {', '.join(unknown)}; known: {', '.join(TASKS)}"
            )
    if config.spot_check_prompts:
        check_spot_check_prompts(config)
    output = Path(config.output_dir)
    if output.exists() and not output.is_dir():
        raise InputError(
            f"--output-dir {config.output_dir} is a file; run files go into a folder: "
            "pass a folder path"
        )


def check_spot_check_prompts(config: EvalConfig) -> dict[str, str]:
    """The spot check's prompt swaps (``{run's template: another version}``); an unknown task
    or version, or a spot check that would compare a prompt with itself, is an error."""
    from ragmeter.judges.prompt_swaps import OPTION, prompt_swaps

    if not config.judge:
        raise InputError(f"{OPTION} re-judges with another prompt version: name --judge too")
    if not config.spot_check:
        raise InputError(f"{OPTION} needs --spot-check N (the number of cases to re-judge)")
    swaps = prompt_swaps(config.spot_check_prompts, config.judge_tasks)
    same = sorted(old for old, new in swaps.items() if old == new)
    if same and not config.second_judge:
        raise InputError(
            f"{OPTION}: the run itself asks {', '.join(same)} of this judge, so the spot check "
            "would compare it with itself; name another version or a --second-judge"
        )
    return swaps


@dataclass
class CaseSummary:
    """What the checks before the first question need of a new run's cases, gathered batch by
    batch: how many, their datasets, and the corpora they carry (None: a case carries none)."""

    count: int = 0
    datasets: set[str] = field(default_factory=set)
    corpora: set[str | None] = field(default_factory=set)

    def add(self, cases: list[Case]) -> None:
        from ragmeter.datasets.corpus import corpus_of

        self.count += len(cases)
        self.datasets.update(case.dataset or "unknown" for case in cases)
        self.corpora.update(corpus_of(case) for case in cases)

    @classmethod
    def of(cls, cases: list[Case]) -> CaseSummary:
        summary = cls()
        summary.add(cases)
        return summary


def check_cases(config: EvalConfig, cases: CaseSummary, *, target_named: bool) -> None:
    """A run needs cases, and a user's own dataset needs a system to ask."""
    if not cases.count:
        raise InputError(
            f"no cases to evaluate in {', '.join(config.datasets)}: the dataset is empty"
            + (" or --samples left none" if config.samples else "")
        )
    own_data = any(name != "demo" for name in config.datasets)
    # a dataset that carries its corpus (cranfield:, beir:, trec:, hotpotqa:, ...) is answered
    # by the reference pipeline over that corpus
    carried = None not in cases.corpora
    if own_data and not target_named and config.target.type == "reference" and not carried:
        raise InputError(
            "your dataset would be asked of the built-in reference pipeline over the bundled "
            "demo corpus, which cannot answer it; name your system with --target "
            "(http://HOST:PORT, module:function or replay:FILE.jsonl), give the reference "
            "pipeline your documents with --corpus FOLDER, or pass --target reference to "
            "evaluate the demo pipeline on purpose"
        )


def with_carried_corpus(
    config: EvalConfig, cases: CaseSummary, *, target_named: bool
) -> EvalConfig:
    """The reference pipeline, when no target or corpus was named and every case carries the
    same corpus (``cranfield:``, ``beir:``, ``hotpotqa:``, ...), answers over that corpus: the
    run's config records it (cases of several corpora are each answered over their own)."""
    if target_named or config.target.type != "reference" or config.target.corpus:
        return config
    spec = next(iter(cases.corpora)) if len(cases.corpora) == 1 else None
    if spec is None:
        return config
    target = config.target.model_copy(update={"corpus": spec})
    return config.model_copy(update={"target": target})


def target_was_named(config: EvalConfig) -> bool:
    """True when the config (file or flags) chose the target or its corpus explicitly."""
    fields = config.target.model_fields_set
    return "type" in fields or "corpus" in fields


async def check_judges(config: EvalConfig) -> dict[str, Any]:
    """The judges' keys and servers answer; returns their redacted snapshot for the run."""
    from ragmeter.judges import preflight_judge
    from ragmeter.judges.tasks import TASKS
    from ragmeter.judges.templates import load_prompt

    snapshot: dict[str, Any] = {}
    for role, spec in (("judge", config.judge), ("second_judge", config.second_judge)):
        if spec:
            snapshot[role] = await preflight_judge(
                spec, api_key_env=config.judge_api_key_env, timeout_s=config.judge_timeout_s
            )
    if snapshot:  # seed 004: the exact prompt versions are part of the run's config
        names = config.judge_tasks or list(TASKS)
        snapshot["prompt_versions"] = {
            prompt: load_prompt(prompt).version
            for name in names
            if name in TASKS
            for prompt in TASKS[name].prompts
        }
    if snapshot and config.spot_check and config.spot_check_prompts:
        swaps = check_spot_check_prompts(config)
        snapshot["spot_check_prompt_versions"] = {
            new: load_prompt(new).version for new in swaps.values()
        }
    return snapshot


def check_goals(config: EvalConfig) -> None:
    """Every metric a goals table names exists, and this run computes it (unless the goal
    is optional), and its value can meet the condition: a misspelt, unmeasurable or impossible
    goal would otherwise pass or fail a gate on nothing, after every question was asked."""
    if config.goals is None:
        return
    from ragmeter.scoring.goals import DEFAULT_GOALS, parse_goals

    catalogue = metric_catalogue(config)
    planned = {t.metric for t in DEFAULT_GOALS}  # perspectives still to come
    computed = set(config.metrics) | ({"judged"} if config.judge else set())
    for goal in parse_goals(config.goals):
        source, metric = catalogue.get(goal.metric, (None, None))
        if metric is None and goal.metric not in planned:
            raise _no_metric("goals", goal.metric, list(catalogue))
        if source is not None and source not in computed and not goal.optional:
            raise InputError(
                f"goals: {goal.metric} comes from the {source!r} metric family, which this "
                f"run does not compute; add it to --metrics"
                + (" and name a --judge" if source == "judged" else "")
                + ", or mark the goal optional"
            )
        if metric is not None and goal.rule != "non_inferior":
            _check_reachable(goal.metric, goal.op, goal.threshold, metric)


def value_range(metric: MetricDeclaration) -> tuple[float, float]:
    """The values a metric's aggregate can take, from its declared kind: its scale for a
    binary, proportion or score metric, zero and up for a count, duration or cost."""
    if metric.scale is not None:
        return metric.scale
    return (0.0, math.inf)


def _check_reachable(name: str, op: str, threshold: float, metric: MetricDeclaration) -> None:
    low, high = value_range(metric)
    impossible = {
        ">": threshold >= high,
        ">=": threshold > high,
        "<": threshold <= low,
        "<=": threshold < low,
    }.get(op, False)
    if impossible:
        span = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise InputError(
            f"goals: {name} {op} {threshold:g} can never pass: {name} is a {metric.kind} "
            f"({span}); give a threshold inside that range"
        )


def check_headers(config: EvalConfig) -> None:
    """A header that names an unset environment variable would be sent empty."""
    for name, value in config.target.headers.items():
        for variable in ENV_REFERENCE.findall(value):
            if not os.environ.get(variable):
                raise InputError(
                    f"--header {name}: the environment variable {variable} is not set; "
                    f"export it first (the header would be sent empty)"
                )


def check_scoring_config(config: EvalConfig) -> None:
    """Breakdowns and weights well formed, and the grounding model (``nli:PATH``) loadable
    (the goals: ``check_goals``)."""
    from ragmeter.metrics.grounding.nli import check_grounding_model
    from ragmeter.run_record import Scorecard
    from ragmeter.scoring.breakdowns import check_field
    from ragmeter.scoring.weighted import weighted_score

    for name in config.breakdowns:
        check_field(name)
    weighted_score(
        Scorecard(metrics=[], by_group={}),
        config.weights,
        config.objectives,
        config.reference_cost_usd,
        config.reference_latency_ms,
    )
    check_grounding_model(config.grounding_model)


def check_verdict_options(config: EvalConfig) -> None:
    """A gate with something to check, a baseline that exists, and a baseline for every
    required ``non_inferior`` target."""
    from ragmeter.scoring.goals import parse_goals

    if config.gate and config.goals is not None and not config.goals:
        raise InputError("--gate with an empty goals table checks nothing; name at least one goal")
    if config.baseline:
        _check_baseline_is_stored(config.store, config.baseline)
        return
    if config.goals is None:
        return
    needing = [
        t.metric for t in parse_goals(config.goals) if t.rule == "non_inferior" and not t.optional
    ]
    if needing:
        raise InputError(
            f"goals: non_inferior on {', '.join(needing)} needs a baseline: add --baseline "
            "RUN_ID_OR_RUN_JSON, or mark the goal optional"
        )


def _check_baseline_is_stored(store: str, baseline: str) -> None:
    """A baseline run file, or a finished run in ``store``."""
    from ragmeter.store.sqlite import RunNotFoundError, RunStore

    if Path(baseline).is_file():
        return
    if store == ":memory:":
        raise InputError(
            f"--baseline {baseline}: an in-memory store holds no earlier run; give a run JSON "
            "file or a store file"
        )
    try:
        run_store = RunStore(store, create=False)
    except InputError as exc:
        raise InputError(f"--baseline {baseline}: {exc}") from exc
    try:
        record = run_store.get_run(baseline)
    except RunNotFoundError as exc:
        raise InputError(f"--baseline: {exc} ({store}); give a run id or a run JSON file") from exc
    finally:
        run_store.close()
    if record.scorecard is None:
        raise InputError(
            f"--baseline {baseline}: run {record.id} has no scorecard (status "
            f"{record.status}); finish it first (ragmeter eval --resume {record.id})"
        )
