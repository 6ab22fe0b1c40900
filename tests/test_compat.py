"""Seed 002's programmatic API: ``run_evaluation``, ``DatasetName``, ``EvalConfig``'s seed field
names, and the typed run it returns (``Run.to_pandas()``)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter import DatasetName, EvalConfig, Run, run_evaluation
from ragmeter.config import TargetConfig
from ragmeter.datasets.declarations import NAMED_DATASETS, declared
from ragmeter.results import MissingDependencyError
from tests.conftest import DATASETS, SHARED, free_port, wait_for_health

# seed 002's "Programmatic" example, with its package's name ``evals`` read as ``ragmeter``
SEED_002_EXAMPLE = """\
from ragmeter import EvalConfig, run_evaluation, DatasetName

config = EvalConfig(
    datasets=[DatasetName.RAGBENCH, DatasetName.SQUAD_V2],
    samples_per_dataset=50,
    rag_server_url="http://localhost:8001",
)
result = run_evaluation(config)
"""
RAGBENCH = DATASETS / "hf_samples" / "ragbench"
SQUAD = DATASETS / "squad_v2_small" / "small.json"


def test_the_example_is_seed_002s() -> None:
    seeds = sorted((SHARED / "seeds").glob("002_*.txt"))
    if not seeds:
        pytest.skip(f"{SHARED / 'seeds'} is absent (../shared)")
    text = seeds[0].read_text(encoding="utf-8")
    block = re.search(r"### Programmatic\s*```python\n(.*?)```", text, re.S)
    assert block is not None
    assert block.group(1).replace("from evals import", "from ragmeter import") == SEED_002_EXAMPLE


@pytest.fixture
def datasets_server() -> Iterator[str]:
    """`ragmeter reference-server` over the two datasets' own corpora (so their gold ids can
    match: over the demo corpus every retrieval score fails the id-space check)."""
    if not (RAGBENCH.is_dir() and SQUAD.is_file()):
        pytest.skip(f"{DATASETS} is absent (../shared/datasets)")
    port = free_port()
    corpora = ["--corpus", f"ragbench:{RAGBENCH}", "--corpus", f"squad_v2:{SQUAD}"]
    command = [sys.executable, "-m", "ragmeter", "reference-server", "--port", str(port)]
    process = subprocess.Popen(
        [*command, *corpora], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, timeout_s=300.0)  # the corpora are indexed first
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.integration
def test_seed_002_programmatic_example_runs_as_written(
    datasets_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example, run as written but for what is impossible offline: the RAG server is
    `ragmeter reference-server` serving the two datasets' corpora on a free port instead of
    localhost:8001, and the two datasets are read from their local copies in
    ../shared/datasets (``DatasetName.X.at(PATH)``) instead of downloaded from the hub."""
    reference_server = datasets_server
    monkeypatch.chdir(tmp_path)  # the run store and run file go under .ragmeter here
    code = (
        SEED_002_EXAMPLE.replace("http://localhost:8001", reference_server)
        .replace("DatasetName.RAGBENCH,", f"DatasetName.RAGBENCH.at({str(RAGBENCH)!r}),")
        .replace("DatasetName.SQUAD_V2]", f"DatasetName.SQUAD_V2.at({str(SQUAD)!r})]")
    )
    assert code.count(".at(") == 2 and reference_server in code  # only those two changes
    namespace: dict[str, object] = {}
    exec(compile(code, "seed_002_example", "exec"), namespace)
    result = namespace["result"]

    assert isinstance(result, Run)
    assert result.status == "completed" and result.datasets == ["ragbench", "squad_v2"]
    assert result.question_count == 100  # 50 per dataset
    assert result.config["target"]["type"] == "http"
    assert result.config["target"]["url"] == reference_server
    assert result.scorecard is not None and result.weighted_score is not None
    mrr = result.metric("mrr")
    assert mrr.n_scored > 0 and mrr.fail_reason is None  # the ids match: retrieval measured
    assert result.path is not None and result.path.is_file()
    assert (tmp_path / ".ragmeter" / "runs.db").is_file()
    frame = result.to_pandas()
    assert len(frame) == 100 and {"case_id", "status", "mrr"} <= set(frame.columns)


