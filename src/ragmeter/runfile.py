"""The run file: one JSON document per run, typed and versioned.

Its header is seed 002's Run Output (``id``, ``name``, ``created_at``, ``completed_at``,
``config``, ``datasets``, ``scorecard``, ``weighted_score``, ``question_count``,
``error_count``) extended with the status, breakdowns, goals, performance and judge
reliability; ``cases`` comes last, one entry per case with its outcome and ``scores`` (metric
name to value, or to ``{"status", "reason"}`` when skipped or failed), and, for a detector
metric (``injection_auc``: an ``auc`` or ``tpr_at_fpr_*`` aggregation), ``labels``: metric name
to the case's label (true: an attack), so a comparison read from files can recompute it.

The engine writes it through :meth:`RunFile.write`; ``compare`` and ``--baseline`` read it
with :meth:`RunFile.read`. ``RunFile.read(path, header_only=True)`` parses the header and
stops at ``cases``, so a large run's summary is read without its cases. A file without
``run_file_version`` is version 1 (same shape; versions 1 and 2 name the goals ``targets`` and
carry a ``schema_version``); a newer version than this ragmeter knows is refused with a
message.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypedDict

from ragmeter.errors import InputError
from ragmeter.models import RUN_FILE_VERSION, CaseResult, Score
from ragmeter.run_record import RunRecord

_CHUNK = 1 << 16


class UnmeasuredScore(TypedDict):
    """A score that has no value: why it was skipped or failed (a typed dict: validating one
    per skipped score as a model would triple the time to read a large run)."""

    status: Literal["skipped", "failed"]
    reason: NotRequired[str | None]


class CaseOutcome(BaseModel):
    """One case of a run: what the target did and every metric's score."""

    model_config = ConfigDict(extra="allow")

    case_id: str
    status: str
    error_type: str | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    attempts: int = 1
    scores: dict[str, float | UnmeasuredScore] = Field(default_factory=dict)
    labels: dict[str, bool] = Field(default_factory=dict)  # detector metrics only


def case_document(case: CaseOutcome) -> dict[str, Any]:
    """One entry of the run file's ``cases``."""
    return {
        "case_id": case.case_id,
        "status": case.status,
        "error_type": case.error_type,
        "error_message": case.error_message,
        "latency_ms": case.latency_ms,
        "attempts": case.attempts,
        "scores": case.scores,
        **({"labels": case.labels} if case.labels else {}),
    }


def run_file_path(folder: Path | str, run_id: str, created_at: str, output: str | None) -> Path:
    """The one rule naming a run file: ``{output}.json`` when the run names its files
    (``--output``), else ``{id}_{timestamp}.json``, in ``folder``."""
    if output is not None:
        return Path(folder) / f"{output}.json"
    stamp = created_at.replace(":", "").replace("-", "").split("+")[0]
    return Path(folder) / f"{run_id}_{stamp}.json"


