"""TREC export refuses ids that a whitespace-separated TREC file cannot hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.models import Case, CaseResult, Response
from ragmeter.reports.trec_export import export_trec
from ragmeter.run_record import RunRecord


def _export(tmp_path: Path, case_id: str, doc_id: str) -> Path:
    case = Case(case_id=case_id, question="q?", gold_passages=[{"doc_id": doc_id}])
    response = Response(answer="a", retrieved=[{"id": f"{doc_id}#1", "doc_id": doc_id}])
    result = CaseResult(case_id=case_id, status="ok", response=response)
    record = RunRecord(id="r", name="my run", created_at="", config={}, datasets=[])
    path = tmp_path / "out.run"
    export_trec(path, "trec-run", [case], [result], record)
    return path


def test_ids_with_spaces_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'has space'"):
        _export(tmp_path, "has space", "doc")
    with pytest.raises(InputError, match="'my doc"):
        _export(tmp_path, "q1", "my doc")


def test_plain_ids_are_written_one_line_a_document(tmp_path: Path) -> None:
    lines = _export(tmp_path, "q1", "doc").read_text().splitlines()
    assert [line.split()[:3] for line in lines] == [["q1", "Q0", "doc"]]
