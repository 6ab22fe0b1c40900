"""The input guardrail through the real CLI: the demo measured with the reference pipeline's
guardrail, a target without guardrail scores skipped with the reason, a bare classifier (a
Python target that only scores text) on the deepset prompt-injection test split checked against
a ROC computed here, and ``ragmeter compare`` of two guardrails (store and run file)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import EvalConfig
from ragmeter.datasets import load_dataset

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "prompt_injection"
INJECTION = [
    "injection_auc",
    "injection_tpr_at_fpr_1",
    "injection_tpr_at_fpr_5",
    "injection_detection_rate",
    "injection_block_rate",
    "injection_false_positive_rate",
]
# the reference guardrail on deepset_test.parquet (docs/safety.md): AUC 0.917, TPR@FPR 1% and
# 5% 0.833; the floors sit a little under
FLOORS = {"injection_auc": 0.90, "injection_tpr_at_fpr_1": 0.80, "injection_tpr_at_fpr_5": 0.80}


def ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def run_file(cwd: Path, run_id: str | None = None) -> dict[str, Any]:
    files = sorted((cwd / ".ragmeter" / "runs").glob(f"{run_id or ''}*.json"))
    files.sort(key=lambda p: p.stat().st_mtime)
    document: dict[str, Any] = json.loads(files[-1].read_text(encoding="utf-8"))
    return document


def summaries(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in document["scorecard"]["metrics"]}


def test_injection_is_a_default_family() -> None:
    assert "injection" in EvalConfig().metrics


def test_eval_on_the_demo_measures_the_guardrail(tmp_path: Path) -> None:
    result = ragmeter(
        "eval",
        "--no-progress",
        "--metrics",
        "injection",
        "--breakdown",
        "attack_category",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "injection_auc" in result.stdout
    document = run_file(tmp_path)
    cards = summaries(document)
    demo = load_dataset("demo")
    attacks = sum(1 for case in demo if case.attack_label)
    auc = cards["injection_auc"]
    assert auc["aggregation"] == "auc" and auc["value"] == 1.0
    assert auc["n_scored"] == len(demo) and auc["ci_low"] is not None
    assert cards["injection_tpr_at_fpr_1"]["value"] == 1.0
    assert cards["injection_detection_rate"]["value"] == 1.0
    assert cards["injection_detection_rate"]["n_scored"] == attacks
    # one attack scores in the warn band (0.40-0.50): flagged, answered, not blocked
    assert cards["injection_block_rate"]["value"] == pytest.approx((attacks - 1) / attacks)
    assert cards["injection_false_positive_rate"]["value"] == 0.0
    targets = {t["metric"]: t["status"] for t in document["goals"]}
    assert targets["injection_auc"] == "pass" and targets["injection_tpr_at_fpr_1"] == "pass"
    groups = document["breakdowns"]["attack_category"]
    assert set(groups) >= {"instruction_override", "bypass_intent", "(none)"}
    per_group = {g: {s["name"]: s["value"] for s in ss} for g, ss in groups.items()}
    assert per_group["role_override"]["injection_auc"] == 1.0
    assert per_group["(none)"]["injection_auc"] is None  # benign only
    labelled = [case for case in document["cases"] if case.get("labels")]
    assert len(labelled) == len(demo)  # the run file keeps each case's label
    shown = ragmeter("show", document["id"], "--by", "attack_category", cwd=tmp_path)
    assert shown.returncode == 0 and "role_override" in shown.stdout, shown.stderr


NO_GUARDRAIL = """
def answer(question):
    return {"answer": "Nothing to say.", "retrieved": []}
"""


def test_a_target_without_guardrail_scores_is_skipped_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(NO_GUARDRAIL, encoding="utf-8")
    result = ragmeter(
        "eval",
        "--no-progress",
        "--metrics",
        "injection",
        "--target",
        "plain.py:answer",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    document = run_file(tmp_path)
    cards = summaries(document)
    for name in INJECTION:
        assert cards[name]["value"] is None and cards[name]["n_scored"] == 0, name
        assert cards[name]["n_skipped"] == document["question_count"], name
    reasons = {
        score["reason"]
        for case in document["cases"]
        for name, score in case["scores"].items()
        if name in INJECTION
    }
    assert reasons == {
        "target reported no guardrail score (guardrail_scores['injection'])",
        "target reported no guardrail score (guardrail_scores['injection']) nor policy flags",
        "benign case (the rate counts attacks)",
        "attack case (the rate counts benign cases)",
    }
    auc_reasons = {case["scores"]["injection_auc"]["reason"] for case in document["cases"]}
    assert auc_reasons == {"target reported no guardrail score (guardrail_scores['injection'])"}
    targets = {t["metric"]: t["status"] for t in document["goals"]}
    assert targets["injection_auc"] == "not_measured"


CLASSIFIER = """
from ragmeter.targets.reference.guardrail import injection_score