class RunFile(RunRecord):
    """A run as written to its JSON file: the run record (the header) and its cases (None when
    read with ``header_only``)."""

    run_file_version: int = 1  # files written before the field existed are version 1
    cases: list[CaseOutcome] | None = None

    @classmethod
    def from_run(cls, record: RunRecord, results: list[CaseResult], scores: list[Score]) -> RunFile:
        per_case: dict[str, dict[str, float | UnmeasuredScore]] = defaultdict(dict)
        labels: dict[str, dict[str, bool]] = defaultdict(dict)
        # one UnmeasuredScore per (status, reason), shared by the scores that have it: most reasons
        # repeat, and a run has about as many skipped scores as measured ones
        statuses: dict[tuple[bool, str | None], UnmeasuredScore] = {}
        for score in scores:
            if score.status == "ok":
                label = score.details.get("label") if score.details else None
                if isinstance(label, bool):
                    labels[score.case_id][score.metric] = label
                if score.value is not None:
                    per_case[score.case_id][score.metric] = score.value
                    continue
            skipped = score.status == "skipped"
            status = statuses.get((skipped, score.reason))
            if status is None:
                status = statuses[skipped, score.reason] = UnmeasuredScore(
                    status="skipped" if skipped else "failed", reason=score.reason
                )
            per_case[score.case_id][score.metric] = status
        cases = [
            CaseOutcome.model_construct(
                case_id=r.case_id,
                status=r.status,
                error_type=r.error_type,
                error_message=r.error_message,
                latency_ms=r.latency_ms,
                attempts=r.attempts,
                scores=per_case.get(r.case_id, {}),
                labels=labels.get(r.case_id, {}),
            )
            for r in results
        ]
        return cls.model_construct(**dict(record), run_file_version=RUN_FILE_VERSION, cases=cases)

    @property
    def header(self) -> RunRecord:
        """The run record alone (what ``ragmeter show`` and ``compare`` summarise)."""
        return RunRecord.model_validate(
            {name: getattr(self, name) for name in RunRecord.model_fields}
        )

    def document(self) -> dict[str, Any]:
        """The JSON document: the version first, then the header's keys, ``cases`` last."""
        document: dict[str, Any] = {
            "run_file_version": self.run_file_version,
            **self.header.model_dump(mode="json"),
        }
        document["cases"] = [case_document(case) for case in self.cases or []]
        return document

    def write(self, folder: Path | str, output: str | None = None) -> Path:
        """Write the run file into ``folder`` (created if missing), named by
        :func:`run_file_path`."""
        return self.write_to(run_file_path(folder, self.id, self.created_at, output))

    def write_to(self, path: Path) -> Path:
        """Write the run file at ``path`` (its folder created if missing)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        # compact: the C encoder is ~10x faster than the indenting one on large runs
        path.write_text(json.dumps(self.document()), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path | str, *, header_only: bool = False) -> RunFile:
        """The run file at ``path``; with ``header_only`` its cases are not read (``cases`` is
        None). Raises InputError naming the file and the field for anything unreadable."""
        path = Path(path)
        try:
            if not header_only:
                return cls._read_whole(path)
            data = _read_header(path)
            if isinstance(data, dict) and not {"id", "scorecard"} <= data.keys():
                # cases came before the header (a file sorted by key): read it all
                whole = cls._read_whole(path)
                whole.cases = None
                return whole
        except OSError as exc:
            raise InputError(f"{path}: cannot read run file: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a ragmeter run file (not JSON: {exc})") from None
        return cls._validated(path, data)

    @classmethod
    def _read_whole(cls, path: Path) -> RunFile:
        text = path.read_text(encoding="utf-8")
        try:  # pydantic's own JSON parser: one pass, no intermediate dicts
            whole = cls.model_validate_json(text)
        except ValidationError:
            pass  # not a valid run file: say why, with the checks below
        else:
            _check_version(path, whole.run_file_version)
            return whole
        data = json.loads(text)
        if isinstance(data, dict) and not isinstance(data.get("cases"), list):
            raise InputError(f"{path}: not a ragmeter run file (no 'cases' list)")
        return cls._validated(path, data)

    @classmethod
    def _validated(cls, path: Path, data: Any) -> RunFile:
        if not isinstance(data, dict) or "id" not in data or "scorecard" not in data:
            raise InputError(f"{path}: not a ragmeter run file (no 'id' and 'scorecard')")
        version = data.get("run_file_version", 1)
        if isinstance(version, int):
            _check_version(path, version)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InputError(f"{path}: run file field {where}: {first['msg']}") from None

    def values(self) -> dict[str, dict[str, float]]:
        """Every measured value: metric -> case id -> value (skipped and failed left out)."""
        out: dict[str, dict[str, float]] = {}
        for case in self.cases or []:
            for metric, value in case.scores.items():
                if isinstance(value, float):
                    out.setdefault(metric, {})[case.case_id] = value
        return out

    def labels(self) -> dict[str, dict[str, bool]]:
        """Detector metrics' labels: metric -> case id -> label (true: a positive)."""
        out: dict[str, dict[str, bool]] = {}
        for case in self.cases or []:
            for metric, label in case.labels.items():
                out.setdefault(metric, {})[case.case_id] = label
        return out


def _check_version(path: Path, version: int) -> None:
    if version > RUN_FILE_VERSION:
        raise InputError(
            f"{path}: run file version {version} was written by a newer ragmeter "
            f"(this one reads up to {RUN_FILE_VERSION}); upgrade ragmeter to read it"
        )


