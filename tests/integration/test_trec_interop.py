"""TREC interop: file readers, `ragmeter trec` against trec_eval on Cranfield, and a ragmeter
run exported as TREC files giving back the run's own retrieval scores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.datasets import DatasetError
from ragmeter.datasets.trec import read_qrels, read_run, write_qrels, write_run
from tests.conftest import DATASETS

pytestmark = pytest.mark.integration
CRANFIELD = DATASETS / "cranfield"


def ragmeter(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def parse_trec_output(text: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in text.strip().splitlines():
        measure, query, number = line.split("\t")
        values[(measure.strip(), query)] = float(number)
    return values


def test_readers_name_file_and_line(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2\nq1 0 d3 high\n")
    with pytest.raises(DatasetError) as error:
        read_qrels(qrels)
    assert [(p.line, p.field) for p in error.value.problems] == [(2, None), (3, "grade")]
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\nq1 Q0 d2 3 x t\n")
    with pytest.raises(DatasetError) as error:
        read_run(run)
    assert [(p.line, p.field) for p in error.value.problems] == [(2, "doc"), (3, "score")]
    assert "listed twice" in str(error.value)


def test_writers_round_trip(tmp_path: Path) -> None:
    write_qrels(tmp_path / "q", {"a": {"d1": 2, "d2": 0}})
    write_run(tmp_path / "r", {"a": [("d2", 2.0), ("d1", 1.0)]}, tag="t")
    assert read_qrels(tmp_path / "q") == {"a": {"d1": 2, "d2": 0}}
    assert read_run(tmp_path / "r") == {"a": {"d2": 2.0, "d1": 1.0}}


def cranfield_docs() -> dict[str, str]:
    docs: dict[str, str] = {}
    current = None
    field = None
    for line in (CRANFIELD / "cran.all.1400").read_text(encoding="utf-8").splitlines():
        if line.startswith(".I "):
            current = line.split()[1]
            docs[current] = ""
        elif line.startswith("."):
            field = line[:2]
        elif current is not None and field in (".T", ".W"):
            docs[current] += line + "\n"
    return docs


def cranfield_queries() -> list[str]:
    queries: list[str] = []
    for line in (CRANFIELD / "cran.qry").read_text(encoding="utf-8").splitlines():
        if line.startswith(".I"):
            queries.append("")
        elif not line.startswith("."):
            queries[-1] += line + " "
    return queries


@pytest.mark.skipif(not CRANFIELD.exists(), reason="../shared/datasets/cranfield is absent")
def test_trec_command_matches_trec_eval_on_cranfield(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from ragmeter.targets.reference.bm25 import BM25Index
    from ragmeter.text import tokenize

    docs = cranfield_docs()
    doc_ids = list(docs)
    index = BM25Index([tokenize(docs[d]) for d in doc_ids])
    run: dict[str, list[tuple[str, float]]] = {}
    for number, query in enumerate(cranfield_queries(), start=1):
        run[str(number)] = [(doc_ids[i], score) for i, score in index.top(tokenize(query), 100)]
    qrels: dict[str, dict[str, int]] = {}
    for line in (CRANFIELD / "cranqrel").read_text().splitlines():
        query, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = 5 - int(grade) if int(grade) > 0 else 0
    write_run(tmp_path / "run", run, "bm25")
    write_qrels(tmp_path / "qrels", qrels)

    measures = ["ndcg_cut.10", "P.5", "recall.100", "map", "recip_rank", "Rprec", "success.1"]
    args = [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "num_q"]
    for m in measures:
        args += ["-m", m]
    result = ragmeter("trec", *args, "-q")
    assert result.returncode == 0, result.stderr
    ours = parse_trec_output(result.stdout)

    trec_run = {q: {d: s for d, s in ranked} for q, ranked in run.items()}
    names = {"ndcg_cut.10", "P.5", "recall.100", "map", "recip_rank", "Rprec", "success.1"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(
        {q: {d: float(f"{s:.6f}") for d, s in docs.items()} for q, docs in trec_run.items()}
    )
    assert ours[("num_q", "all")] == len(reference) == 225
    for query, values in reference.items():
        for label, expected in values.items():
            assert ours[(label, query)] == pytest.approx(expected, abs=1e-4), (label, query)
    for label in reference["1"]:
        mean = sum(v[label] for v in reference.values()) / len(reference)
        assert ours[(label, "all")] == pytest.approx(mean, abs=1e-4)
    assert ours[("ndcg_cut_10", "all")] > 0.3  # BM25 on Cranfield is far above chance


def test_exported_run_reproduces_the_retrieval_scores(tmp_path: Path) -> None:
    from ragmeter.config import EvalConfig
    from ragmeter.runner.run import evaluate

    outcome = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"),
            output_dir=str(tmp_path / "o"),
            progress=False,
            metrics=["retrieval"],
        )
    )
    run_id = outcome.record.id
    for fmt in ("trec-run", "trec-qrels"):
        exported = ragmeter(
            "export",
            run_id,
            "--store",
            str(tmp_path / "r.db"),
            "--format",
            fmt,
            "-o",
            str(tmp_path / fmt),
        )
        assert exported.returncode == 0, exported.stderr
    result = ragmeter(
        "trec",
        str(tmp_path / "trec-qrels"),
        str(tmp_path / "trec-run"),
        "-m",
        "ndcg_cut.5",
        "-m",
        "recall.5",
        "-m",
        "P.3",
        "-m",
        "recip_rank",
        "-m",
        "map",
        "-m",
        "recip_rank.3",
        "-m",
        "f1.5",
        "-m",
        "num_q",
    )
    assert result.returncode == 0, result.stderr
    ours = parse_trec_output(result.stdout)
    scorecard = outcome.record.scorecard
    assert scorecard is not None
    pairs = {
        "ndcg_cut_5": "ndcg_at_5",
        "recall_5": "recall_at_5",
        "P_3": "precision_at_3",
        "recip_rank": "mrr",
        "map": "map",
        "recip_rank_3": "mrr_at_3",
        "f1_5": "f1_at_5",
    }
    for trec_label, metric in pairs.items():
        summary = scorecard.get(metric)
        assert summary is not None and summary.value is not None
        assert ours[(trec_label, "all")] == pytest.approx(summary.value, abs=1e-4), metric
    assert ours[("num_q", "all")] == scorecard.get("mrr").n_scored  # type: ignore[union-attr]


def test_trec_command_rejects_bad_measures(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("a 0 d 1\n")
    (tmp_path / "r").write_text("a Q0 d 1 1.0 t\n")
    result = ragmeter("trec", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "map.5")
    assert result.returncode == 2 and "takes no cutoff" in result.stderr
    # trec_eval's syntax: a bare P is its default cutoffs
    result = ragmeter("trec", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P")
    assert result.returncode == 0 and "P_1000" in result.stdout
