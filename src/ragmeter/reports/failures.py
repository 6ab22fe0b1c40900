"""Why cases failed and metrics were skipped, in one summary every report shows: the console
scorecard (compact and ``-v``), ``show``, the Markdown and HTML reports, and ``eval``'s exit
when every case failed.

:func:`failure_summary` reads it from the run record: the failed cases by error type with one
example message each (``performance.errors_by_type`` and ``.error_examples``, gathered by
:class:`ragmeter.metrics.performance_tally.PerformanceTally`, secrets masked and the message cut
to one line), the metrics skipped on every case with their reason
(:attr:`ragmeter.run_record.MetricSummary.skip_reason`) and those measured on no case because their
scores failed for one reason (``fail_reason``: retrieved ids that never match gold ids). The
text is plain: each report makes it inert its own way (``inert``, ``md_text``, ``esc``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragmeter.metrics.performance_tally import example_message
from ragmeter.run_record import RunRecord

__all__ = ["ErrorGroup", "FailureSummary", "SkipGroup", "failure_summary"]

# metric names listed a skip reason in the one-line forms (the rest counted)
NAMES_LISTED = 6


@dataclass(frozen=True)
class ErrorGroup:
    """The failed cases of one error type: how many, and one example message."""

    error_type: str
    count: int
    example: str | None

    def line(self) -> str:
        """``http_4xx 26: HTTP 422: {...} body.query``."""
        text = f"{self.error_type} {self.count}"
        return f"{text}: {self.example}" if self.example else text


@dataclass(frozen=True)
class SkipGroup:
    """Metrics skipped on every case for one reason."""

    reason: str
    metrics: list[str]
    # names listed in the one-line forms (the rest counted)
    listed: int = NAMES_LISTED
    # the metrics also failed on some cases (a target error): skipped on every other case
    partly_failed: bool = False
    # not skipped: every score failed for this reason (retrieved ids that never match gold ids)
    failed: bool = False

    @property
    def where(self) -> str:
        return "every case that did not fail" if self.partly_failed else "every case"

    @property
    def outcome(self) -> str:
        """``skipped on every case`` or, for failed scores, ``measured on no case``."""
        return "measured on no case" if self.failed else f"skipped on {self.where}"

    def names(self, limit: int | None = -1) -> str:
        """The metric names, the first ``limit`` of them (default ``listed``; None: all)."""
        limit = self.listed if limit == -1 else limit
        if limit is None or len(self.metrics) <= limit:
            return ", ".join(self.metrics)
        return f"{', '.join(self.metrics[:limit])} (+{len(self.metrics) - limit} more)"

    def line(self) -> str:
        """``recall_at_5: skipped on every case: target did not report retrieved chunks``."""
        return f"{self.names()}: {self.outcome}: {self.reason}"


@dataclass(frozen=True)
class FailureSummary:
    questions: int
    failed: int
    errors: list[ErrorGroup] = field(default_factory=list)
    skipped: list[SkipGroup] = field(default_factory=list)

    @property
    def all_failed(self) -> bool:
        """Every case of the run failed: nothing was measured."""
        return self.questions > 0 and self.failed >= self.questions

    def __bool__(self) -> bool:
        return bool(self.failed or self.skipped)


def failure_summary(record: RunRecord, headline: list[str] | None = None) -> FailureSummary:
    """The run's failed cases by error type (most first) and its metrics skipped on every case
    by reason (metrics named in ``headline`` first, then in scorecard order)."""
    counts = record.performance.errors_by_type
    examples = record.performance.error_examples
    errors = [
        ErrorGroup(
            str(error_type),
            int(count),
            example_message(str(examples[error_type])) if examples.get(error_type) else None,
        )
        for error_type, count in sorted(counts.items(), key=lambda item: (-int(item[1]), item[0]))
        if int(count) > 0
    ]
    failed = max(record.error_count, sum(group.count for group in errors))
    if failed and not errors:  # a run stored before the types were kept
        errors = [ErrorGroup("target error", failed, None)]
    by_reason: dict[tuple[str, bool], list[str]] = {}
    if record.question_count and failed >= record.question_count:
        # every case failed: a skip reason (a case without gold) would read as if something
        # had been measured on the other cases
        return FailureSummary(record.question_count, failed, errors, [])
    unmeasured: dict[str, list[str]] = {}  # failed on every case it was scored on, and why
    if record.scorecard is not None:
        chosen = record.config.get("perspectives")
        names = [m.name for m in record.scorecard.metrics]
        if chosen:
            from ragmeter.reports.perspectives import by_perspective

            shown = {s.name for summaries in by_perspective(record).values() for s in summaries}
            names = [name for name in names if name in shown]
        first = [name for name in headline or [] if name in names]
        for name in first + [name for name in names if name not in first]:
            summary = record.scorecard.get(name)
            if summary is None or summary.n_scored:
                continue
            # a target error fails every metric of its case, which the errors above say
            if summary.fail_reason and summary.n_failed > failed:
                unmeasured.setdefault(" ".join(summary.fail_reason.split()), []).append(name)
            elif summary.skip_reason:
                key = (" ".join(summary.skip_reason.split()), summary.n_failed > 0)
                by_reason.setdefault(key, []).append(name)
    skipped = [
        SkipGroup(reason, metrics, partly_failed=partly)
        for (reason, partly), metrics in by_reason.items()
    ] + [SkipGroup(reason, metrics, failed=True) for reason, metrics in unmeasured.items()]
    return FailureSummary(record.question_count, failed, errors, skipped)
