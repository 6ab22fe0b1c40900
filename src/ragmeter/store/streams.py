"""A run's cases, answers and scores read and written in batches, so that a run of a million
cases never has all of them in memory (``RunStore`` inherits these methods).

Batches follow the cases' stored order (``position``) and are read by key (``position >
last``), so each batch costs the same however far into the run it is.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from itertools import takewhile
from pathlib import Path
from typing import Any

from ragmeter.models import Case, CaseResult, Score
from ragmeter.run_record import RunRecord
from ragmeter.store import rows

# cases a batch holds when nothing else is said: big enough that per-batch costs vanish, small
# enough that a batch of cases, answers and their scores stays a few tens of MB
BATCH_CASES = 2_000

# a batch of cases read by key (run, position > the last one read): served by the index
# ``cases_by_position`` (migration m007), so no batch scans or sorts the run's cases
PENDING_BATCH = (
    "SELECT c.position, c.case_id, c.case_json FROM cases c"
    " WHERE c.run_id=? AND c.position>? AND NOT EXISTS"
    " (SELECT 1 FROM responses r WHERE r.run_id=c.run_id AND r.case_id=c.case_id)"
    " ORDER BY c.position LIMIT ?"
)
ANSWERED_BATCH = (
    "SELECT c.position, c.case_json, r.* FROM cases c"
    " JOIN responses r ON r.run_id=c.run_id AND r.case_id=c.case_id"
    " WHERE c.run_id=? AND c.position>? ORDER BY c.position LIMIT ?"
)

REASON_SQL = "SELECT reason FROM scores WHERE run_id=? AND metric=? AND status=? AND reason>''"
DETAIL_SQL = (
    "SELECT json_extract(details_json, ?1) AS found FROM scores WHERE run_id=?2 AND metric=?3"
    " AND found IS NOT NULL LIMIT 1"
)


# the cases after a position with their answers, answered or not (a NULL answer marks a case
# still being asked): what the scoring process reads while the run is asked
CASES_AFTER = (
    "SELECT c.position, c.case_json, r.* FROM cases c"
    " LEFT JOIN responses r ON r.run_id=c.run_id AND r.case_id=c.case_id"
    " WHERE c.run_id=? AND c.position>? ORDER BY c.position LIMIT ?"
)
UPDATE_SCORE = (
    "UPDATE scores SET value=?, status=?, reason=?, details_json=?"
    " WHERE run_id=? AND case_id=? AND metric=?"
)


class RunStreams:
    """Batch reads and writes of a run's rows (mixed into ``RunStore``)."""

    db: sqlite3.Connection
    path: Path

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _write_chunks(
        self, sql: str, rows: Iterable[Sequence[Any]], rows_per_insert: int = 1
    ) -> None:
        raise NotImplementedError

    # writing a new run ----------------------------------------------------------------------
    def add_cases(self, run_id: str, cases: Sequence[Case], first_position: int) -> None:
        """Store cases of a run that is being created (its run row comes last, with
        :meth:`insert_run`), numbered from ``first_position``."""
        found = rows.case_rows(run_id, cases, first_position)
        with self._errors(f"storing the cases of run {run_id}"):
            self.db.execute("PRAGMA foreign_keys=OFF")  # the run row is inserted last
            try:
                self._write_chunks(rows.INSERT_CASE, found)
            finally:
                self.db.execute("PRAGMA foreign_keys=ON")

    def insert_run(self, record: RunRecord, question_count: int) -> None:
        """Make a run whose cases :meth:`add_cases` stored visible."""
        with self._errors(f"storing run {record.id}"), self.transaction():
            self.db.execute(rows.INSERT_RUN, rows.run_row(record, question_count))

    def copy_answers(self, source_id: str, record: RunRecord) -> None:
        """Create the run ``record`` with the cases and answers of run ``source_id`` (a
        rescore), in one transaction, without reading them into memory."""
        with self._errors(f"copying run {source_id} into run {record.id}"), self.transaction():
            self.db.execute(rows.INSERT_RUN, rows.run_row(record, record.question_count))
            self.db.execute(
                "INSERT INTO cases (run_id, case_id, position, case_json)"
                " SELECT ?, case_id, position, case_json FROM cases WHERE run_id=?",
                (record.id, source_id),
            )
            self.db.execute(
                "INSERT INTO responses (run_id, case_id, status, error_type, error_message,"
                " latency_ms, attempts, response_json) SELECT ?, case_id, status, error_type,"
                " error_message, latency_ms, attempts, response_json FROM responses"
                " WHERE run_id=?",
                (record.id, source_id),
            )

    def delete_orphan_cases(self, run_id: str) -> None:
        """Remove the cases stored for a run that was never created (its input was refused)."""
        self._delete_in_chunks("cases", run_id, unless_run_exists=True)

    # asking ---------------------------------------------------------------------------------
    def count_pending(self, run_id: str) -> int:
        """Cases of the run with no stored answer."""
        with self._errors(f"counting the unanswered cases of run {run_id}"):
            row = self.db.execute(
                "SELECT COUNT(*) FROM cases c WHERE c.run_id=? AND NOT EXISTS"
                " (SELECT 1 FROM responses r WHERE r.run_id=c.run_id AND r.case_id=c.case_id)",
                (run_id,),
            ).fetchone()
        return int(row[0])

    def pending_batches(self, run_id: str, size: int | None = None) -> Iterator[list[Case]]:
        """The unanswered cases in order, ``size`` at a time (each batch read when asked for,
        so answers stored meanwhile are not asked again)."""
        size = size or BATCH_CASES
        last = -1
        while True:
            with self._errors(f"reading the unanswered cases of run {run_id}"):
                found = self.db.execute(PENDING_BATCH, (run_id, last, size)).fetchall()
            if not found:
                return
            last = int(found[-1]["position"])
            yield [rows.case_from_row(row, self.path, run_id) for row in found]

    # scoring --------------------------------------------------------------------------------
    def answered_batches(
        self, run_id: str, size: int | None = None
    ) -> Iterator[tuple[list[Case], list[CaseResult]]]:
        """The answered cases in order with their answers, ``size`` cases at a time."""
        size = size or BATCH_CASES
        last = -1
        while True:
            cases, results, last = self.answered_after(run_id, last, size)
            if not cases:
                return
            yield cases, results

    def answered_run(
        self, run_id: str, last: int, size: int
    ) -> tuple[list[Case], list[CaseResult], int]:
        """Up to ``size`` cases after position ``last`` that are answered with no unanswered
        case before them (the answers come back out of order while a run is asked), with
        their answers and the position of the last one (``last`` when there is none)."""
        with self._errors(f"reading the answers of run {run_id}"):
            found = self.db.execute(CASES_AFTER, (run_id, last, size)).fetchall()
        # the left join finds no answer (a NULL case id) for a case still being asked
        answered = list(takewhile(lambda row: row["case_id"] is not None, found))
        return self._answered(answered, run_id, last)

    def answered_after(
        self, run_id: str, last: int, size: int
    ) -> tuple[list[Case], list[CaseResult], int]:
        """:meth:`answered_run` once asking has ended: unanswered cases are passed over (the
        batches of :meth:`answered_batches`)."""
        with self._errors(f"reading the answers of run {run_id}"):
            found = self.db.execute(ANSWERED_BATCH, (run_id, last, size)).fetchall()
        return self._answered(found, run_id, last)

    def _answered(
        self, found: list[sqlite3.Row], run_id: str, last: int
    ) -> tuple[list[Case], list[CaseResult], int]:
        """The cases and answers of rows read with their position (``last`` when none)."""
        if not found:
            return [], [], last
        cases = [rows.case_from_row(row, self.path, run_id) for row in found]
        results = [rows.result_from_row(row) for row in found]
        return cases, results, int(found[-1]["position"])

    def update_scores(self, run_id: str, scores: Iterable[Score]) -> None:
        """Replace stored scores of a run (the same case and metric) with ``scores``."""
        from ragmeter.store.sqlite import score_rows

        changed = ((*row[3:], *row[:3]) for row in score_rows(run_id, scores))
        with self._errors(f"storing the scores of run {run_id}"):
            self._write_chunks(UPDATE_SCORE, changed)

    def scored_batches(
        self, run_id: str, size: int | None = None
    ) -> Iterator[tuple[list[Case], list[CaseResult], list[Score]]]:
        """:meth:`answered_batches` with each batch's stored scores."""
        for cases, results in self.answered_batches(run_id, size):
            ids = [case.case_id for case in cases]
            scores: list[Score] = []
            with self._errors(f"reading the scores of run {run_id}"):
                for start in range(0, len(ids), 500):  # under SQLite's parameter limit
                    chunk = ids[start : start + 500]
                    marks = ", ".join("?" * len(chunk))
                    found = self.db.execute(
                        f"SELECT * FROM scores WHERE run_id=? AND case_id IN ({marks})"
                        " ORDER BY rowid",
                        (run_id, *chunk),
                    ).fetchall()
                    scores.extend(rows.score_from_row(row) for row in found)
            yield cases, results, scores

    def clear_scores(self, run_id: str) -> None:
        """Delete a run's scores in chunks, so other writers are not locked out for long."""
        self._delete_in_chunks("scores", run_id)

    def _delete_in_chunks(self, table: str, run_id: str, unless_run_exists: bool = False) -> None:
        from ragmeter.store.sqlite import WRITE_CHUNK_ROWS

        with self._errors(f"deleting the {table} of run {run_id}"):
            while True:
                with self.transaction():
                    if (
                        unless_run_exists
                        and self.db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone()
                    ):
                        return
                    deleted = self.db.execute(
                        f"DELETE FROM {table} WHERE rowid IN"
                        f" (SELECT rowid FROM {table} WHERE run_id=? LIMIT ?)",
                        (run_id, WRITE_CHUNK_ROWS),
                    ).rowcount
                if deleted < WRITE_CHUNK_ROWS:
                    return

    def score_reasons(
        self, run_id: str, metrics: Iterable[str], status: str = "skipped"
    ) -> dict[str, str]:
        """metric -> the reason of its first score with ``status``, for the scorecard."""
        found: dict[str, str] = {}
        with self._errors(f"reading the {status} reasons of run {run_id}"):
            for metric in metrics:
                row = self.db.execute(REASON_SQL, (run_id, metric, status)).fetchone()
                if row is not None:
                    found[metric] = str(row[0])
        return found

    def first_detail(self, run_id: str, metrics: Iterable[str], key: str) -> str | None:
        """The first text under ``details[key]`` among the scores of ``metrics`` (a note of
        the run's scoring, such as the id-space check's ``matched by doc_id``)."""
        with self._errors(f"reading the score details of run {run_id}"):
            for metric in metrics:
                row = self.db.execute(DETAIL_SQL, (f"$.{key}", run_id, metric)).fetchone()
                if row is not None and row[0]:
                    return str(row[0])
        return None
