"""The run store: SQLite in WAL mode with named migrations (``store/migrations.py``).

Tables: ``runs`` (one row a run, config snapshot, scorecard and index stats as JSON), ``cases``
(the cases of a run, in order), ``responses`` (one row a case once asked: response or error),
``scores`` (one row a case and metric) and ``validity`` (one row a metric and labels file).
Responses are committed as they arrive, so a killed run loses at most the cases that were in
flight, and ``--resume`` asks only the cases with no response.

Several processes may share a store: each write is a short transaction (big writes go in chunks
of ``WRITE_CHUNK_ROWS`` rows) and a writer waits up to ``BUSY_TIMEOUT_S`` for the lock. Every
SQLite failure surfaces as a :class:`~ragmeter.errors.StoreError` that says what to do
(``store/errors.py``), and a stored row that no longer validates is reported, not raised
(``store/rows.py`` turns rows into models and back).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from itertools import chain, islice
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ragmeter.errors import StoreError
from ragmeter.models import Case, CaseResult, Score
from ragmeter.run_record import IndexStatsRecord, RunAggregates, RunRecord, Scorecard
from ragmeter.store import rows
from ragmeter.store.errors import HINT, RunNotFoundError, not_a_store, sqlite_error
from ragmeter.store.lock import RunLock, holder_pid
from ragmeter.store.migrations import MIGRATIONS, applied_count, migrate
from ragmeter.store.streams import RunStreams

__all__ = ["BUSY_TIMEOUT_S", "MIGRATIONS", "WRITE_CHUNK_ROWS", "RunNotFoundError", "RunStore"]

# how long a writer waits for another process's write transaction before giving up
BUSY_TIMEOUT_S = 60.0
# rows a big write (cases, responses, scores) commits at a time: a chunk holds the write lock
# for ~50 ms, and the next chunk's rows are built outside the lock, so a waiting writer gets in
WRITE_CHUNK_ROWS = 10_000

_SQLITE_MAGIC = b"SQLite format 3\x00"
# WAL pages (4 KiB) after which a commit checkpoints: SQLite's default is 1,000, but a run commits
# every answer as it arrives, and each checkpoint syncs the file while the event loop waits; at
# 10,000 a 2,000-case run checkpoints about once instead of four times, copying each page
# once (the WAL file grows to ~40 MB at most before it is reused)
WAL_AUTOCHECKPOINT_PAGES = 10_000
# scores one INSERT statement writes (7 parameters each: 700, under SQLite's oldest limit, 999)
SCORES_PER_INSERT = 100
ANSWERS_PER_INSERT = 32
# details dicts whose JSON ``score_rows`` keeps while writing a run's scores
_SHARED_DETAILS_KEPT = 4096

_T = TypeVar("_T")


def _chunks(rows: Iterable[_T], size: int) -> Iterator[list[_T]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


def score_rows(run_id: str, scores: Iterable[Score]) -> Iterator[tuple[Any, ...]]:
    """``rows.score_row`` of each score, except that a details dict shared by several scores
    (a retrieval case's ``{"level": ...}``, a grounding assessment's details) is turned into
    JSON once; the same rows, cheaper."""
    dumped: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (the dict, held; its JSON)
    for s in scores:
        details = s.details
        text = None
        if details:
            found = dumped.get(id(details))
            if found is None or found[0] is not details:
                if len(dumped) >= _SHARED_DETAILS_KEPT:
                    dumped.clear()
                found = dumped[id(details)] = (details, json.dumps(details))
            text = found[1]
        yield (run_id, s.case_id, s.metric, s.value, s.status, s.reason, text)


class RunStore(RunStreams):
    """The run store at ``path`` (a SQLite file, or ``":memory:"``).

    ``create=False`` opens an existing store only (for read-only commands): a missing file
    raises :class:`StoreError` and nothing is created. A path that is a folder, not a SQLite
    file, a corrupt or truncated database, or some other application's database raises
    :class:`StoreError` too.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self.memory = str(path) == ":memory:"
        target = ":memory:" if self.memory else self._check_path(create)
        try:
            self.db = sqlite3.connect(
                target,
                timeout=BUSY_TIMEOUT_S,
                check_same_thread=False,
                isolation_level=None,
                uri=not self.memory,
            )
        except sqlite3.Error as exc:
            raise self._error(exc, "opening it") from exc
        try:
            self.db.row_factory = sqlite3.Row
            self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            self._check_schema()  # before anything is written into somebody else's file
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except BaseException as exc:
            self.db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc, "opening it") from exc
            raise

    # opening ----------------------------------------------------------------------------------
    def _not_a_store(self, why: str) -> StoreError:
        return not_a_store(self.path, why)

    def _check_path(self, create: bool) -> str:
        """Refuse folders, non-SQLite files and (unless ``create``) a missing store; return the
        URI to open."""
        path = self.path
        if path.is_dir():
            raise self._not_a_store("it is a folder")
        if path.exists():
            try:
                with path.open("rb") as handle:
                    head = handle.read(len(_SQLITE_MAGIC))
            except OSError as exc:
                raise StoreError(
                    f"cannot read the run store {path}: {exc.strerror or exc}"
                ) from exc
            if head and head != _SQLITE_MAGIC[: len(head)]:
                raise self._not_a_store("file is not a database")
            mode = "rw"
        elif not create:
            raise StoreError(f"no run store at {path}; run `ragmeter eval` first or pass --store")
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the run store {path}: {exc.strerror or exc}; {HINT}"
                ) from exc
            mode = "rwc"
        return f"file:{quote(str(path.absolute()))}?mode={mode}"

    def _check_schema(self) -> None:
        tables = {
            row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if tables and "schema_migrations" not in tables:
            raise self._not_a_store("a SQLite database without ragmeter's tables")

    def _migrate(self) -> None:
        # each migration in its own write transaction, decided again under the write lock
        # (another process may be creating the same store)
        migrate(self.db, self.transaction, where=f"the run store {self.path}")

    # errors ------------------------------------------------------------------------------------
    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        """A StoreError that says what went wrong with the store and what to do about it."""
        return sqlite_error(self.path, exc, doing, BUSY_TIMEOUT_S)

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc, doing) from exc

    # transactions -------------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        """How many of the registered migrations the store has had."""
        with self._errors("reading the schema version"):
            return applied_count(self.db)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits for the write lock up front)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.db.in_transaction:  # SQLite may have rolled back already (disk full)
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _write_chunks(
        self, sql: str, rows: Iterable[Sequence[Any]], rows_per_insert: int = 1
    ) -> None:
        """``executemany`` in transactions of at most WRITE_CHUNK_ROWS rows; with
        ``rows_per_insert`` > 1, ``sql`` (an ``INSERT ... VALUES (...)``) inserts that many rows
        a statement (the same rows in the same order, a third faster for small rows)."""
        many = ""
        if rows_per_insert > 1:
            head, _, values = sql.partition(" VALUES ")
            many = f"{head} VALUES {', '.join([values] * rows_per_insert)}"
        for chunk in _chunks(rows, WRITE_CHUNK_ROWS):  # rows are built outside the lock
            with self.transaction():
                whole = len(chunk) - len(chunk) % rows_per_insert if many else 0
                if whole:
                    self.db.executemany(
                        many,
                        (
                            tuple(chain.from_iterable(chunk[i : i + rows_per_insert]))
                            for i in range(0, whole, rows_per_insert)
                        ),
                    )
                if whole < len(chunk):
                    self.db.executemany(sql, chunk[whole:])

    def close(self) -> None:
        self.db.close()

    # run locks ----------------------------------------------------------------------------------
    def lock_run(self, run_id: str) -> RunLock:
        """``with store.lock_run(run_id):`` makes this process the only one driving the run.

        Raises :class:`~ragmeter.errors.RunLockedError` (naming the holder's pid) if another
        process holds it. The lock is a ``flock`` on ``<store>.locks/<run_id>.lock``, released
        by the kernel whenever the holder ends, SIGKILL included. A no-op for ``:memory:``.
        """
        return _NoLock() if self.memory else RunLock(self.path, run_id)

    def run_driver_pid(self, run_id: str) -> int | None:
        """The pid of the live process driving ``run_id``, or None (a ``running`` run with no
        driver was killed and can be resumed)."""
        return None if self.memory else holder_pid(self.path, run_id)

    # runs -----------------------------------------------------------------------------------
    def create_run(self, record: RunRecord, cases: list[Case]) -> None:
        """Store a new run and its cases. The run becomes visible only once all of its cases
        are stored (a big run's cases are written in chunks, the run row last)."""
        with self._errors(f"storing run {record.id}"):
            if self.db.execute("SELECT 1 FROM runs WHERE id=?", (record.id,)).fetchone():
                raise StoreError(f"run {record.id} already exists in {self.path}")
        self.delete_orphan_cases(record.id)  # cases left by an earlier attempt that died
        self.add_cases(record.id, cases, 0)
        self.insert_run(record, len(cases))

    def finish_run(
        self,
        run_id: str,
        scorecard: Scorecard,
        completed_at: str,
        error_count: int,
        aggregates: RunAggregates | None = None,
    ) -> None:
        """Mark a run completed with its scorecard and ``aggregates`` (breakdowns, weighted
        score, goals, performance summary, ...)."""
        extras_json = rows.extras_json(aggregates)
        with self._errors(f"finishing run {run_id}"), self.transaction():
            self.db.execute(
                "UPDATE runs SET status='completed', completed_at=?, scorecard_json=?,"
                " error_count=?, extras_json=? WHERE id=?",
                (completed_at, scorecard.model_dump_json(), error_count, extras_json, run_id),
            )

    def save_aggregates(self, run_id: str, aggregates: RunAggregates) -> None:
        """Replace a finished run's aggregates with ``aggregates`` (a verdict decided after
        the run, e.g. a ``non_inferior`` goal's)."""
        with self._errors(f"updating run {run_id}"), self.transaction():
            self.db.execute(
                "UPDATE runs SET extras_json=? WHERE id=?", (rows.extras_json(aggregates), run_id)
            )

    def save_index_stats(self, run_id: str, stats: IndexStatsRecord) -> None:
        """Store the target's index statistics with the run (``targets/index_stats.py``)."""
        with self._errors(f"storing the index stats of run {run_id}"), self.transaction():
            self.db.execute(
                "UPDATE runs SET index_stats_json=? WHERE id=?", (stats.model_dump_json(), run_id)
            )

    def mark_interrupted(self, run_id: str) -> None:
        with self._errors(f"marking run {run_id} interrupted"):
            self.db.execute(
                "UPDATE runs SET status='interrupted' WHERE id=? AND status='running'", (run_id,)
            )

    def get_run(self, run_id: str) -> RunRecord:
        """The run ``run_id`` (or the only run whose id starts with it).

        Raises RunNotFoundError, or StoreError if the stored run no longer validates."""
        with self._errors(f"reading run {run_id}"):
            row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                prefix = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                matches = self.db.execute(
                    "SELECT * FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 6", (f"{prefix}%",)
                ).fetchall()
                if len(matches) != 1:
                    raise RunNotFoundError(run_id, [m["id"] for m in matches])
                row = matches[0]
        return rows.record_from_row(row, self.path)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The newest runs. A run whose scorecard or extras no longer validate is listed
        without them (``get_run`` names the problem); one whose core fields do not is left
        out."""
        with self._errors("listing runs"):
            found = self.db.execute(
                "SELECT * FROM runs ORDER BY created_at DESC LIMIT ?", (limit,)
            ).fetchall()
        records = []
        for row in found:
            try:
                records.append(rows.record_from_row(row, self.path))
            except StoreError:
                try:
                    records.append(rows.record_from_row(row, self.path, lenient=True))
                except StoreError:
                    continue
        return records

    # cases and responses ----------------------------------------------------------------------
    def get_cases(self, run_id: str) -> list[Case]:
        with self._errors(f"reading the cases of run {run_id}"):
            found = self.db.execute(
                "SELECT case_id, case_json FROM cases WHERE run_id=? ORDER BY position",
                (run_id,),
            ).fetchall()
        return [rows.case_from_row(row, self.path, run_id) for row in found]

    def answered_case_ids(self, run_id: str) -> set[str]:
        with self._errors(f"reading the answered cases of run {run_id}"):
            return {
                row[0]
                for row in self.db.execute(
                    "SELECT case_id FROM responses WHERE run_id=?", (run_id,)
                )
            }

    def save_result(self, run_id: str, result: CaseResult) -> None:
        """Commit one answer at once (one short transaction; a case already answered keeps its
        first answer). Durable against the process being killed as soon as this returns."""
        row = rows.response_row(run_id, result)
        with self._errors(f"saving the answer to case {result.case_id}"), self.transaction():
            self.db.execute(rows.INSERT_RESPONSE, row)

    def save_results(self, run_id: str, results: Iterable[CaseResult]) -> None:
        """Commit answers in chunks of WRITE_CHUNK_ROWS; a case already answered keeps its
        first answer."""
        answers = (rows.response_row(run_id, r) for r in results)
        with self._errors(f"saving answers of run {run_id}"):
            # many rows a statement: one step of SQLite, so a thread saving answers seldom
            # hands the interpreter back and forth with the thread that asks
            self._write_chunks(rows.INSERT_RESPONSE, answers, ANSWERS_PER_INSERT)

    def get_results(self, run_id: str) -> list[CaseResult]:
        """The stored answers in case order. A stored row that no longer validates comes back
        as an error result (``unreadable_response``) naming the case and the field."""
        with self._errors(f"reading the answers of run {run_id}"):
            found = self.db.execute(
                "SELECT r.* FROM responses r"
                " JOIN cases c ON c.run_id = r.run_id AND c.case_id = r.case_id"
                " WHERE r.run_id=? ORDER BY c.position",
                (run_id,),
            ).fetchall()
        return [rows.result_from_row(row) for row in found]

    # scores -------------------------------------------------------------------------------------
    def replace_scores(self, run_id: str, scores: Iterable[Score]) -> None:
        """Replace the scores of a run: the old ones are deleted, then the new ones inserted,
        in chunks of WRITE_CHUNK_ROWS so that other writers are not locked out for long. A run's
        scores are complete once ``finish_run`` has marked it completed."""
        self.clear_scores(run_id)
        self.add_scores(run_id, scores)

    def add_scores(self, run_id: str, scores: Iterable[Score], checkpoint: bool = True) -> None:
        """Insert scores of a run (a batch of its cases), in chunks of WRITE_CHUNK_ROWS; the
        WAL is checkpointed once after them, unless ``checkpoint`` is false (a writer of many
        small batches leaves it to SQLite's automatic checkpoint)."""
        checkpointed = self._checkpoint_after() if checkpoint else nullcontext()
        with self._errors(f"storing the scores of run {run_id}"), checkpointed:
            self._write_chunks(rows.INSERT_SCORE, score_rows(run_id, scores), SCORES_PER_INSERT)

    @contextmanager
    def _checkpoint_after(self) -> Iterator[None]:
        """No automatic WAL checkpoint inside a big write: it is checkpointed once at the end
        (a checkpoint every ~4 MB would sync the file and rewrite the same index pages each
        time). Readers and other writers are not held up by this."""
        if self.memory:
            yield
            return
        pages = self.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
        if pages > 0:
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def get_scores(self, run_id: str, *, unfinished: bool = False) -> list[Score]:
        """The scores of a completed run (none for a run whose scoring has not finished: an
        interrupted pass may have stored some batches; ``unfinished`` reads them anyway, as
        the spot check does while the run is being scored)."""
        finished = (
            ""
            if unfinished
            else " AND EXISTS (SELECT 1 FROM runs WHERE id=? AND status='completed')"
        )
        arguments = (run_id,) if unfinished else (run_id, run_id)
        with self._errors(f"reading the scores of run {run_id}"):
            found = self.db.execute(
                f"SELECT * FROM scores WHERE run_id=?{finished} ORDER BY rowid", arguments
            ).fetchall()
        return [rows.score_from_row(row) for row in found]

    def judge_cost(self, run_id: str) -> dict[str, Any]:
        """Calls, cache hits, tokens and USD of the LLM judge calls recorded for a run."""
        with self._errors(f"reading the judge calls of run {run_id}"):
            row = self.db.execute(
                "SELECT COUNT(*) AS calls, SUM(cached) AS cached, SUM(prompt_tokens) AS prompt,"
                " SUM(completion_tokens) AS completion, SUM(cost_usd) AS usd,"
                " SUM(cost_usd IS NULL AND cached = 0) AS unpriced"
                " FROM judge_calls WHERE run_id=?",
                (run_id,),
            ).fetchone()
        return rows.judge_cost_from_row(row)

    # validity reports ---------------------------------------------------------------------------
    def save_validity(
        self,
        run_id: str,
        labels_sha256: str,
        labels_path: str,
        created_at: str,
        labels_json: str,
        results: dict[str, str],
    ) -> None:
        """Store a validity report: one row a metric (its result as JSON), replacing the row of
        the same run, metric and labels file (by content hash)."""
        found = [
            (run_id, metric, labels_sha256, labels_path, created_at, labels_json, result)
            for metric, result in results.items()
        ]
        with self._errors(f"storing the validity report of run {run_id}"), self.transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO validity (run_id, metric, labels_sha256, labels_path,"
                " created_at, labels_json, result_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                found,
            )

    def get_validity(self, run_id: str) -> list[tuple[str, str]]:
        """The stored validity rows of a run as (labels JSON, result JSON), newest first (rows
        stored together in the order they were given)."""
        with self._errors(f"reading the validity reports of run {run_id}"):
            found = self.db.execute(
                "SELECT labels_json, result_json FROM validity WHERE run_id=?"
                " ORDER BY created_at DESC, rowid",
                (run_id,),
            ).fetchall()
        return [(row[0], row[1]) for row in found]

    def counts(self, run_id: str) -> dict[str, Any]:
        with self._errors(f"counting the answers of run {run_id}"):
            row = self.db.execute(
                "SELECT COUNT(*) AS answered, SUM(status != 'ok') AS errors"
                " FROM responses WHERE run_id=?",
                (run_id,),
            ).fetchone()
        return {"answered": int(row["answered"]), "errors": int(row["errors"] or 0)}


class _NoLock(RunLock):
    """The lock of a ``:memory:`` store: one connection, nothing to share."""

    def __init__(self) -> None:
        self.run_id = ""
        self._fd = None

    def acquire(self) -> None:
        return None

    def release(self) -> None:
        return None
