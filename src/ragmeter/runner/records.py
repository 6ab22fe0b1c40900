"""A new run's record: its id, name, time and redacted config snapshot."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from ragmeter import __version__
from ragmeter.config import EvalConfig, config_snapshot
from ragmeter.redaction import redact
from ragmeter.run_record import RunRecord


def new_run_record(
    config: EvalConfig,
    datasets: list[str],
    question_count: int,
    name: str | None = None,
    run_id: str | None = None,
    **snapshot_extras: Any,
) -> RunRecord:
    """A new run's record: a fresh id and the redacted config snapshot with ``snapshot_extras``
    (target info, where a rescore came from)."""
    run_id = run_id or new_run_id()
    snapshot = {
        **config_snapshot(config),
        **redact(snapshot_extras),
        "ragmeter_version": __version__,
    }
    return RunRecord(
        id=run_id,
        name=name or config.name or f"eval-{run_id[:8]}",
        created_at=now_iso(),
        config=snapshot,
        datasets=datasets,
        question_count=question_count,
    )


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
