"""Scoring while a run is asked: a second process scores and stores the answers as they
arrive, so that with a spare core the scores are ready soon after the last answer.

When (:func:`scores_while_asking`): ``score_while_asking`` (on by default), the local
executor, a store on disk, no judge (its budget and cache belong to one process), every metric
family importable by name (none registered in this process only), at least two CPUs, and a run
of one batch (``BATCH_CASES``) with MIN_CASES_TO_SCORE_WHILE_ASKING cases or more to ask.
Otherwise the run is scored after asking, in this process.

This process asks and hands each answer to :class:`AnswerWriter`, a thread with a connection of
its own that commits answers a few at a time, so the event loop never waits on the scoring
process's writes. The scoring process (:func:`main`) reads the answered cases in order, scores
and stores them a chunk at a time. A metric with a run-wide
statistic (``Metric.prepare_run``: TF-IDF redundancy) cannot be scored before the last
answer: its row is stored as a placeholder in its place and replaced once asking has ended.
Then the run's scores go to the score columns, the run file and the performance tally as
:func:`~ragmeter.runner.scoring.score_run` gives them, so the scores, the
store's rows, the scorecard and the run file are the same as scoring after asking (a test).
If the process dies without a word, the run is scored here after asking instead.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path

from ragmeter.background import in_daemon_thread
from ragmeter.config import EvalConfig
from ragmeter.errors import RagmeterError
from ragmeter.metrics.base import Metric, SkipScore
from ragmeter.metrics.performance import apply_prices
from ragmeter.metrics.performance_tally import PerformanceTally
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.run_record import RunRecord
from ragmeter.runfile import RunFileWriter
from ragmeter.runner.scoring import (
    ScoreSink,
    ScoringStoppedError,
    _cleared_on_failure,
    finish_scoring,
    paused_gc,
    run_metrics,
    score_results,
)
from ragmeter.scoring.columns import ScoreColumns
from ragmeter.store import streams
from ragmeter.store.sqlite import RunStore

# fewer cases to ask than this: starting a process costs more than it saves
MIN_CASES_TO_SCORE_WHILE_ASKING = 500
# cases the scoring process scores and stores at a time, at most
CHUNK_CASES = 250
# how long the scoring process waits before looking for new answers
POLL_S = 0.02
# how often the answer writer commits what has arrived: rarely enough that its thread seldom
# takes the interpreter from the asking, often enough that an answer is soon durable
COMMIT_EVERY_S = 0.05
# how much lower the scoring process's CPU priority is than the asking process's
SCORING_NICENESS = 10
PENDING_REASON = "scored once every answer is in (a run-wide statistic)"
_ASKED, _STOP = b"a", b"s"


def scores_while_asking(config: EvalConfig, local_executor: bool, pending: int, total: int) -> bool:
    """Whether the answers of this run (``total`` cases, ``pending`` of them to ask) are
    scored in a second process while it is asked. Only a run of one batch is: its scores are
    held until the run-wide statistic is known; a larger run is scored batch by batch after
    asking, in the memory of one batch and one process (``score_run``)."""
    from ragmeter.registry import registry

    families = list(config.metrics)
    return (
        config.score_while_asking
        and local_executor
        and config.store != ":memory:"
        and not config.judge
        and pending >= MIN_CASES_TO_SCORE_WHILE_ASKING
        and total <= streams.BATCH_CASES
        and usable_cpus() > 1
        and all(registry.origin("metrics", name) != "registered" for name in families)
    )


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or ``taskset``'s)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class AnswerWriter:
    """``save_result`` for a run being asked: the answers are committed by a thread with a
    connection of its own, every COMMIT_EVERY_S what has arrived, so the asking never waits
    for the store's write lock (the scoring process writes too). :meth:`close` commits what
    is left and raises the thread's error, if it had one."""

    def __init__(self, store_path: str, run_id: str) -> None:
        self._answers: queue.SimpleQueue[CaseResult | None] = queue.SimpleQueue()
        self._closing = threading.Event()  # commit what is left now, not at the next tick
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._commit, args=(store_path, run_id), name="ragmeter-answers", daemon=True
        )
        self._thread.start()

    def save_result(self, run_id: str, result: CaseResult) -> None:
        if self._error is not None:
            raise self._error
        self._answers.put(result)

    def _commit(self, store_path: str, run_id: str) -> None:
        try:
            store = RunStore(store_path)
        except BaseException as exc:
            self._error = exc
            return
        try:
            ended = False
            while not ended:
                self._closing.wait(COMMIT_EVERY_S)
                group = [self._answers.get()]
                while True:
                    try:
                        group.append(self._answers.get_nowait())
                    except queue.Empty:
                        break
                answers = [answer for answer in group if answer is not None]
                ended = len(answers) < len(group)
                if answers:
                    store.save_results(run_id, answers)
        except BaseException as exc:
            self._error = exc
        finally:
            store.close()

    def close(self) -> None:
        self._answers.put(None)
        self._closing.set()
        self._thread.join()
        if self._error is not None:
            raise self._error


