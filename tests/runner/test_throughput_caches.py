"""The throughput changes of issue 18 (item 5) give the same results as the plain paths: the
batched scoring loop and its per-case input checks, the grounding assessments shared by cases
with the same long answer, the retrieval details and measure plan, the score rows' shared
JSON, the run file's shared statuses and the paused garbage collector. No timing here: speed
is measured by ``bench/harness.py``."""

from __future__ import annotations

import gc
import json
import tempfile
from pathlib import Path
from typing import Any

from ragmeter.config import EvalConfig
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.grounding import assess
from ragmeter.metrics.grounding.family import GroundingState
from ragmeter.metrics.grounding.questions import question_claim, reads_question
from ragmeter.metrics.ir import Measure, query_measures
from ragmeter.metrics.ir.query import measure_plan
from ragmeter.metrics.markers import strip_markers
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.run_record import RunRecord
from ragmeter.runfile import RunFile
from ragmeter.runner.scoring import metric_settings, paused_gc, score_results
from ragmeter.store import rows
from ragmeter.store.sqlite import score_rows

CHUNKS = [
    {
        "id": "doc-a#0",
        "doc_id": "doc-a",
        "rank": 1,
        "score": 0.9,
        "text": "Employees get 25 days of paid leave per year, plus public holidays.",
    },
    {
        "id": "doc-b#0",
        "doc_id": "doc-b",
        "rank": 2,
        "score": 0.5,
        "text": "Remote work is allowed up to three days a week. The office opens at nine.",
    },
]
# (question, answer): long answers shared by several questions, short ones read through them
ANSWERS = [
    ("How many days of leave? (1)", "Employees get 25 days of paid leave per year [1]."),
    ("How many days of leave? (2)", "Employees get 25 days of paid leave per year [1]."),
    ("Is remote work allowed?", "Yes."),
    ("Is remote work unlimited?", "Yes."),
    ("Is the office open at nine?", "No, it is not."),
    ("When does the office open?", "At nine."),
    ("When does the office close?", "At nine."),
    ("What about pets?", "I don't know."),
    ("How many days of leave?", "30 days, and the office opens at eight o'clock every day."),
]


def make_cases() -> tuple[list[Case], list[CaseResult]]:
    cases: list[Case] = []
    results: list[CaseResult] = []
    for i, (question, answer) in enumerate(ANSWERS):
        case = Case.model_validate(
            {
                "case_id": f"c{i}",
                "question": question,
                "reference_answer": "25 days of paid leave per year",
                "gold_passages": [{"doc_id": "doc-a"}] if i % 3 else [],
                "answerable": i != 7,
            }
        )
        response = Response.model_validate(
            {"answer": answer, "retrieved": CHUNKS if i != 4 else [], "abstained": i == 7}
        )
        response.latency_ms["total"] = 10.0 + i
        cases.append(case)
        results.append(
            CaseResult(case_id=case.case_id, status="ok", response=response, latency_ms=10.0 + i)
        )
    cases.append(Case.model_validate({"case_id": "err", "question": "Down?"}))
    results.append(CaseResult(case_id="err", status="error", error_type="timeout", latency_ms=1))
    return cases, results


def lexical_settings() -> MetricSettings:
    # no embedder: these tests compare code paths, not the semantic extra
    config = EvalConfig(grounding_model="lexical")
    return metric_settings(config)


FAMILIES = [name for name in EvalConfig().metrics if name != "semantic"]  # no embedder


def as_tuple(score: Score) -> tuple[Any, ...]:
    return (score.case_id, score.metric, score.value, score.status, score.reason, score.details)


def test_score_results_equals_score_case_metric_by_metric() -> None:
    cases, results = make_cases()
    batched = score_results(cases, results, resolve_metrics(FAMILIES, lexical_settings()))
    # fresh metrics (fresh per-run caches), prepared as a run prepares them, then one
    # score_case call per case and metric
    metrics = resolve_metrics(FAMILIES, lexical_settings())
    by_id = {case.case_id: case for case in cases}
    answered = [(by_id[r.case_id], r.response) for r in results if r.response is not None]
    for prepare in {id(m.prepare): m.prepare for m in metrics if m.prepare}.values():
        prepare(answered)
    plain = [
        score_case(metric, by_id[result.case_id], result)
        for result in results
        for metric in metrics
    ]
    assert [as_tuple(s) for s in batched] == [as_tuple(s) for s in plain]
    statuses = {s.status for s in batched}
    assert statuses == {"ok", "skipped", "failed"}


