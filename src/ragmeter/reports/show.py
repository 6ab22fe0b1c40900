"""``ragmeter runs`` and ``ragmeter show``: the runs table, a run's breakdowns, its cases."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Column, Table

from ragmeter.config import config_from_snapshot
from ragmeter.errors import InputError
from ragmeter.models import Case
from ragmeter.reports.terminal import inert
from ragmeter.run_record import MetricSummary, RunRecord
from ragmeter.store.sqlite import RunStore


def runs_table(records: Sequence[RunRecord]) -> Table:
    """One row a stored run, newest first (names and datasets shown inert). Ids, statuses and
    counts are never cut, however narrow the terminal (a run id is what the user copies next);
    the other columns wrap rather than hide their end."""
    ids = [inert(record.id) for record in records]

    def whole(header: str, values: Sequence[str]) -> Column:
        width = max([len(header), *(len(value) for value in values)])
        return Column(header, no_wrap=True, min_width=width)

    table = Table(
        whole("id", ids),
        Column("name", overflow="fold"),
        whole("status", [record.status for record in records]),
        Column("created", overflow="fold"),
        Column("datasets", overflow="fold"),
        whole("questions", [str(record.question_count) for record in records]),
        whole("errors", [str(record.error_count) for record in records]),
    )
    for record, shown_id in zip(records, ids, strict=True):
        table.add_row(
            shown_id,
            inert(record.name),
            record.status,
            record.created_at,
            inert(", ".join(record.datasets)),
            str(record.question_count),
            str(record.error_count),
        )
    return table


def breakdown_groups(
    run_store: RunStore, record: RunRecord, field: str
) -> dict[str, list[MetricSummary]]:
    """The run's stored breakdown by ``field``, or one computed now from its stored scores."""
    groups = record.breakdowns.get(field)
    if groups is not None:
        return groups
    from ragmeter.metrics import resolve_metrics
    from ragmeter.runner.engine import metric_settings
    from ragmeter.scoring.aggregate import aggregate_with_breakdowns

    config = config_from_snapshot(record.config)
    _, computed = aggregate_with_breakdowns(
        run_store.get_scores(record.id),
        resolve_metrics(config.metrics, metric_settings(config)),
        run_store.get_cases(record.id),
        [field],
        config.bootstrap_resamples,
        config.seed,
        config.failed_as,
    )
    return computed[field]


def select_cases(record: RunRecord, cases: list[Case], case_ids: Sequence[str]) -> list[Case]:
    """The cases named (all when none is); an id the run does not have is an error."""
    if not case_ids:
        return cases
    unknown = sorted(set(case_ids) - {c.case_id for c in cases})
    if unknown:
        raise InputError(f"run {record.id} has no case {', '.join(map(repr, unknown))}")
    return [c for c in cases if c.case_id in case_ids]
