"""Metric families as declarations (``ragmeter.metrics.family``): what a family declares is read
without a case, a judge or an embedder, a run stores the declaration of every metric it scored,
and ``-P FAMILY.PARAM=VALUE`` sets one family's parameter, checked before the first question."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter import EvalConfig, evaluate
from ragmeter.errors import InputError
from ragmeter.metrics import resolve_metrics
from ragmeter.metrics.base import Metric, MetricSettings
from ragmeter.metrics.family import (
    MetricFamily,
    MetricParam,
    MetricParamError,
    build_family,
    declarations,
    metric_family,
    parse_param,
)
from ragmeter.registry import Registry, registry
from ragmeter.run_record import RunRecord


def ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "", "HOME": str(cwd), "NO_COLOR": "1"},
    )


@pytest.mark.parametrize("family", registry.names("metrics", built_in=True))
def test_declarations_are_what_the_built_family_holds(family: str) -> None:
    built = metric_family(family)(MetricSettings())
    declared = declarations(family)
    assert [d.name for d in declared] == [m.name for m in built]
    for metric, declaration in zip(built, declared, strict=True):
        assert declaration.family == family
        assert (declaration.group, declaration.kind) == (metric.group, metric.kind)
        assert declaration.higher_is_better is metric.higher_is_better
        assert declaration.aggregation == metric.aggregation
        assert declaration.requires == list(metric.requires)
        assert declaration.scale == metric.scale


def test_a_declaration_is_read_without_computing_a_score() -> None:
    def never(*_: Any) -> float:
        raise AssertionError("a declaration computed a score")

    local = Registry()
    local.register(
        "metrics",
        "strict",
        MetricFamily(
            lambda settings: [
                Metric("long", "generation", never, kind="binary", requires=("reference_answer",))
            ],
            params=(MetricParam("min_chars", "characters", default=5),),
        ),
    )
    (declared,) = declarations("strict", registry=local)
    assert declared.model_dump() == {
        "name": "long",
        "family": "strict",
        "group": "generation",
        "kind": "binary",
        "higher_is_better": True,
        "aggregation": "mean",
        "unit": None,
        "scale": (0.0, 1.0),
        "requires": ["reference_answer"],
        "description": "",
    }


def test_a_family_parameter_changes_that_family_only() -> None:
    settings = MetricSettings(metric_params={"retrieval": {"ks": "2, 7"}})
    names = {m.name for m in resolve_metrics(["retrieval"], settings)}
    assert {"recall_at_2", "recall_at_7"} <= names
    assert "recall_at_5" not in names
    # the run-wide setting is unchanged for any other family reading it
    assert settings.ks == (1, 3, 5, 10)
    untouched = {m.name for m in resolve_metrics(["retrieval"], MetricSettings())}
    assert "recall_at_5" in untouched


def test_an_own_option_reaches_the_family_with_its_default_otherwise() -> None:
    seen: list[Any] = []

    def family(settings: MetricSettings) -> list[Metric]:
        seen.append(settings.option("min_chars", "unset"))
        return []

    local = Registry()
    declared = MetricFamily(family, params=(MetricParam("min_chars", "characters", default=5),))
    local.register("metrics", "long", declared)
    build_family("long", MetricSettings(), local)
    build_family("long", MetricSettings(metric_params={"long": {"min_chars": "12"}}), local)
    assert seen == [5, 12]


@pytest.mark.parametrize(
    "values,problem",
    [
        ({"kz": 3}, "has no parameter 'kz' (its parameters: ks, relevance_level"),
        ({"ks": "three"}, "'three' is not a valid ks"),
        ({"relevance_level": True}, "not a valid relevance_level"),
        ({"id_space_min_overlap": "lots"}, "not a valid id_space_min_overlap"),
    ],
)
def test_a_wrong_parameter_names_the_option_and_the_declared_ones(
    values: dict[str, Any], problem: str
) -> None:
    with pytest.raises(MetricParamError) as caught:
        build_family("retrieval", MetricSettings(metric_params={"retrieval": values}))
    message = str(caught.value)
    assert message.startswith(f"-P retrieval.{next(iter(values))}: ")
    assert problem in message
    assert isinstance(caught.value, InputError)


@given(
    family=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    param=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    value=st.integers(-1000, 1000) | st.booleans(),
)
def test_parse_param_reads_family_param_and_a_yaml_value(
    family: str, param: str, value: int | bool
) -> None:
    text = f"{family}.{param}={json.dumps(value)}"
    assert parse_param(text) == (family, param, value)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("retrieval.ks=1,5", ("retrieval", "ks", "1,5")),
        ("retrieval.ks=[1, 5]", ("retrieval", "ks", [1, 5])),
        ("judged.max_context_chars=null", ("judged", "max_context_chars", "null")),
        ("leakage.leakage_canaries=a: b", ("leakage", "leakage_canaries", "a: b")),
        ("abstention.abstention_phrases=", ("abstention", "abstention_phrases", "")),
    ],
)
def test_parse_param_keeps_what_yaml_cannot_read_as_the_text(
    text: str, expected: tuple[str, str, Any]
) -> None:
    assert parse_param(text) == expected


@pytest.mark.parametrize("text", ["retrieval", "ks=3", ".ks=3", "retrieval.=3", "retrieval.ks"])
def test_parse_param_refuses_what_is_not_family_param_value(text: str) -> None:
    with pytest.raises(MetricParamError, match=r"write FAMILY\.PARAM=VALUE"):
        parse_param(text)


def test_a_run_stores_each_scored_metric_declaration(tmp_path: Path) -> None:
    outcome = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "o"), progress=False,
            samples=3, seed=1, metrics=["retrieval", "lexical"],
            metric_params={"retrieval": {"ks": [2]}},
        )
    )  # fmt: skip
    header = json.loads(Path(str(outcome.run_file)).read_text())
    declared = {d["name"]: d for d in header["metric_declarations"]}
    scored = {m["name"] for m in header["scorecard"]["metrics"]}
    assert set(declared) == scored
    assert declared["recall_at_2"]["family"] == "retrieval"
    assert declared["recall_at_2"]["requires"] == ["gold_passages", "retrieved"]
    assert "recall_at_5" not in declared
    assert declared["exact_match"]["family"] == "lexical"
    # the store row reads back the same declarations
    from ragmeter.store import RunStore

    store = RunStore(str(tmp_path / "r.db"))
    try:
        stored: RunRecord = store.get_run(outcome.record.id)
    finally:
        store.close()
    assert [d.model_dump(mode="json") for d in stored.metric_declarations] == list(
        header["metric_declarations"]
    )
    assert list(header)[:3] == ["run_file_version", "id", "name"]


def test_cli_param_sets_a_family_and_keeps_the_config_files(tmp_path: Path) -> None:
    config = tmp_path / "ragmeter.yaml"
    config.write_text(
        "metrics: [retrieval]\nsamples: 3\nseed: 1\n"
        "metric_params:\n  retrieval: {ks: [2], relevance_level: 1}\n"
    )
    done = ragmeter(
        "eval", "--config", str(config), "-P", "retrieval.ks=4", "--output", "p",
        "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    header = json.loads((tmp_path / ".ragmeter" / "runs" / "p.json").read_text())
    names = {m["name"] for m in header["scorecard"]["metrics"]}
    assert "recall_at_4" in names and "recall_at_2" not in names
    assert header["config"]["metric_params"] == {"retrieval": {"ks": 4, "relevance_level": 1}}


@pytest.mark.parametrize(
    "option,problem",
    [
        ("lexical.ks=3", "-P lexical.ks: metric family 'lexical' is not among this run's metrics"),
        ("retrieval.kz=3", "-P retrieval.kz: metric family 'retrieval' has no parameter 'kz'"),
        ("retrieval.ks=x", "-P retrieval.ks: 'x' is not a valid ks"),
        ("retrieval", "write FAMILY.PARAM=VALUE"),
    ],
)
def test_a_wrong_param_stops_the_run_before_the_first_question(
    tmp_path: Path, option: str, problem: str
) -> None:
    done = ragmeter(
        "eval", "--metrics", "retrieval", "-P", option, "--store", "r.db", "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert problem in re.sub(r"\s+", " ", done.stderr + done.stdout)
    assert not (tmp_path / ".ragmeter" / "runs").exists()  # no run file: nothing was asked


def test_metrics_params_lists_every_family_parameter(tmp_path: Path) -> None:
    done = ragmeter("metrics", "--params", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [p["name"] for p in listed["judged"]][:2] == ["max_contexts", "max_context_chars"]
    assert listed["judged"][0]["default"] == 10
    assert {"name": "ks", "default": [1, 3, 5, 10]}.items() <= listed["retrieval"][0].items()
    assert listed["lexical"] == []
    declared = json.loads(ragmeter("metrics", "--json", cwd=tmp_path).stdout)
    assert {d["family"] for d in declared} == set(listed)


def test_judged_max_contexts_is_how_many_chunks_the_judge_sees(
    judge_servers: Any, tmp_path: Path
) -> None:
    from tests.judges.servers import smart_judge

    judge = judge_servers(smart_judge)
    evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "o"), progress=False,
            samples=2, seed=5, metrics=["lexical"], judge=f"{judge.url}/v1#m",
            judge_tasks=["context_precision"], metric_params={"judged": {"max_contexts": 1}},
        )
    )  # fmt: skip
    prompts = [r["messages"][1]["content"] for r in judge.requests]
    assert prompts
    for prompt in prompts:
        assert prompt.count("<context index=") == 1, prompt
