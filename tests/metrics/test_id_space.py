"""The id-space check: retrieved ids that can never match the gold ids fail the retrieval
scores with a reason (never a believable 0.000); random chunk ids with the file names reported
as ``doc_id`` are matched by document; a run whose ids do match keeps its real zeros."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.metrics import MetricSettings, resolve_metrics
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.reports.perspectives import failure_notes
from ragmeter.runner.run import evaluate
from ragmeter.runner.scoring import score_results
from ragmeter.targets.python import PythonTarget

# LlamaIndex-style default node ids: random UUIDs, unrelated to any gold id
UUIDS = [
    "a3f9c2d1-0b4e-4c1a-9f7e-2d6b8e1c5a01",
    "5b1e7d3c-9a2f-4e8b-b6c1-7f0d2e9a4b12",
    "c8d2a6f4-3e1b-47d9-8a5c-1b9e6f2d7c23",
    "1e6b9f0a-7c3d-4b2e-9d8f-5a4c3b2e1f34",
]
FILES = ["leave-policy.md", "expenses.md", "security.md", "onboarding.md"]


def scores_of(cases: list[Case], responses: list[Response], **settings: Any) -> list[Score]:
    """Score answered cases as a run does (its metrics prepared with the batch first)."""
    metrics = resolve_metrics(["retrieval", "trec"], MetricSettings(ks=(1, 3), **settings))
    results = [
        CaseResult(case_id=case.case_id, status="ok", response=response)
        for case, response in zip(cases, responses, strict=True)
    ]
    return score_results(cases, results, metrics)


def by(scores: list[Score], case_id: str, metric: str) -> Score:
    return next(s for s in scores if s.case_id == case_id and s.metric == metric)


def llama_reply(files: list[str], doc_ids: bool = True) -> Response:
    """Three chunks with random ids; their file names as doc_id (LlamaIndex's file_name)."""
    return Response(
        answer="a",
        retrieved=[
            {"id": UUIDS[i], "rank": i + 1, "text": "t", **({"doc_id": f} if doc_ids else {})}
            for i, f in enumerate(files)
        ],
    )


def file_cases(chunk_ids: bool = False) -> list[Case]:
    """Gold given as file names (doc ids); with ``chunk_ids`` also as node ids the system's
    random ids never equal (the issue's ``source_file`` + ``source_node`` dataset)."""

    def gold(*names: str) -> list[dict[str, Any]]:
        return [
            {"doc_id": n, **({"chunk_id": f"{n}#node-{i}"} if chunk_ids else {})}
            for i, n in enumerate(names)
        ]

    return [
        Case(case_id="q1", question="q1", dataset="own", gold_passages=gold("leave-policy.md")),
        Case(
            case_id="q2",
            question="q2",
            dataset="own",
            gold_passages=gold("expenses.md", "security.md"),
        ),
    ]


# q1 retrieves [expenses, leave-policy, security]: gold leave-policy at rank 2
# q2 retrieves [onboarding, leave-policy, expenses]: gold expenses at rank 3, security missed
REPLIES = [["expenses.md", "leave-policy.md", "security.md"], FILES[3:] + FILES[:2]]


@pytest.mark.parametrize("chunk_ids", [False, True])
def test_random_chunk_ids_are_matched_through_doc_id_by_hand(chunk_ids: bool) -> None:
    cases = file_cases(chunk_ids)
    scores = scores_of(cases, [llama_reply(files) for files in REPLIES])
    expected = {
        # q1: 1 relevant document (leave-policy), found at rank 2
        ("q1", "recall_at_1"): 0.0,
        ("q1", "recall_at_3"): 1.0,
        ("q1", "precision_at_3"): 1 / 3,
        ("q1", "mrr"): 1 / 2,
        ("q1", "map"): 1 / 2,
        # q2: 2 relevant documents, expenses found at rank 3
        ("q2", "recall_at_3"): 1 / 2,
        ("q2", "precision_at_3"): 1 / 3,
        ("q2", "hit_rate_at_1"): 0.0,
        ("q2", "mrr"): 1 / 3,
        ("q2", "map"): (1 / 3) / 2,
    }
    for (case_id, metric), value in expected.items():
        score = by(scores, case_id, metric)
        assert score.status == "ok" and score.value == pytest.approx(value), (case_id, metric)
        assert score.details["level"] == "doc"
    note = by(scores, "q1", "recall_at_3").details.get("id_space")
    if chunk_ids:  # gold chunk ids exist but can never match: matched by document, and said
        assert note is not None and "matched by doc_id" in note and "a3f9c2d1" in note
    else:
        assert note is None


def test_random_ids_without_doc_ids_fail_with_the_id_space_message_never_zero() -> None:
    cases = file_cases()
    scores = scores_of(cases, [llama_reply(files, doc_ids=False) for files in REPLIES])
    retrieval = [s for s in scores if s.metric not in ("scope_miss_rate", "attribution_hit_rate")]
    measured = [s for s in retrieval if s.status != "skipped"]
    assert measured and all(s.status == "failed" and s.value is None for s in measured)
    reason = by(scores, "q1", "recall_at_3").reason or ""
    assert reason.startswith(
        "retrieved ids never match gold ids (example: retrieved "
        "'a3f9c2d1-0b4e-4c1a-9f7e-2d6b8e1c5a01' vs gold 'leave-policy.md')"
    ), reason
    assert "none of the 2 cases of dataset 'own'" in reason
    assert by(scores, "q2", "bpref").reason == reason  # the trec run metrics too
    # the check turned off: the old zeros
    off = scores_of(cases, [llama_reply(f, doc_ids=False) for f in REPLIES], id_space_min_overlap=0)
    assert (by(off, "q1", "recall_at_3").status, by(off, "q1", "recall_at_3").value) == ("ok", 0.0)


def test_chunk_ids_of_another_corpus_fail_and_a_partial_overlap_keeps_its_zeros() -> None:
    cases = [
        Case(case_id=f"c{i}", question="q", dataset="d", gold_passages=[{"chunk_id": f"g{i}"}])
        for i in range(4)
    ]

    def reply(*ids: str) -> Response:
        return Response(retrieved=[{"id": x, "rank": r + 1} for r, x in enumerate(ids)])

    # another corpus: no retrieved id is any gold id of the dataset
    other = scores_of(cases, [reply(f"demo-{i}", "demo-x") for i in range(4)])
    assert {s.status for s in other if s.metric == "recall_at_3"} == {"failed"}
    reason = by(other, "c0", "ndcg_at_3").reason or ""
    assert "retrieved ids never match gold ids (example: retrieved 'demo-0' vs gold 'g0')" in reason
    # the same ids space, one case found its gold at rank 2, the others simply missed: zeros
    partial = scores_of(cases, [reply("x", "g0"), reply("y"), reply("z"), reply("w", "v")])
    values = {s.case_id: (s.status, s.value) for s in partial if s.metric == "recall_at_3"}
    assert values == {
        "c0": ("ok", 1.0),
        "c1": ("ok", 0.0),
        "c2": ("ok", 0.0),
        "c3": ("ok", 0.0),
    }
    assert (by(partial, "c0", "mrr").value, by(partial, "c3", "mrr").value) == (0.5, 0.0)


def test_under_the_minimum_overlap_is_failed_and_each_dataset_is_checked_apart() -> None:
    cases = [
        Case(case_id=f"a{i}", question="q", dataset="a", gold_passages=[{"doc_id": f"a{i}"}])
        for i in range(20)
    ] + [Case(case_id="b0", question="q", dataset="b", gold_passages=[{"doc_id": "b0"}])]
    # dataset a: one case of 20 (5%) retrieved a gold id; dataset b's case found its own
    replies = [
        Response(retrieved=[{"doc_id": "a0" if i == 0 else "zz", "rank": 1}]) for i in range(20)
    ]
    replies.append(Response(retrieved=[{"doc_id": "b0", "rank": 1}]))
    kept = scores_of(cases, replies)  # 1/20 = 0.05: not under the default 0.05
    assert by(kept, "a0", "recall_at_1").value == 1.0 and by(kept, "a1", "recall_at_1").value == 0.0
    strict = scores_of(cases, replies, id_space_min_overlap=0.1)
    reason = by(strict, "a1", "recall_at_1").reason or ""
    assert by(strict, "a0", "recall_at_1").status == "failed"
    assert reason.startswith("retrieved ids rarely match gold ids (example: retrieved 'zz'")
    assert "1 of 20 cases of dataset 'a'" in reason and "id_space_min_overlap 0.1" in reason
    assert (by(strict, "b0", "recall_at_1").status, by(strict, "b0", "recall_at_1").value) == (
        "ok",
        1.0,
    )


def test_a_run_of_unmatchable_ids_reads_failed_and_its_target_is_not_measured(
    tmp_path: Path,
) -> None:
    cases = file_cases()

    def system(question: str) -> Response:
        return llama_reply(REPLIES[0], doc_ids=False)

    target = PythonTarget(TargetConfig(type="python"), function=system)
    config = EvalConfig(
        store=str(tmp_path / "r.db"),
        output_dir=str(tmp_path / "out"),
        progress=False,
        metrics=["retrieval"],
        targets={"recall_at_5": ">= 0.5"},
    )
    outcome = evaluate(config, cases=cases, target=target)
    assert outcome.record.scorecard is not None
    recall = next(m for m in outcome.record.scorecard.metrics if m.name == "recall_at_5")
    assert recall.value is None and recall.n_failed == 2 and recall.n_scored == 0
    assert all(
        s.status == "failed" and "never match gold ids" in (s.reason or "")
        for s in outcome.scores
        if s.metric == "recall_at_5"
    )
    (verdict,) = [t for t in outcome.record.goals if t.metric == "recall_at_5"]
    assert verdict.status == "not_measured"
    assert any("never match gold ids" in note for note in failure_notes(outcome.record))
    assert recall.fail_reason is not None and recall.fail_reason.startswith(
        "retrieved ids never match gold ids (example: retrieved 'a3f9c2d1-"
    )
    # the same reason in every report: console, Markdown and HTML
    from ragmeter.reports.html.run import failures_section
    from ragmeter.reports.markdown import render_markdown

    markdown = render_markdown(outcome.record)
    assert "recall\\_at\\_5" in markdown.split("## Failures and skips")[1]
    assert ": measured on no case: retrieved ids never match gold ids" in markdown
    html = failures_section(outcome.record)
    assert ": measured on no case: retrieved ids never match gold ids (example: retrieved" in html


def beir_folder(root: Path) -> Path:
    """A two-document BEIR corpus (ids d1, d2) the demo corpus does not hold."""
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Sabbatical", "text": "A zebra sabbatical lasts 9 weeks."}\n'
        '{"_id": "d2", "title": "Parking", "text": "Parking spots are painted blue."}\n',
        encoding="utf-8",
    )
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n', encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_reference_server_over_the_demo_fails_other_datasets_and_serves_their_corpus(
    tmp_path: Path,
) -> None:
    """Seed 002's situation: the reference server over the demo corpus asked questions whose
    gold ids are another corpus's reads `failed`, not 0.000; serving that corpus too (its
    ``--corpus``) measures it."""
    from ragmeter.cli.server import served_chunks
    from ragmeter.demo import DEMO_CORPUS
    from ragmeter.targets.reference.pipeline import PipelineSettings, ReferencePipeline
    from ragmeter.targets.reference.server import make_server, serve_in_thread

    cases = [
        Case(
            case_id="z",
            question="How long does a zebra sabbatical last?",
            dataset="other",
            gold_passages=[{"doc_id": "d1"}],
        )
    ]
    settings = PipelineSettings(top_k=3)
    recalls: list[Score] = []
    for corpora in [(str(DEMO_CORPUS),), (str(beir_folder(tmp_path / "beir")), str(DEMO_CORPUS))]:
        server = make_server(ReferencePipeline(served_chunks(corpora, settings), settings), port=0)
        serve_in_thread(server)
        try:
            config = EvalConfig(
                store=str(tmp_path / f"r{len(recalls)}.db"),
                output_dir=str(tmp_path / "out"),
                progress=False,
                metrics=["retrieval"],
                rag_server_url=f"http://127.0.0.1:{server.server_address[1]}",
            )  # type: ignore[call-arg]
            outcome = evaluate(config, cases=cases)
        finally:
            server.shutdown()
            server.server_close()
        recalls.append(next(s for s in outcome.scores if s.metric == "recall_at_3"))
    over_demo, over_both = recalls
    assert over_demo.status == "failed" and over_demo.value is None
    assert (over_demo.reason or "").startswith("retrieved ids never match gold ids (example:")
    assert "vs gold 'd1'" in (over_demo.reason or "")
    assert (over_both.status, over_both.value) == ("ok", 1.0)  # d1 retrieved: 1 of 1
