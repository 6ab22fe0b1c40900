"""A stored run's retrieval as TREC files, with the same ids and judgments the retrieval
metrics use (so ``ragmeter trec`` on the export reproduces the run's retrieval scores)."""

from __future__ import annotations

from pathlib import Path

from ragmeter.datasets.trec import write_qrels, write_run
from ragmeter.errors import InputError
from ragmeter.metrics.retrieval import judge_case
from ragmeter.models import Case, CaseResult
from ragmeter.run_record import RunRecord


def _one_token(text: str) -> bool:
    return bool(text) and len(text.split()) == 1 and text.split()[0] == text


def export_trec(
    path: Path,
    fmt: str,
    cases: list[Case],
    results: list[CaseResult],
    record: RunRecord,
    require_snippet: bool = False,
) -> None:
    by_id = {case.case_id: case for case in cases}
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[tuple[str, float]]] = {}
    for result in results:
        case = by_id[result.case_id]
        if result.response is None or not (case.gold_passages or case.required_support_groups):
            continue
        judged = judge_case(case, result.response, require_snippet)
        qrels[case.case_id] = judged.qrel
        # scores follow the system's rank order, so trec_eval's score sort keeps that order
        run[case.case_id] = [
            (item, float(len(judged.ranked) - i)) for i, item in enumerate(judged.ranked)
        ]
    spaced = sorted(
        {query for query in run if not _one_token(query)}
        | {item for ranked in run.values() for item, _ in ranked if not _one_token(item)}
        | {item for judged in qrels.values() for item in judged if not _one_token(item)}
    )
    if spaced:
        raise InputError(
            f"TREC files are whitespace-separated, so ids with spaces cannot be written: "
            f"{', '.join(repr(i) for i in spaced[:5])}; rename them in the dataset or the system"
        )
    if fmt == "trec-qrels":
        write_qrels(path, qrels)
    else:
        write_run(path, run, tag=record.name.replace(" ", "_"))
