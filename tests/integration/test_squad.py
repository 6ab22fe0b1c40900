"""The offline metrics on SQuAD v2 (../shared/datasets/squad_v2_small) through the reference
pipeline: numbers in the documented ranges, abstention measured on the 333 unanswerable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.config import EvalConfig, TargetConfig
from ragmeter.datasets import load_dataset
from ragmeter.datasets.squad import import_squad
from ragmeter.runner.run import evaluate
from tests.conftest import DATASETS

pytestmark = pytest.mark.integration
SQUAD = DATASETS / "squad_v2_small" / "small.json"


@pytest.mark.skipif(not SQUAD.exists(), reason="../shared/datasets/squad_v2_small is absent")
def test_squad_v2_through_the_reference_pipeline(tmp_path: Path) -> None:
    cases_file, corpus, count = import_squad(SQUAD, tmp_path / "squad")
    assert count == 626
    assert len(list(corpus.glob("*.md"))) == 87
    cases = load_dataset(str(cases_file))
    assert sum(not c.answerable for c in cases) == 333
    outcome = evaluate(
        EvalConfig(
            store=str(tmp_path / "r.db"),
            output_dir=str(tmp_path / "o"),
            progress=False,
            target=TargetConfig(type="reference", corpus=str(corpus)),
            # the families of the metrics checked below: the embedding-based families would
            # triple the test's CPU time and nothing here reads them
            metrics=["retrieval", "abstention", "assertions", "citation", "context"],
        ),
        cases=cases,
    )
    card = outcome.record.scorecard
    assert card is not None

    def value(name: str) -> float:
        summary = card.get(name)
        assert summary is not None and summary.value is not None, name
        return summary.value

    abstention = card.get("abstention_accuracy")
    assert abstention is not None and (abstention.n_scored, abstention.n_skipped) == (333, 293)
    # documented in docs/metrics.md: BM25 finds the paragraph; the extractive answerer rarely
    # abstains on SQuAD's adversarial unanswerable questions, which share the paragraph's words
    assert value("recall_at_5") > 0.9
    assert 0.7 < value("mrr") < 0.95
    assert value("abstention_accuracy") < 0.4
    false_negative = value("abstention_false_negative_rate")
    assert false_negative == pytest.approx(1 - value("abstention_accuracy"))
    assert 0.3 < value("fact_coverage") < 0.9
    assert value("citation_validity_form") == 1.0
    assert value("fact_recall_in_context") > 0.9
    assert value("correct_answer_rate") + value("wrong_answer_rate") + value("dont_know_rate") == (
        pytest.approx(1.0)
    )
