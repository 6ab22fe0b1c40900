"""Replay target: recorded responses from a JSONL file, so a run can be scored offline.

Each line is ``{"case_id": ..., "response": {...}}`` or a flat response with a ``case_id``;
a recorded failure is ``{"case_id": ..., "error_type": ..., "error_message": ...}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.config import TargetConfig
from ragmeter.datasets.problems import DatasetError, Problem
from ragmeter.models import Case, Response
from ragmeter.targets.base import TargetError


def read_recorded(path: Path) -> dict[str, dict[str, Any]]:
    recorded: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), number, None, f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(record, dict) or "case_id" not in record:
            problems.append(Problem(str(path), number, "case_id", "each line needs a case_id"))
            continue
        recorded[str(record["case_id"])] = record
    if problems:
        raise DatasetError(problems)
    return recorded


class ReplayTarget:
    name = "replay"

    def __init__(self, config: TargetConfig, **_: Any) -> None:
        if not config.path:
            raise ValueError("the replay target needs a path to a JSONL of recorded responses")
        self.path = Path(config.path)
        self.recorded = read_recorded(self.path)

    async def preflight(self) -> dict[str, Any]:
        return {"replay_file": str(self.path), "recorded": len(self.recorded)}

    async def query(self, case: Case) -> Response:
        record = self.recorded.get(case.case_id)
        if record is None:
            raise TargetError(
                "not_recorded", f"{self.path} has no response for case {case.case_id}"
            )
        if record.get("error_type"):
            raise TargetError(str(record["error_type"]), str(record.get("error_message") or ""))
        payload = record.get("response", {k: v for k, v in record.items() if k != "case_id"})
        try:
            return Response.model_validate(payload)
        except ValidationError as exc:
            raise TargetError(
                "invalid_response", f"{self.path}: case {case.case_id}: {exc}"
            ) from exc

    async def aclose(self) -> None:
        return None
