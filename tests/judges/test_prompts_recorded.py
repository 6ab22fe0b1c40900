"""Seed 004: the groundedness rubric asks for citations for a 5, the judge sees the answer's
own citations, and the exact prompt versions are recorded in the run's config and run file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter import EvalConfig, evaluate
from ragmeter.judges.templates import load_prompt
from ragmeter.metrics.judged import cited_sources
from ragmeter.models import Response
from tests.judges.servers import smart_judge


def test_groundedness_prompt_follows_seed_004_and_shows_the_citations(
    judge_servers: Any, tmp_path: Path
) -> None:
    judge = judge_servers(smart_judge)
    outcome = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"), output_dir=str(tmp_path / "o"), progress=False,
            samples=2, seed=5, metrics=["lexical"], judge=f"{judge.url}/v1#m",
            judge_tasks=["groundedness"],
        )
    )  # fmt: skip
    sent = [r["messages"][1]["content"] for r in judge.requests]
    assert len(sent) == 2
    for user in sent:
        assert "A score of 5 requires citations for all major claims." in user
        citations = user.split("<citations>")[1].split("</citations>")[0].strip()
        assert citations.startswith("context ")  # the reference pipeline cites its chunks
    versions = outcome.record.config["judge_info"]["prompt_versions"]
    assert versions == {"groundedness.v3": load_prompt("groundedness.v3").version}
    run_file = json.loads(Path(str(outcome.run_file)).read_text())
    assert run_file["config"]["judge_info"]["prompt_versions"] == versions
    scored = [s for s in outcome.scores if s.metric == "groundedness" and s.status == "ok"]
    assert scored and all(
        s.details["prompt_versions"] == {"groundedness.v3": versions["groundedness.v3"]}
        for s in scored
    )


def test_cited_sources_name_the_contexts_the_judge_sees() -> None:
    response = Response.model_validate(
        {
            "answer": "x",
            "retrieved": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}, {"text": "C"}],
            "citations": ["b", {"doc_id": "handbook.md"}, "b", {"chunk_id": "z"}],
        }
    )
    assert cited_sources(response, response.retrieved) == ["context 2", "handbook.md", "z"]
    assert cited_sources(Response(answer="x", citations=[]), []) == []
