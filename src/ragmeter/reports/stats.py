"""``ragmeter stats``: a summary of a dataset (and, optionally, of a stored run)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from rich.table import Table

from ragmeter.models import Case, CaseResult, Score
from ragmeter.reports.terminal import inert, inert_text
from ragmeter.run_record import RunRecord


def _distribution(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    array = np.asarray(values, dtype=np.float64)
    p50, p95 = np.percentile(array, [50, 95])
    return {
        "mean": float(array.mean()),
        "min": float(array.min()),
        "p50": float(p50),
        "p95": float(p95),
        "max": float(array.max()),
    }


def _counts(values: list[Any]) -> dict[str, int]:
    labels = [
        "(none)" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in values
    ]
    return dict(sorted(Counter(labels).items(), key=lambda item: (-item[1], item[0])))


def dataset_stats(cases: list[Case]) -> dict[str, Any]:
    return {
        "cases": len(cases),
        "by_dataset": _counts([c.dataset for c in cases]),
        "by_category": _counts([c.category for c in cases]),
        "by_difficulty": _counts([c.difficulty for c in cases]),
        "by_answerable": _counts([c.answerable for c in cases]),
        "by_tag": _counts([tag for c in cases for tag in c.tags]),
        "with_reference_answer": sum(bool(c.reference_answer) for c in cases),
        "multi_hop": sum(c.multi_hop for c in cases),
        "gold_passages_per_case": _distribution(
            [
                float(
                    len(c.gold_passages) + sum(len(g.passages) for g in c.required_support_groups)
                )
                for c in cases
            ]
        ),
        "question_words": _distribution([float(len(c.question.split())) for c in cases]),
        "question_chars": _distribution([float(len(c.question)) for c in cases]),
    }


def run_stats(record: RunRecord, results: list[CaseResult], scores: list[Score]) -> dict[str, Any]:
    # answered cases only, as the scorecard's latency metrics (a failure's time is not one)
    latencies = [r.latency_ms for r in results if r.status == "ok" and r.latency_ms is not None]
    coverage: dict[str, dict[str, int]] = {}
    for score in scores:
        entry = coverage.setdefault(score.metric, {"ok": 0, "skipped": 0, "failed": 0})
        entry[score.status] += 1
    return {
        "run": record.id,
        "name": record.name,
        "status": record.status,
        "cases": record.question_count,
        "answered": len(results),
        "errors": sum(r.status != "ok" for r in results),
        "errors_by_type": _counts([r.error_type for r in results if r.status != "ok"]),
        "latency_ms": _distribution([float(v) for v in latencies])
        | (
            {"p99": float(np.percentile(np.asarray(latencies, dtype=np.float64), 99))}
            if latencies
            else {}
        ),
        "metric_coverage": coverage,
    }


def _stat_text(value: Any) -> str:
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        return "\n".join(
            f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items())
            for name, row in value.items()
        )
    if isinstance(value, dict):
        return (
            ", ".join(
                f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()
            )
            or "-"
        )
    return str(value)


def stats_tables(document: dict[str, Any]) -> list[Table]:
    """``ragmeter stats`` on the console: a table a section (``dataset``, ``run``). Labels
    (categories, tags, difficulty, dataset names, error types, the run name) come from the
    dataset and the target: they are sanitised and printed literally."""
    tables = []
    for section, stats in document.items():
        table = Table(title=inert(section), title_justify="left")
        table.add_column("statistic", no_wrap=True)
        table.add_column("value", overflow="fold")
        for key, value in stats.items():
            table.add_row(inert(key.replace("_", " ")), inert_text(_stat_text(value)))
        tables.append(table)
    return tables
