from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragmeter.config import REDACTED, ConfigError, load_config, redact
from ragmeter.metrics.base import Metric
from ragmeter.models import CaseResult, Response, RunRecord, Score
from ragmeter.registry import Registry, UnknownNameError
from ragmeter.scoring.aggregate import aggregate_scores, bootstrap_interval
from ragmeter.store.sqlite import MIGRATIONS, RunNotFoundError, RunStore


def test_config_layers_defaults_yaml_env_cli(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("concurrency: 3\nseed: 5\ntarget: {type: http, url: 'http://127.0.0.1:1'}\n")
    config = load_config(
        path, {"seed": 9}, environ={"RAGMETER_CONCURRENCY": "4", "RAGMETER_SEED": "7"}
    )
    assert (config.concurrency, config.seed, config.target.type) == (4, 9, "http")
    assert load_config(None, environ={}).datasets == ["demo"]


def test_config_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("concurrency: zero\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid config: concurrency"):
        load_config(path, environ={})
    path.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(path, environ={})


def test_redaction_of_secrets_by_key_and_by_shape() -> None:
    snapshot = redact(
        {
            "target": {
                "headers": {
                    "Authorization": "Bearer abc123",
                    "X-Api-Key": "k",
                    "Accept": "json",
                    "X-Env": "${MY_TOKEN}",
                }
            },
            "api_key": "plain",
            "note": "sk-abcdefghijklmnop",
            "max_tokens": 256,
            "top_k": 5,
            "password": ["x"],
            "auth_header": "Bearer ${TOKEN}",
        }
    )
    assert snapshot["target"]["headers"] == {
        "Authorization": REDACTED,
        "X-Api-Key": REDACTED,
        "Accept": "json",
        "X-Env": "${MY_TOKEN}",
    }
    assert snapshot["api_key"] == REDACTED and snapshot["note"] == REDACTED
    assert snapshot["max_tokens"] == 256 and snapshot["password"] == [REDACTED]
    assert snapshot["auth_header"] == "Bearer ${TOKEN}"


def test_registry_is_lazy_and_says_did_you_mean() -> None:
    registry = Registry()
    registry.register("targets", "mine", "json:dumps")
    assert registry.get("targets", "mine")({"a": 1}) == '{"a": 1}'
    with pytest.raises(UnknownNameError) as error:
        registry.get("targets", "refrence")
    assert "did you mean 'reference'" in str(error.value)
    assert "http" in registry.names("targets")
    assert registry.names("targets", built_in=True) == ["http", "python", "reference", "replay"]
    assert registry.names("targets", built_in=False) == ["mine"]
    assert "squad_v2" in registry.names("loaders", built_in=True)


def _metric(name: str, aggregation: str = "mean") -> Metric:
    return Metric(name, "retrieval", lambda c, r: 0.0, aggregation=aggregation, kind="score")


def test_aggregate_counts_and_interval() -> None:
    scores = [Score(case_id=str(i), metric="m", value=float(i % 2)) for i in range(10)]
    scores += [
        Score(case_id="s", metric="m", value=None, status="skipped", reason="r"),
        Score(case_id="f", metric="m", value=None, status="failed", reason="r"),
    ]
    card = aggregate_scores(scores, [_metric("m"), _metric("empty")], resamples=500, seed=1)
    m = card.get("m")
    assert m is not None
    assert (m.value, m.n_scored, m.n_skipped, m.n_failed) == (0.5, 10, 1, 1)
    assert m.ci_low is not None and m.ci_high is not None
    assert 0.0 <= m.ci_low < 0.5 < m.ci_high <= 1.0
    empty = card.get("empty")
    assert empty is not None and (empty.value, empty.n_scored, empty.ci_low) == (None, 0, None)
    assert card.by_group == {"retrieval": ["m", "empty"]}


def test_bootstrap_is_seeded_and_supports_percentiles() -> None:
    values = np.arange(100, dtype=np.float64)
    assert bootstrap_interval(values, "mean", 200, seed=3) == bootstrap_interval(
        values, "mean", 200, seed=3
    )
    low, high = bootstrap_interval(values, "p95", 200, seed=3) or (0, 0)
    assert 85 <= low <= high <= 99
    assert bootstrap_interval(values[:1]) is None


def test_store_migrations_wal_roundtrip_and_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = RunStore(path)
    assert store.schema_version == len(MIGRATIONS)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    from ragmeter.models import Case

    cases = [Case(case_id=f"c{i}", question="q") for i in range(3)]
    record = RunRecord(
        id="run1",
        name="n",
        created_at="2026-01-01T00:00:00+00:00",
        config={"target": {"headers": {"Authorization": REDACTED}}},
        datasets=["d"],
    )
    store.create_run(record, cases)
    result = CaseResult(case_id="c1", status="ok", response=Response(answer="a"), latency_ms=1.0)
    store.save_results("run1", [result])
    store.save_results(
        "run1", [result, CaseResult(case_id="c0", status="error", error_type="timeout")]
    )
    assert store.answered_case_ids("run1") == {"c0", "c1"}
    assert [r.case_id for r in store.get_results("run1")] == ["c0", "c1"]
    assert store.get_run("run").id == "run1"
    with pytest.raises(RunNotFoundError):
        store.get_run("nope")
    store.close()
    reopened = RunStore(path)
    assert reopened.schema_version == len(MIGRATIONS)
    assert reopened.counts("run1") == {"answered": 2, "errors": 1}
    raw = sqlite3.connect(path).execute("SELECT config_json FROM runs").fetchone()[0]
    assert REDACTED in raw


def test_registry_loads_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import ragmeter.registry as registry_module

    def fake_entry_points(group: str) -> list[EntryPoint]:
        if group == "ragmeter.metrics":
            return [EntryPoint("mine", "ragmeter.metrics.lexical:lexical_metrics", group)]
        return []

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    registry = Registry()
    assert "mine" in registry.names("metrics")
    from ragmeter.metrics.base import MetricSettings

    names = [m.name for m in registry.get("metrics", "mine")(MetricSettings())]
    assert names[:2] == ["exact_match", "token_f1"]


def test_duplicate_yaml_keys_in_a_config_are_refused_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("concurrency: 4\nseed: 1\nconcurrency: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"eval\.yaml:3: duplicate key 'concurrency'"):
        load_config(path, environ={})


def test_numbers_given_as_booleans_are_refused() -> None:
    from pydantic import ValidationError

    from ragmeter.models import Case

    for field, value in (
        ("min_citations", True),
        ("expected_number", {"value": False}),
        ("gold_passages", [{"doc_id": "d", "grade": True}]),
    ):
        with pytest.raises(ValidationError, match="not true/false"):
            Case.model_validate({"case_id": "a", "question": "q", field: value})