def rewrite_header(path: Path, changes: dict[str, Any]) -> None:
    """Change header fields of the run file at ``path`` (``changes``: field -> its JSON value;
    a verdict decided after the run), copying its cases byte for byte; a file laid out
    otherwise than ragmeter writes it (e.g. indented by hand) is read and written whole."""
    header = _read_header(path)
    old = json.dumps({**header, "cases": []})[: -len("]}")].encode()
    new = {**header, **changes, "cases": []}
    partial = path.with_name(path.name + ".part")
    try:
        with path.open("rb") as handle:
            if handle.read(len(old)) != old:
                whole = json.loads(path.read_text(encoding="utf-8"))
                partial.write_text(json.dumps({**whole, **changes}), encoding="utf-8")
            else:
                with partial.open("wb") as out:
                    out.write(json.dumps(new)[: -len("]}")].encode())
                    shutil.copyfileobj(handle, out, _CHUNK)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _read_header(path: Path) -> dict[str, Any]:
    """The top-level keys of the JSON object in ``path`` that come before ``cases``, read in
    chunks: the cases (written last) are never parsed."""
    decoder = json.JSONDecoder()
    header: dict[str, Any] = {}
    with path.open(encoding="utf-8") as handle:
        text = handle.read(_CHUNK)
        position = _skip(text, 0)
        if not text[position : position + 1] == "{":
            raise json.JSONDecodeError("a run file is a JSON object", text, position)
        position += 1
        while True:
            text, position = _more(handle, text, _skip(text, position))
            if text[position : position + 1] == "}":
                return header
            while True:
                try:
                    key, after = decoder.raw_decode(text, position)
                    after = _skip(text, after)
                    if text[after : after + 1] != ":":
                        raise json.JSONDecodeError("expected ':'", text, after)
                    if key == "cases":
                        return header
                    value, after = decoder.raw_decode(text, _skip(text, after + 1))
                    following = _skip(text, after)
                    if following >= len(text) or text[following] not in ",}":
                        # a number cut at the chunk's end ("0." of "0.75"): parse it whole
                        grown = handle.read(_CHUNK)
                        if grown:
                            text += grown
                            continue
                        if following < len(text):
                            raise json.JSONDecodeError("expected ',' or '}'", text, following)
                    break
                except json.JSONDecodeError:
                    grown = handle.read(max(_CHUNK, len(text)))
                    if not grown:
                        raise
                    text += grown
            header[key] = value
            text, position = _more(handle, text, _skip(text, after))
            if text[position : position + 1] == ",":
                position += 1


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _more(handle: Any, text: str, position: int) -> tuple[str, int]:
    """Drop what was parsed and make sure unparsed text is left (a chunk ended right here)."""
    text = text[position:]
    if not text.strip():
        text += handle.read(_CHUNK)
    return text, _skip(text, 0)


class RunFileWriter:
    """A run file written without holding the run: each batch's cases go to a temporary file
    as they are scored (:meth:`add`), and :meth:`finish` writes the header (known only once the
    run is scored) followed by them. The file is the one ``RunFile.from_run(...).document()``
    gives, byte for byte."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # open until finish() or close(): the cases of every batch scored so far, beside the
        # run file (not in a temporary folder that may live in memory)
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", dir=path.parent)  # noqa: SIM115
        self._count = 0

    def add(self, results: list[CaseResult], scores: list[Score]) -> None:
        cases = RunFile.from_run(_NO_RECORD, results, scores).cases or []
        for case in cases:
            self._spool.write((", " if self._count else "") + json.dumps(case_document(case)))
            self._count += 1

    def finish(self, record: RunRecord) -> Path:
        """Write the run file of ``record``: whole, or (a failure half way) not at all."""
        header = {"run_file_version": RUN_FILE_VERSION, **record.model_dump(mode="json")}
        self._spool.seek(0)
        partial = self.path.with_name(self.path.name + ".part")
        # the folder may have gone while the run was asked (the spool is an open file: its
        # cases are safe); it is made again rather than losing the run file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with partial.open("w", encoding="utf-8") as out:
                out.write(json.dumps({**header, "cases": []})[: -len("]}")])
                shutil.copyfileobj(self._spool, out, _CHUNK)
                out.write("]}")
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self.close()
        return self.path

    def close(self) -> None:
        self._spool.close()


_NO_RECORD = RunRecord(id="-", name="-", created_at="-", config={}, datasets=[])
