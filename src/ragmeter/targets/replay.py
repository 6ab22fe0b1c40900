"""Replay target: recorded responses from a JSONL file, so a run can be scored offline.

Each line is ``{"case_id": ..., "response": {...}}`` or a flat response with a ``case_id``;
a recorded failure is ``{"case_id": ..., "error_type": ..., "error_message": ...}``. A recorded
reply in a framework's shape (``{"response", "source_nodes"}``, ...) is read in its response
format (``targets/formats.py``), as are all of them under ``response_mapping`` or a named
``response_format``.

The file is read when the target is built: a missing file, a line that is not a JSON object,
a line without a usable ``case_id``, a case recorded twice, a key given twice and a value that
cannot be stored are reported together, each naming file:line. A recorded response that does
not fit the response schema (NaN, a negative latency) fails its case as ``invalid_response``,
as the same answer from a live target would; the message names file:line and field. A line that
gives both a ``response`` object and flat response fields (``answer``) is refused: one of the
two would be dropped without a word.

A replayed response has the latency it recorded (``latency_ms.total``) or none: the time taken
to read it from the file is not the system's, so no total is added and the latency metrics
skip the case. Lines that no case asked for are counted and named in a warning on stderr when
the target is closed.
"""

from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from ragmeter.config import TargetConfig
from ragmeter.datasets.jsonl import inspect_value, iter_jsonl, loads_line
from ragmeter.datasets.problems import DatasetError, Problem, problems_from_validation
from ragmeter.errors import InputError
from ragmeter.models import Case, Response
from ragmeter.targets.base import TargetError

_BOM = b"\xef\xbb\xbf"
# flat response fields that must not stand beside a "response" object (``latency_ms`` may: a
# trace line keeps the case's wall time there)
_FLAT_FIELDS = (
    "answer",
    "retrieved",
    "retrieved_chunks",
    "citations",
    "references",
    "abstained",
    "confidence",
    "policy_flags",
    "guardrail_scores",
    "usage",
    "scope",
)
_UNUSED_SHOWN = 5  # ids named in the warning about lines no case asked for
_READ = 1 << 16  # bytes read at a time for a recorded line (most fit in one read)


class Recorded(NamedTuple):
    """One recorded line: where it is and what it says."""

    line: int
    record: dict[str, Any]


def _case_id(record: dict[str, Any]) -> str | None:
    raw = record.get("case_id")
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    text = str(raw)
    return text if text.strip() else None


