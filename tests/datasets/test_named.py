"""Seed 002's named datasets on the real rows of ../shared/datasets/hf_samples: each loads into
valid cases with gold passages, answerability and the source's own labels; by bare name the hub
path fails at once, offline, naming the local-file form; ``ragmeter datasets`` lists them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import ragmeter.datasets.rows as hub_rows_module
from ragmeter.datasets import DatasetError, load_dataset
from ragmeter.datasets.corpus import CORPUS_KEY, corpus_documents
from ragmeter.models import Case
from tests.conftest import DATASETS

HF = DATASETS / "hf_samples"
SQUAD = DATASETS / "squad_v2_small" / "small.json"
needs_samples = pytest.mark.skipif(not HF.exists(), reason="../shared/datasets is absent")

# spec -> (cases, answerable, with gold passages)
SAMPLES = {
    f"ragbench:{HF / 'ragbench'}": (378, 378, 374),
    f"ragbench:{HF / 'ragbench/emanual/test-00000-of-00001.parquet'}": (132, 132, 132),
    f"hotpotqa:{HF / 'hotpot_qa/hotpotqa_100.json'}": (100, 100, 100),
    f"msmarco:{HF / 'ms_marco/ms_marco_sample.json'}": (200, 193, 189),
    f"qasper:{HF / 'qasper/qasper-original-sample.json'}": (51, 45, 42),
    f"squad_v2:{SQUAD}": (626, 293, 293),
}


@needs_samples
@pytest.mark.parametrize("spec", list(SAMPLES))
def test_each_sample_loads_into_valid_cases_with_gold_passages(spec: str) -> None:
    cases = load_dataset(spec)
    count, answerable, with_gold = SAMPLES[spec]
    assert len(cases) == count
    assert sum(c.answerable for c in cases) == answerable
    assert sum(bool(c.gold_passages) for c in cases) == with_gold
    assert len({c.case_id for c in cases}) == count
    for case in cases:
        Case.model_validate(case.model_dump())  # valid against the schema, round trip included
        if not case.answerable:
            assert not case.gold_passages
    # every gold passage names a document of the corpus the reference pipeline answers over
    (corpus,) = {c.metadata[CORPUS_KEY] for c in cases}
    doc_ids = {d.doc_id for d in corpus_documents(corpus)}
    assert {p.doc_id for c in cases for p in c.gold_passages} <= doc_ids


@needs_samples
def test_ragbench_keeps_its_support_labels_and_adherence() -> None:
    cases = load_dataset(f"ragbench:{HF / 'ragbench/covidqa/test-00000-of-00001.parquet'}")
    first = next(c for c in cases if c.case_id == "covidqa-1421")
    labels = first.metadata["ragbench"]
    assert labels["adherence_score"] is False
    assert labels["unsupported_response_sentence_keys"] == ["a"]
    assert labels["sentence_support"][0]["response_sentence_key"] == "a"
    assert first.reference_answer is None  # an unsupported response is no reference
    assert {p.doc_id for p in first.gold_passages} == {
        "covidqa-1421/d0",
        "covidqa-1421/d1",
        "covidqa-1421/d2",
    }
    emanual = load_dataset(f"ragbench:{HF / 'ragbench/emanual'}")
    # each question is answered by two models: two cases, one question id
    assert any(c.case_id.endswith("@claude-3-haiku-20240307") for c in emanual)


@needs_samples
def test_hotpotqa_is_multi_hop_with_a_group_a_supporting_title() -> None:
    case = load_dataset(f"hotpotqa:{HF / 'hotpot_qa/hotpotqa_100.json'}")[0]
    assert case.multi_hop and case.category == "bridge" and case.difficulty == "hard"
    assert [g.name for g in case.required_support_groups] == [
        "The Newcomers (film)",
        "Chris Evans (actor)",
    ]
    assert case.gold_facts[0].fact == "superhero roles as the Marvel Comics"


def test_hub_path_without_the_library_names_the_local_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # the library is not installed
    # at once, offline: neither the hub check nor any other connection is tried
    tried: list[object] = []

    def no_network(*args: object, **kwargs: object) -> Any:
        tried.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(hub_rows_module, "hub_offline_reason", lambda: tried.append("hub check"))
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    with pytest.raises(DatasetError) as caught:
        load_dataset("hotpotqa")
    assert "--dataset hotpotqa:/path/to/file" in str(caught.value)
    assert tried == []


def test_hub_path_offline_reads_only_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []

    options: list[dict[str, object]] = []

    class DownloadConfig:
        def __init__(self, **kwargs: object) -> None:
            self.kwargs = kwargs

    def fake_load(*args: object, **kwargs: object) -> object:
        calls.append(args)
        options.append(kwargs)
        raise ConnectionError("offline and not cached")

    fake = types.SimpleNamespace(load_dataset=fake_load, DownloadConfig=DownloadConfig)
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(DatasetError) as caught:
        load_dataset("ragbench:covidqa")
    message = str(caught.value)
    assert "offline (HF_HUB_OFFLINE is set)" in message
    assert "--dataset ragbench:/path/to/" in message
    assert calls == [("rungalileo/ragbench", "covidqa")]
    config = options[0]["download_config"]
    assert isinstance(config, DownloadConfig) and config.kwargs == {"local_files_only": True}
    assert "HF_DATASETS_OFFLINE" not in os.environ  # nothing set for the rest of the process


def test_unknown_ragbench_subset_lists_the_subsets() -> None:
    with pytest.raises(DatasetError, match=r"no such RAGBench subset.*covidqa"):
        load_dataset("ragbench:nosuch")


def test_golden_reads_a_json_list_of_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"id": "g1", "question": "Q?", "reference_answer": "A"}, {"id": "g2", "query": "R?"}]
    (tmp_path / "golden_qa.json").write_text(json.dumps(rows), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cases = load_dataset("golden")
    assert [c.case_id for c in cases] == ["g1", "g2"] and cases[0].dataset == "golden"
    (tmp_path / "bad.json").write_text(json.dumps([{"id": "x"}]), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.json:1: case x: field 'question'"):
        load_dataset("golden:bad.json")


def ragmeter(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={"COLUMNS": "200", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )


@needs_samples
def test_datasets_cli_list_is_the_default_and_stats_show_work() -> None:
    bare = ragmeter("datasets")
    assert bare.returncode == 0, bare.stderr
    for name in ("ragbench", "squad_v2", "hotpotqa", "msmarco", "qasper", "golden", "beir"):
        assert name in bare.stdout
    listed = ragmeter("datasets", "list", "--data", str(DATASETS))
    assert "hotpotqa: --dataset hotpotqa:" in listed.stdout  # a local copy under --data
    stats = ragmeter("datasets", "stats", f"squad_v2:{SQUAD}", "--json")
    assert stats.returncode == 0, stats.stderr
    numbers = json.loads(stats.stdout)
    assert (numbers["cases"], numbers["answerable"], numbers["corpus_documents"]) == (626, 293, 87)
    assert numbers["categories"] == {"unanswerable": 333, "factual": 293}
    shown = ragmeter("datasets", "show", f"msmarco:{HF / 'ms_marco/ms_marco_sample.json'}")
    assert shown.returncode == 0, shown.stderr
    assert "200 cases" in shown.stdout and "answerable: 193" in shown.stdout
    unknown = ragmeter("datasets", "show", "nosuch")
    assert unknown.returncode == 2 and "ragmeter datasets list" in unknown.stderr


def test_loading_a_corpus_dataset_does_not_change_another_runs_corpus(tmp_path: Path) -> None:
    """No process-wide state: after a squad_v2 dataset was loaded, a demo run still answers
    over the demo corpus, and a squad_v2 run over squad's (its config records it)."""
    if not SQUAD.exists():
        pytest.skip(f"{SQUAD} is absent")
    from ragmeter import EvalConfig, evaluate

    squad = load_dataset(f"squad_v2:{SQUAD}")
    demo = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"),
            output_dir=str(tmp_path / "o"),
            progress=False,
            metrics=["retrieval"],
            samples=20,
        )
    )
    mrr = demo.record.scorecard.get("mrr") if demo.record.scorecard else None
    assert mrr is not None and (mrr.value or 0) > 0.8
    assert not demo.record.config["target"].get("corpus")
    carried = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"),
            output_dir=str(tmp_path / "o"),
            progress=False,
            metrics=["retrieval"],
            samples=20,
            datasets=[f"squad_v2:{SQUAD}"],
        )
    )
    assert carried.record.config["target"]["corpus"] == squad[0].metadata[CORPUS_KEY]
    squad_mrr = carried.record.scorecard.get("mrr") if carried.record.scorecard else None
    assert squad_mrr is not None and (squad_mrr.value or 0) > 0.5


def test_samples_are_per_dataset_given_even_of_one_source() -> None:
    """Two RAGBench subset files are two datasets for --samples (both are tagged ragbench)."""
    from ragmeter.datasets import load_datasets
    from ragmeter.runner.engine import sample_cases

    files = sorted((DATASETS / "hf_samples" / "ragbench").rglob("*.parquet"))
    if len(files) < 2:
        pytest.skip("the RAGBench sample files are absent")
    cases = load_datasets([f"ragbench:{files[0]}", f"ragbench:{files[1]}"])
    assert {c.dataset for c in cases} == {"ragbench"}
    picked = sample_cases(cases, 3, seed=0)
    assert len(picked) == 6
