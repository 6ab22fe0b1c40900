"""Citation markers in answers become citations for the citation metrics (issue 13 scope 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.citation import citation_metrics, marker_citations
from ragmeter.models import Case, CaseResult, GoldPassage, Response, RetrievedChunk
from ragmeter.runfile import RunFile

CHUNKS = [
    RetrievedChunk(
        id="leave#1", doc_id="leave-policy", text="Employees get 15 days of paid vacation."
    ),
    RetrievedChunk(id="pay#2", doc_id="pay-policy", text="Salaries are paid on the last Friday."),
]


def scores(answer: str, **response: object) -> dict[str, tuple[str, float | None, str | None]]:
    case = Case(
        case_id="c1",
        question="How much vacation do I get?",
        gold_passages=[GoldPassage(doc_id="leave-policy", chunk_id="leave#1")],
    )
    result = CaseResult(
        case_id="c1",
        status="ok",
        response=Response(**{"answer": answer, "retrieved": CHUNKS, **response}),  # type: ignore[arg-type]
    )
    out = {}
    for metric in citation_metrics(MetricSettings()):
        score = score_case(metric, case, result)
        out[metric.name] = (score.status, score.value, score.reason)
    return out


def test_marker_ids_resolve_to_retrieved_chunks() -> None:
    response = Response(
        answer="Employees get 15 days [1]. Pay day is Friday [pay#2]. Bonus is 5% [9]. "
        "Leave is annual [leave-policy].",
        retrieved=CHUNKS,
    )
    cited = [(c.chunk_id, c.doc_id, c.quote) for c in marker_citations(response)]
    assert cited == [
        ("leave#1", None, "Employees get 15 days."),  # [1]: the first retrieved chunk
        ("pay#2", None, "Pay day is Friday."),  # a chunk id
        ("9", None, "Bonus is 5%."),  # nothing retrieved is number 9: kept, invalid
        (None, "leave-policy", "Leave is annual."),  # a document id
    ]


def test_citation_metrics_read_markers_when_the_target_reports_none() -> None:
    got = scores("Employees get 15 days of paid vacation [1]. Salaries come on Friday [7].")
    # two citations: chunk 1 (valid, gold) and "7" (no such chunk)
    assert got["citation_validity_form"][:2] == ("ok", 0.5)
    assert got["citation_validity_content"][:2] == ("ok", 0.5)
    assert got["citation_precision"][:2] == ("ok", 0.5)
    assert got["citation_recall"][:2] == ("ok", 1.0)
    # no marker, no reported citations: skipped, saying why
    plain = scores("Employees get 15 days of paid vacation.")
    assert plain["citation_validity_form"] == (
        "skipped",
        None,
        "target did not report citations and the answer has no citation markers",
    )
    # reported citations win over markers
    reported = scores("Employees get 15 days [2].", citations=[{"chunk_id": "leave#1"}])
    assert reported["citation_precision"][:2] == ("ok", 1.0)
    # an empty reported list and no marker: recall 0, the rest skipped
    empty = scores("Employees get 15 days.", citations=[])
    assert empty["citation_recall"][:2] == ("ok", 0.0)
    assert empty["citation_validity_form"][0] == "skipped"


def test_citations_without_ids_are_matched_by_text_or_skipped_never_zero() -> None:
    # issue 30: [{"text": ...}] was scored 0 by every citation metric
    answer = "Employees get 15 days of paid vacation."
    unknown = scores(answer, citations=[{"text": "Something no retrieved chunk says at all."}])
    reason = (
        "target did not report citation ids (1 of 1 citations have no chunk_id, doc_id or "
        "rel_path, and no retrieved chunk holds their text)"
    )
    for metric in ("citation_validity_form", "citation_validity_content", "citation_precision",
                   "citation_recall"):  # fmt: skip
        assert unknown[metric] == ("skipped", None, reason), metric
    # one id-less citation among good ones: the case is skipped too (it would read as wrong)
    mixed = scores(answer, citations=[{"chunk_id": "leave#1"}, {"text": "elsewhere"}])
    assert mixed["citation_precision"][0] == "skipped" and "1 of 2" in str(
        mixed["citation_precision"][2]
    )
    # the whole text of a retrieved chunk (whitespace aside): that chunk is cited
    whole = scores(answer, citations=[{"text": "Employees  get 15 days\nof paid vacation."}])
    assert whole["citation_validity_form"][:2] == ("ok", 1.0)
    assert whole["citation_precision"][:2] == ("ok", 1.0)
    assert whole["citation_recall"][:2] == ("ok", 1.0)
    # a passage of 40 characters or more inside a chunk cites it; a short one does not
    passage = scores(answer, citations=[{"text": "Salaries are paid on the last Friday"}])
    assert passage["citation_precision"][0] == "skipped"  # 36 characters: too short to tell
    long_chunks = [
        RetrievedChunk(id="a", doc_id="leave-policy", text="Intro. " + "x " * 10),
        RetrievedChunk(id="leave#1", doc_id="leave-policy",
                       text="Before. Employees get 15 days of paid vacation each year. After."),
    ]  # fmt: skip
    inside = scores(
        answer,
        citations=[{"text": "Employees get 15 days of paid vacation each year."}],
        retrieved=long_chunks,
    )
    assert inside["citation_precision"][:2] == ("ok", 1.0)


def test_markers_feed_citation_metrics_through_the_cli(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.jsonl"
    replay = tmp_path / "responses.jsonl"
    case = {
        "id": "q1",
        "question": "How much vacation do I get?",
        "gold_passages": [{"doc_id": "leave-policy", "chunk_id": "leave#1"}],
    }
    dataset.write_text(json.dumps(case) + "\n")
    response = {
        "answer": "Employees get 15 days of paid vacation [1]. Salaries come on Friday [7].",
        "retrieved": [c.model_dump(exclude_none=True) for c in CHUNKS],
    }
    replay.write_text(json.dumps({"case_id": "q1", "response": response}) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "eval",
            "--dataset",
            str(dataset),
            "--target",
            f"replay:{replay}",
            "--metrics",
            "citation",
            "--store",
            str(tmp_path / "runs.db"),
            "--output-dir",
            str(tmp_path / "out"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    run = RunFile.read(path)
    assert run.cases is not None
    values = run.cases[0].scores
    assert values["citation_validity_form"] == 0.5
    assert values["citation_recall"] == 1.0