def test_reads_question_is_exactly_when_the_question_can_matter() -> None:
    questions = ["Is remote work allowed?", "When does the office open?", "What is it?", ""]
    for _, answer in ANSWERS:
        text = strip_markers(answer).text
        if not reads_question(text):
            assert all(question_claim(q, text) is None for q in questions)
    assert reads_question("Yes.") and reads_question("At nine.")
    assert not reads_question("Employees get 25 days of paid leave per year.")


def test_shared_grounding_assessment_equals_a_fresh_one_per_case() -> None:
    state = GroundingState(None, align=False)
    texts = [c["text"] for c in CHUNKS]
    kept = set()
    for question, answer in ANSWERS * 2:  # the second round reads the cache
        case = Case.model_validate({"case_id": "x", "question": question})
        response = Response.model_validate({"answer": answer, "retrieved": CHUNKS})
        shared = state.assess(case, response)
        fresh = GroundingState(None, align=False).assess(case, response)  # nothing shared
        assert shared.score == fresh.score == assess(answer, texts, question=question).score
        assert shared.details() == fresh.details()
        assert shared.shared_details() == fresh.details()
        assert shared.shared_details() is shared.shared_details()
        kept.add(id(shared))
    # the two long leave answers share one assessment; the short ones keep their question
    assert len(kept) == len(ANSWERS) - 1


def test_measure_plan_gives_the_same_values() -> None:
    measures = [
        Measure(name, k) for name in ("recall", "P", "ndcg_cut", "recip_rank") for k in (1, 3)
    ]
    measures += [Measure("map"), Measure("Rprec")]
    plan = measure_plan(measures)
    for ranked, qrel in [
        (["a", "b", "c"], {"b": 1, "d": 2}),
        (["x"], {"a": 1}),
        (["a", "b"], {"a": 0, "b": 3}),
    ]:
        assert query_measures(ranked, qrel, measures, plan=plan) == query_measures(
            ranked, qrel, measures
        )


def test_score_rows_equal_row_by_row() -> None:
    shared = {"level": "doc"}
    scores = [
        Score("c1", "m1", 0.5, "ok", None, shared),
        Score("c1", "m2", 1.0, "ok", None, shared),
        Score("c2", "m1", 0.25, "ok", None, {"level": "doc"}),
        Score("c2", "m2", None, "skipped", "case has no gold passages"),
        Score("c3", "m3", None, "failed", "KeyError: 'x'", {"raw": [1, 2, {"a": None}]}),
        Score("c3", "m4", -0.0, "ok", None, {}),
    ]
    assert list(score_rows("run-1", scores)) == [rows.score_row("run-1", s) for s in scores]


def test_stored_scores_read_back_in_order(tmp_path: Path) -> None:
    from ragmeter.runner.records import new_run_record
    from ragmeter.store.sqlite import RunStore

    cases, results = make_cases()
    scores = score_results(cases, results, resolve_metrics(FAMILIES, lexical_settings()))
    store = RunStore(tmp_path / "runs.db")
    try:
        record = new_run_record(EvalConfig(), ["x"], len(cases))
        store.create_run(record, cases)
        store.replace_scores(record.id, scores)
        store.replace_scores(record.id, scores)  # replacing keeps one row a score
        back = store.get_scores(record.id, unfinished=True)  # not finished: read anyway
    finally:
        store.close()
    expected = [list(as_tuple(s)) for s in scores]  # details through JSON, as stored
    assert [list(as_tuple(s)) for s in back] == json.loads(json.dumps(expected))


def test_run_file_statuses_are_shared_and_equal() -> None:
    cases, results = make_cases()
    scores = score_results(cases, results, resolve_metrics(FAMILIES, lexical_settings()))
    record = RunRecord(
        id="r", name="r", created_at="2026-11-24T00:00:00+00:00", config={}, datasets=[]
    )
    run_file = RunFile.from_run(record, results, scores)
    by_case = {case.case_id: case.scores for case in run_file.cases or []}
    for score in scores:
        written = by_case[score.case_id][score.metric]
        if score.status == "ok" and score.value is not None:
            assert written == score.value
        else:
            kind = "skipped" if score.status == "skipped" else "failed"
            assert written == {"status": kind, "reason": score.reason}
    with tempfile.TemporaryDirectory() as folder:
        path = run_file.write(folder)
        again = RunFile.read(path)
    assert [c.scores for c in again.cases or []] == [c.scores for c in run_file.cases or []]


def test_paused_gc_restores_the_thresholds_and_nests() -> None:
    before = gc.get_threshold()
    with paused_gc():
        paused = gc.get_threshold()
        assert paused[:2] == before[:2] and paused[2] > before[2]
        with paused_gc():
            assert gc.get_threshold() == paused
        assert gc.get_threshold() == paused
    assert gc.get_threshold() == before
    try:
        with paused_gc():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.get_threshold() == before