def test_dataset_names_are_seed_002s_and_known() -> None:
    assert [d.value for d in DatasetName] == [
        "ragbench",
        "qasper",
        "squad_v2",
        "hotpotqa",
        "msmarco",
        "golden",
    ]
    assert all(declared(d.value) is not None for d in DatasetName)
    assert sorted(d.value for d in DatasetName) == sorted(NAMED_DATASETS)  # declared once
    assert DatasetName.SQUAD_V2 == "squad_v2" and f"{DatasetName.HOTPOTQA}" == "hotpotqa"
    assert DatasetName.GOLDEN.at("g.jsonl") == "golden:g.jsonl"
    config = EvalConfig(datasets=[DatasetName.RAGBENCH, DatasetName.SQUAD_V2])
    assert config.datasets == ["ragbench", "squad_v2"]
    assert type(config.datasets[0]) is str  # stored and dumped as plain names


def test_eval_config_takes_seed_002_field_names() -> None:
    config = EvalConfig(samples_per_dataset=50, rag_server_url="http://localhost:8001")
    assert config.samples == 50
    assert (config.target.type, config.target.url) == ("http", "http://localhost:8001")
    # with a target object (its other settings kept), and from a dict (a YAML file)
    config = EvalConfig(target=TargetConfig(top_k=3), rag_server_url="http://h:1")
    assert (config.target.type, config.target.url, config.target.top_k) == ("http", "http://h:1", 3)
    config = EvalConfig.model_validate({"samples_per_dataset": 5, "samples": 5})
    assert config.samples == 5  # the same value under both names
    with pytest.raises(ValueError, match="samples_per_dataset"):
        EvalConfig(samples=3, samples_per_dataset=4)
    with pytest.raises(ValueError, match="rag_server_url"):
        EvalConfig.model_validate({"rag_server_url": "http://a:1", "target": {"url": "http://b:2"}})


def test_a_target_url_alone_is_an_http_target() -> None:
    assert TargetConfig(url="http://h:1").type == "http"
    assert TargetConfig(type="python", callable="m:f", url="http://h:1").type == "python"
    assert TargetConfig().type == "reference"


def test_kind_the_older_name_of_the_target_type_is_read() -> None:
    """``target: {kind: ...}`` from a config file or a stored run written before the rename."""
    assert TargetConfig.model_validate({"kind": "replay", "path": "r.jsonl"}).type == "replay"
    config = EvalConfig.model_validate({"target": {"kind": "python", "callable": "m:f"}})
    assert config.target.type == "python" and "kind" not in config.target.model_dump()
    # a later layer's type (a flag) wins over a file's kind
    both = TargetConfig.model_validate({"kind": "replay", "type": "http", "url": "http://h:1"})
    assert both.type == "http"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    store = tmp_path_factory.mktemp("compat") / "runs.db"
    config = EvalConfig(
        samples_per_dataset=6, metrics=["retrieval", "lexical"], store=str(store), progress=False
    )
    return run_evaluation(config)


def test_run_evaluation_returns_the_typed_run(demo_run: Run) -> None:
    assert demo_run.status == "completed" and demo_run.question_count == 6
    assert demo_run.cases is not None and len(demo_run.cases) == 6
    mrr = demo_run.metric("mrr")
    assert mrr.n_scored + mrr.n_skipped + mrr.n_failed == 6
    with pytest.raises(KeyError, match="has no metric 'faithfulness'"):
        demo_run.metric("faithfulness")
    assert demo_run.path is not None
    again = Run.load(demo_run.path)
    assert again.id == demo_run.id and again.path == demo_run.path
    assert again.to_pandas().equals(demo_run.to_pandas())


def test_to_pandas_frames(demo_run: Run) -> None:
    cases = demo_run.to_pandas()
    assert list(cases["case_id"]) == [c.case_id for c in demo_run.cases or []]
    assert set(demo_run.metric_names) <= set(cases.columns)
    scores = demo_run.to_pandas("scores")
    assert list(scores.columns) == ["case_id", "metric", "value", "status", "reason"]
    skipped = scores[scores["status"] == "skipped"]
    assert skipped["value"].isna().all() and skipped["reason"].notna().all()
    metrics = demo_run.to_pandas("metrics").set_index("name")
    assert metrics.loc["mrr", "value"] == pytest.approx(demo_run.metric("mrr").value)
    assert {"ci_low", "ci_high", "n_scored", "n_skipped", "n_failed"} <= set(metrics.columns)
    with pytest.raises(ValueError, match="not one of"):
        demo_run.to_pandas("nope")  # type: ignore[arg-type]


def test_to_pandas_without_pandas_says_how_to_install_it(
    demo_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(MissingDependencyError, match="pip install pandas"):
        demo_run.to_pandas()