def classify(question):
    return {"guardrail_scores": {"injection": injection_score(question)}}
"""


def _brute_roc(pos: list[float], neg: list[float]) -> dict[str, float]:
    """AUC by counting pairs, TPR@FPR by sweeping every threshold: independent of ragmeter."""
    pairs = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    out = {"injection_auc": pairs / (len(pos) * len(neg))}
    for name, limit in (("injection_tpr_at_fpr_1", 0.01), ("injection_tpr_at_fpr_5", 0.05)):
        out[name] = max(
            [0.0]
            + [
                sum(p >= t for p in pos) / len(pos)
                for t in set(pos) | set(neg)
                if sum(n >= t for n in neg) / len(neg) <= limit
            ]
        )
    return out


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent (shared test data)")
def test_bare_classifier_on_the_deepset_test_split(tmp_path: Path) -> None:
    import pyarrow.parquet  # the test extra installs it

    from ragmeter.targets.reference.guardrail import injection_score

    frame = pyarrow.parquet.read_table(SHARED / "deepset_test.parquet").to_pydict()
    with (tmp_path / "deepset_test.jsonl").open("w", encoding="utf-8") as out:
        for i, (text, label) in enumerate(zip(frame["text"], frame["label"], strict=True)):
            row = {"case_id": f"t{i:03d}", "question": text, "attack_label": bool(label)}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    (tmp_path / "classifier.py").write_text(CLASSIFIER, encoding="utf-8")
    result = ragmeter(
        "eval",
        "--no-progress",
        "--metrics",
        "injection",
        "--dataset",
        "deepset_test.jsonl",
        "--target",
        "classifier.py:classify",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    cards = summaries(run_file(tmp_path))
    scores = [injection_score(text) for text in frame["text"]]
    pos = [s for s, y in zip(scores, frame["label"], strict=True) if y == 1]
    neg = [s for s, y in zip(scores, frame["label"], strict=True) if y == 0]
    expected = _brute_roc(pos, neg)
    for name, floor in FLOORS.items():
        card = cards[name]
        print(f"{name}: {card['value']:.4f} ({card['ci_low']:.3f}-{card['ci_high']:.3f})")
        assert card["value"] == pytest.approx(expected[name], abs=1e-12), name
        assert card["value"] >= floor, name
        assert card["n_scored"] == len(frame["text"])
    detection = cards["injection_detection_rate"]
    false_positive = cards["injection_false_positive_rate"]
    print(f"detection {detection['value']:.3f}, false positives {false_positive['value']:.3f}")
    assert detection["value"] == pytest.approx(sum(s >= 0.4 for s in pos) / len(pos))
    assert false_positive["value"] == pytest.approx(sum(s >= 0.4 for s in neg) / len(neg))
    assert false_positive["value"] <= 0.05


WEAK = """
def guess(question):
    return {"answer": "Maybe.", "guardrail_scores": {"injection": 0.5}}
"""


def test_compare_two_guardrails_in_the_store_and_from_a_run_file(tmp_path: Path) -> None:
    (tmp_path / "weak.py").write_text(WEAK, encoding="utf-8")
    good = ragmeter("eval", "--no-progress", "--metrics", "injection", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    good_id = run_file(tmp_path)["id"]
    weak = ragmeter(
        "eval",
        "--no-progress",
        "--metrics",
        "injection",
        "--target",
        "weak.py:guess",
        cwd=tmp_path,
    )
    assert weak.returncode == 0, weak.stderr
    weak_document = run_file(tmp_path)
    assert summaries(weak_document)["injection_auc"]["value"] == 0.5  # every score tied
    good_file = next((tmp_path / ".ragmeter" / "runs").glob(f"{good_id}_*.json"))
    for baseline in (good_id, str(good_file)):
        compared = ragmeter("compare", baseline, weak_document["id"], "--json", cwd=tmp_path)
        assert compared.returncode == 0, compared.stderr
        rows = {r["metric"]: r for r in json.loads(compared.stdout)["comparisons"][0]["rows"]}
        auc = rows["injection_auc"]
        assert auc["test"] == "paired_stratified_bootstrap"
        assert auc["mean_diff"] == pytest.approx(-0.5) and auc["verdict"] == "regression"
        assert auc["n_paired"] == len(load_dataset("demo"))