class RecordedIndex:
    """Where each case's line is in a replay file (line number and byte offset), so a file of
    a million responses is checked in one pass and each response read when its case is
    asked, not held in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.row: dict[str, int] = {}
        self.lines = array("q")
        self.offsets = array("q")
        # 1 for each line read for a case: a byte a line, not a set of a million ids
        self.used = bytearray()
        self._fd: int | None = None

    def __len__(self) -> int:
        return len(self.row)

    def __contains__(self, case_id: object) -> bool:
        return case_id in self.row

    def add(self, case_id: str, line: int, offset: int) -> None:
        self.row[case_id] = len(self.lines)
        self.lines.append(line)
        self.offsets.append(offset)
        self.used.append(0)

    def line_of(self, case_id: str) -> int:
        return self.lines[self.row[case_id]]

    def get(self, case_id: str) -> Recorded | None:
        """The recorded line of ``case_id`` (None if the file has none), read from the file
        now: a file changed since it was checked fails the case, never answers for another."""
        row = self.row.get(case_id)
        if row is None:
            return None
        self.used[row] = 1
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        offset, line = self.offsets[row], self.lines[row]
        raw = b""
        while b"\n" not in raw:
            part = os.pread(self._fd, _READ, offset + len(raw))
            if not part:
                break
            raw += part
        raw = raw.split(b"\n", 1)[0]
        if offset == 0 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        try:
            value, _ = loads_line(raw.decode("utf-8").removesuffix("\r"))
        except (UnicodeDecodeError, InputError):
            value = None
        if not isinstance(value, dict) or _case_id(value) != case_id:
            raise TargetError(
                "replay_file_changed",
                f"{self.path}:{line}: the replay file changed after it was checked (this line "
                f"no longer holds case {case_id}); replay an unchanged file",
            )
        return Recorded(line, value)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_recorded(path: Path) -> RecordedIndex:
    """The recorded lines of a replay file by case id.

    Raises :class:`~ragmeter.errors.InputError` when the file is missing or unreadable and
    :class:`~ragmeter.datasets.DatasetError` (also an ``InputError``) with every problem of
    its lines."""
    if not path.exists():
        raise InputError(f"replay file {path} does not exist")
    if path.is_dir():
        raise InputError(f"replay file {path} is a folder; give the JSONL file of responses")
    problems: list[Problem] = []
    file = str(path)
    recorded = RecordedIndex(path)
    for number, offset, record in iter_jsonl(path, problems):
        if not isinstance(record, dict):
            problems.append(Problem(file, number, None, "expected a JSON object"))
            continue
        case_id = _case_id(record)
        if case_id is None:
            got = record.get("case_id")
            problems.append(
                Problem(
                    file,
                    number,
                    "case_id",
                    "each line needs a case_id"
                    if got is None
                    else f"must be a non-blank string or an integer (got {got!r})",
                )
            )
            continue
        if case_id in recorded:
            problems.append(
                Problem(
                    file,
                    number,
                    "case_id",
                    f"case recorded twice (first at line {recorded.line_of(case_id)}); "
                    "keep one response per case",
                    case_id,
                )
            )
            continue
        if "response" in record and not isinstance(record["response"], dict):
            problems.append(
                Problem(
                    file,
                    number,
                    "response",
                    f"must be a JSON object (got {type(record['response']).__name__})",
                    case_id,
                )
            )
        flat = [key for key in _FLAT_FIELDS if key in record]
        if "response" in record and flat:
            problems.append(
                Problem(
                    file,
                    number,
                    flat[0],
                    f"the line gives both a 'response' object and a flat {flat[0]!r}; give one "
                    'form: {"case_id": ..., "response": {...}} or the response\'s fields beside '
                    "the case_id",
                    case_id,
                )
            )
        problems.extend(
            Problem(file, number, f.field, f.message, case_id)
            for f in inspect_value(record, finite=False)
        )
        recorded.add(case_id, number, offset)
    if problems and not len(recorded) and problems[0].line is None:
        raise InputError(f"cannot read replay file {path}: {problems[0].message}")
    if not len(recorded) and not problems:
        raise InputError(f"replay file {path} holds no recorded responses")
    if problems:
        problems.sort(key=lambda p: p.line or 0)
        raise DatasetError(problems, what="the replay file")
    return recorded


class ReplayTarget:
    name = "replay"
    # the time a replayed call takes is a file read, not the system's latency: a response
    # without a recorded total has none (the engine adds no time of its own)
    measures_latency = False

    def __init__(self, config: TargetConfig, **_: Any) -> None:
        if not config.path:
            raise InputError("the replay target needs a path to a JSONL of recorded responses")
        self.path = Path(config.path)
        self.recorded = read_recorded(self.path)
        self.asked_any = False  # a case was asked (the run's own copy under Ray asks none)
        self.stopped = False  # the run stopped before asking every case (stop_asking)
        self.response_format = config.response_format
        self.mapping = config.response_mapping

    def reads_framework(self, payload: Any) -> bool:
        """Whether a recorded reply is read by a response format or mapping
        (``targets/formats.py``) rather than as a recorded ragmeter response: when a mapping
        or a format other than native is named, or (auto) when it has no ``answer``."""
        if self.mapping or self.response_format not in ("auto", "native"):
            return True
        if self.response_format == "native" or not isinstance(payload, dict):
            return False
        from ragmeter.targets.readers import READERS

        is_native, _ = READERS["native"]
        return not is_native(payload)

    async def preflight(self) -> dict[str, Any]:
        return {"replay_file": str(self.path), "recorded": len(self.recorded)}

    async def query(self, case: Case) -> Response:
        self.asked_any = True
        found = self.recorded.get(case.case_id)
        if found is None:
            raise TargetError(
                "not_recorded", f"{self.path} has no response for case {case.case_id}"
            )
        line, record = found
        if record.get("error_type"):
            raise TargetError(str(record["error_type"]), str(record.get("error_message") or ""))
        payload = record.get("response", {k: v for k, v in record.items() if k != "case_id"})
        if self.reads_framework(payload):
            from ragmeter.targets.formats import build_response

            where = f"{self.path}:{line} (case {case.case_id})"
            return build_response(payload, self.response_format, self.mapping, where)
        try:
            response = Response.from_target(payload, recorded=True)
        except ValidationError as exc:
            prefix = "response." if "response" in record else ""
            problems = problems_from_validation(exc, str(self.path), line, case.case_id)
            message = "; ".join(
                str(
                    Problem(
                        p.file,
                        p.line,
                        f"{prefix}{p.field}" if p.field else None,
                        p.message,
                        p.case_id,
                    )
                )
                for p in problems
            )
            raise TargetError("invalid_response", message) from exc
        return response

    def unused_warning(self) -> str | None:
        """The warning about recorded lines no case asked for (None: every line was asked, or
        no case at all, as for the run's own copy of the target under Ray)."""
        if not self.asked_any:
            return None
        used = self.recorded.used
        unused = [case_id for case_id, row in self.recorded.row.items() if not used[row]]
        if not unused:
            return None
        if self.stopped:  # not a mismatch: the run ended before it asked them
            return (
                f"note: {len(unused)} of the {len(self.recorded)} lines of {self.path} were not "
                "asked because the run stopped first; resuming the run asks them"
            )
        shown = ", ".join(repr(case_id[:60]) for case_id in unused[:_UNUSED_SHOWN])
        more = f" and {len(unused) - _UNUSED_SHOWN} more" if len(unused) > _UNUSED_SHOWN else ""
        return (
            f"warning: {len(unused)} of the {len(self.recorded)} lines of {self.path} were not "
            f"asked for in this run (case ids {shown}{more}); a line answers the dataset's case "
            "of the same case_id, compared exactly (upper and lower case included), so check "
            "these ids unless --samples or an earlier part of a resumed run left them out"
        )

    def stop_asking(self) -> None:
        """The run stops before it has asked every case (a failure, an interruption)."""
        self.stopped = True

    async def aclose(self) -> None:
        self.recorded.close()
        warning = self.unused_warning()
        self.asked_any = False  # warned once, even if closed again
        if warning is not None:
            sys.stderr.write(warning + "\n")
            sys.stderr.flush()