@dataclass
class _Job:
    config: EvalConfig
    run_id: str
    run_file: str
    chunk: int


class ScoringProcess:
    """The asking side of the scoring process: :meth:`spawn` it early (it imports ragmeter
    while the cases are stored), :meth:`start` its run before asking, :meth:`finish` once
    every answer is stored, :meth:`stop` when the run is interrupted or fails, :meth:`cancel`
    when it is not needed after all."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @classmethod
    def spawn(cls) -> ScoringProcess | None:
        """A scoring process waiting for its run; None when it cannot be started."""
        import ragmeter

        # this copy of ragmeter, found as the child's own sys.path finds it, else added last
        source = str(Path(ragmeter.__file__).resolve().parents[1])
        program = (
            f"import sys; sys.path.count({source!r}) or sys.path.append({source!r}); "
            "from ragmeter.runner.score_while_asking import main; main()"
        )
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", program],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C at the terminal reaches the asking process only
            )
        except OSError:
            return None
        return cls(process)

    @classmethod
    def start(
        cls,
        config: EvalConfig,
        run_id: str,
        run_file: Path,
        spawned: ScoringProcess | None = None,
    ) -> ScoringProcess | None:
        """A process (``spawned``, else a new one) scoring the run ``run_id`` as it is asked;
        None when there is none (the run is then scored after asking, here)."""
        scoring = spawned or cls.spawn()
        if scoring is None:
            return None
        # the scoring process never asks the target: its headers (secrets) stay here
        unasked = config.model_copy(
            update={"target": config.target.model_copy(update={"headers": {}})}
        )
        try:
            job = pickle.dumps(_Job(unasked, run_id, str(run_file), CHUNK_CASES))
        except (pickle.PicklingError, TypeError, AttributeError):
            scoring.cancel()
            return None
        scoring._send(len(job).to_bytes(8, "big") + job)
        return scoring

    def cancel(self) -> None:
        """End a process that was given no run (it exits when its input closes)."""
        with suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        self.stop()

    def _send(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the process is gone: finish() finds no reply

    async def finish(self) -> bool:
        """Tell the process asking has ended and wait for it: True once the run is scored and
        its run file written; False if the process died without a word (score it here).
        Raises what the process raised (ScoringStoppedError if it was stopped)."""
        self._send(_ASKED)
        reply = await in_daemon_thread(self._reply)
        if reply is None:
            warnings.warn(
                f"the scoring process ended without a reply (exit code "
                f"{self.process.returncode}); scoring the run after asking instead",
                RuntimeWarning,
                stacklevel=2,
            )
            return False
        if isinstance(reply, BaseException):
            raise reply
        return True

    def _reply(self) -> BaseException | bool | None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            reply = pickle.load(stdout)
        except Exception:  # nothing, or not a reply: the process died
            reply = None
        self.process.wait()
        self._close_pipes()
        return reply if isinstance(reply, (bool, BaseException)) else None

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop scoring (the process removes the scores it stored) and wait for it."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self._send(_STOP)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._close_pipes()


# --- the scoring process ---------------------------------------------------------------------
def _pending(case: Case, response: Response) -> float:
    raise SkipScore(PENDING_REASON)


def _placeholder(metric: Metric) -> Metric:
    return replace(
        metric, compute=_pending, on_result=None, prepare=None, prepare_run=None, requires=()
    )


def _answers_as_asked(
    store: RunStore,
    run_id: str,
    asked: threading.Event,
    stop: threading.Event,
    chunk: int,
) -> Iterator[tuple[list[Case], list[CaseResult]]]:
    """The run's answered cases in order, as they are stored, ``chunk`` at most at a time.
    Once asking has ended, unanswered cases are passed over (as score_run does)."""
    last = -1
    parent = os.getppid()
    while True:
        ended = asked.is_set()  # read first: every answer stored before it is then seen
        if ended:
            cases, results, last = store.answered_after(run_id, last, chunk)
            if not cases:
                return
        else:
            cases, results, last = store.answered_run(run_id, last, chunk)
            if not cases:
                if stop.is_set():
                    raise ScoringStoppedError(run_id)
                if os.getppid() != parent:  # gone, though a process it forked holds the pipe
                    _leave()
                asked.wait(POLL_S)  # returns at once when asking ends
                continue
        yield cases, results


def _put_back(scores: list[Score], real: list[Score], slots: list[int], per_case: int) -> None:
    """Put each case's scores of the held metrics (``real``) in their ``slots``."""
    held = len(slots)
    for case in range(len(real) // held if held else 0):
        for k, slot in enumerate(slots):
            scores[case * per_case + slot] = real[case * held + k]


@paused_gc()
def score_following(
    store: RunStore,
    run_id: str,
    config: EvalConfig,
    stop: threading.Event,
    asked: threading.Event,
    sink: ScoreSink,
    chunk: int = CHUNK_CASES,
) -> RunRecord:
    """:func:`~ragmeter.runner.scoring.score_run` of a run of one batch still being asked
    (``asked`` is set when it no longer is): the same scores, rows, columns, run file and
    performance summary."""
    metrics = run_metrics(config, run_id)
    slots = [i for i, metric in enumerate(metrics) if metric.prepare_run is not None]
    held = [metrics[i] for i in slots]
    early = [_placeholder(m) if m.prepare_run is not None else m for m in metrics]
    store.clear_scores(run_id)
    tally = PerformanceTally()
    with ScoreColumns(metrics, config.breakdowns) as columns, _cleared_on_failure(store, run_id):
        cases: list[Case] = []
        results: list[CaseResult] = []
        scores: list[Score] = []
        for chunk_cases, chunk_results in _answers_as_asked(store, run_id, asked, stop, chunk):
            chunk_scores = score_results(chunk_cases, chunk_results, early, stop)
            store.add_scores(run_id, chunk_scores, checkpoint=False)  # a checkpoint each: slow
            cases += chunk_cases
            results += chunk_results
            scores += chunk_scores
        if cases:
            if held:  # the run-wide statistic, now that it has every answer
                real = score_results(cases, results, held, stop)
                _put_back(scores, real, slots, len(metrics))
                store.update_scores(run_id, real)
            columns.add(cases, scores)
            sink(results, scores)
            tally.add(results, apply_prices(results, config.prices), cases)
        return finish_scoring(store, run_id, config, metrics, columns, tally, stop)


def _read_exactly(size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = os.read(0, size - len(data))  # unbuffered: the controls follow the job
        if not more:
            raise EOFError("the asking process closed the pipe")
        data += more
    return data


def _read_controls(asked: threading.Event, stop: threading.Event) -> None:
    while True:
        try:
            control = os.read(0, 1)
        except OSError:
            control = b""
        if control == _ASKED:
            asked.set()
        elif control == _STOP:
            stop.set()
            asked.set()
            return
        elif not control:  # the asking process is gone (killed): so is its lock on the run
            _leave()


def _leave() -> None:
    """Exit at once, clearing nothing: the run's lock went with the asking process, and a
    ``--resume`` that takes it clears the scores itself (while this would race it)."""
    os._exit(0)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the asking process too
    if hasattr(os, "nice"):  # idle cores first: the asking and a local target come first
        with suppress(OSError):
            os.nice(SCORING_NICENESS)
    replies = os.dup(1)
    os.dup2(2, 1)  # only the reply goes to the asking process; anything printed, to stderr
    try:
        job: _Job = pickle.loads(_read_exactly(int.from_bytes(_read_exactly(8), "big")))
    except EOFError:  # cancelled: no run for this process
        os._exit(0)
    asked, stop = threading.Event(), threading.Event()
    threading.Thread(target=_read_controls, args=(asked, stop), daemon=True).start()
    reply: BaseException | bool
    try:
        store = RunStore(job.config.store)
        writer = RunFileWriter(Path(job.run_file))
        try:
            final = score_following(
                store, job.run_id, job.config, stop, asked, writer.add, job.chunk
            )
            writer.finish(final)
        finally:
            writer.close()
            store.close()
        reply = True
    except BaseException as exc:
        reply = exc
    with suppress(OSError), os.fdopen(replies, "wb") as out:  # the asking process may be gone
        out.write(_picklable(reply))
    os._exit(0)  # not waiting for the control reader, blocked on the pipe


def _picklable(reply: BaseException | bool) -> bytes:
    """The reply pickled; an error that does not come back whole comes back as its text, a
    ragmeter error keeping its exit code."""
    try:
        data = pickle.dumps(reply)
        pickle.loads(data)
        return data
    except Exception:
        text = f"{type(reply).__name__}: {reply}"
        if isinstance(reply, RagmeterError):
            error = RagmeterError(text)
            error.exit_code = reply.exit_code
            return pickle.dumps(error)
        return pickle.dumps(RuntimeError(text))
