"""The leakage detectors measured on labelled data (../shared/datasets/leakage): presidio's
synthetic PII spans (detection rate per entity type, false positives on sentences without PII)
and tensor-trust's prompt-extraction outputs (the access code as the declared canary). The
figures are printed, documented in docs/safety.md, and held above floors a little under them."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.leakage import leakage_metrics
from ragmeter.metrics.leakage.canary import canary_spans
from ragmeter.metrics.leakage.pii import pii_spans
from ragmeter.metrics.leakage.secrets import secret_spans
from ragmeter.models import Case, CaseResult, Response
from tests.conftest import DATASETS

LEAKAGE = DATASETS / "leakage"
PRESIDIO = LEAKAGE / "presidio_synth_dataset_v2.json"
TENSOR_TRUST = LEAKAGE / "tensor_trust_prompt_extraction_detection.jsonl"
pytestmark = pytest.mark.skipif(not LEAKAGE.exists(), reason="../shared/datasets/leakage is absent")

# presidio entity type -> the span type of ragmeter's detector
ENTITIES = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "US_SSN": "ssn",
    "CREDIT_CARD": "credit_card",
    "IBAN_CODE": "iban",
    "IP_ADDRESS": "ip",
}
# measured: email 49/49, phone 91/92, ssn 16/16, credit_card 127/136, iban 21/21, ip 14/14
DETECTION_FLOORS = {
    "email": 0.97,
    "phone": 0.95,
    "ssn": 0.93,
    "credit_card": 0.90,
    "iban": 0.95,
    "ip": 0.92,
}


def _presidio() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(PRESIDIO.read_text(encoding="utf-8"))
    return rows


def _gold(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in row["spans"] if s["entity_type"] in ENTITIES]


def _overlaps(span: Any, gold: dict[str, Any]) -> bool:
    return bool(span.start < gold["end_position"] and gold["start_position"] < span.end)


def test_presidio_pii_detection_rate_per_entity_and_false_positives() -> None:
    rows = _presidio()
    assert len(rows) == 1500
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    spurious: Counter[str] = Counter()
    clean = clean_flagged = 0
    for row in rows:
        spans = pii_spans(row["full_text"])
        gold = _gold(row)
        for entity in gold:
            type_ = ENTITIES[entity["entity_type"]]
            total[type_] += 1
            hit[type_] += any(s.type == type_ and _overlaps(s, entity) for s in spans)
        for span in spans:  # a span matching no gold entity of its type
            if not any(
                ENTITIES[g["entity_type"]] == span.type and _overlaps(span, g) for g in gold
            ):
                spurious[span.type] += 1
        if not gold:
            clean += 1
            clean_flagged += bool(spans)
    rates = {t: hit[t] / total[t] for t in total}
    for type_, rate in sorted(rates.items()):
        print(f"presidio {type_}: {hit[type_]}/{total[type_]} = {rate:.3f}")
    print(f"presidio clean sentences flagged: {clean_flagged}/{clean}; spurious spans {spurious}")
    assert total == {"email": 49, "phone": 92, "ssn": 16, "credit_card": 136, "iban": 21, "ip": 14}
    for type_, floor in DETECTION_FLOORS.items():
        assert rates[type_] >= floor, (type_, rates[type_])
    assert clean == 1219
    assert clean_flagged / clean <= 0.005  # measured 2/1219 (two street numbers read as phones)
    assert sum(spurious.values()) <= 5  # measured 2


def test_presidio_through_the_metrics_and_no_secret_false_positives() -> None:
    """Sentence level, through the metrics: a sentence with one of the six entity types is
    labelled pii_exposure, one without is labelled clean."""
    metrics = {m.name: m for m in leakage_metrics(MetricSettings())}
    detected: list[float] = []
    false_positive: list[float] = []
    secret_flags = 0
    for index, row in enumerate(_presidio()):
        text = row["full_text"]
        labels = ["pii_exposure"] if _gold(row) else []
        case = Case(case_id=str(index), question="?", leak_categories=labels)
        result = CaseResult(case_id=str(index), status="ok", response=Response(answer=text))
        name = "pii_detection_rate" if labels else "pii_false_positive_rate"
        score = score_case(metrics[name], case, result)
        assert score.status == "ok" and score.value is not None
        (detected if labels else false_positive).append(score.value)
        secret_flags += bool(secret_spans(text))
    rate, fpr = sum(detected) / len(detected), sum(false_positive) / len(false_positive)
    print(f"presidio sentences: pii_detection_rate {rate:.3f} of {len(detected)}")
    print(f"presidio sentences: pii_false_positive_rate {fpr:.4f} of {len(false_positive)}")
    print(f"presidio sentences flagged by the secret detector: {secret_flags}/1500")
    assert len(detected) == 281 and rate >= 0.95  # measured 0.968 (272/281)
    assert fpr <= 0.005  # measured 0.0016
    assert secret_flags <= 2  # measured 0


def test_tensor_trust_canary_detection_rate_and_false_positive_rate() -> None:
    rows = [json.loads(line) for line in TENSOR_TRUST.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 230
    metrics = {m.name: m for m in leakage_metrics(MetricSettings())}
    outcomes: dict[bool, list[float]] = {True: [], False: []}
    rules: Counter[str] = Counter()
    for row in rows:
        leaked = bool(row["is_prompt_extraction"])
        case = Case(
            case_id=str(row["sample_id"]),
            question="?",
            canaries=[row["access_code"]],
            leak_categories=["canary_exposure"] if leaked else [],
        )
        result = CaseResult(
            case_id=case.case_id, status="ok", response=Response(answer=row["llm_output"])
        )
        name = "canary_detection_rate" if leaked else "canary_false_positive_rate"
        score = score_case(metrics[name], case, result)
        assert score.status == "ok" and score.value is not None
        outcomes[leaked].append(score.value)
        spans = canary_spans(row["llm_output"], (row["access_code"],))
        rules.update(s.rule for s in spans[:1])
        if len(row["access_code"].strip()) >= 5:  # masked: never the code itself
            assert all(row["access_code"].strip() not in s.preview for s in spans)
    rate = sum(outcomes[True]) / len(outcomes[True])
    fpr = sum(outcomes[False]) / len(outcomes[False])
    print(f"tensor-trust canary: detection rate {rate:.3f} of {len(outcomes[True])}")
    print(f"tensor-trust canary: false-positive rate {fpr:.3f} of {len(outcomes[False])}")
    print(f"tensor-trust rules that fired: {dict(rules)}")
    assert (len(outcomes[True]), len(outcomes[False])) == (115, 115)
    assert rate >= 0.58  # measured 0.609 (70/115): 48 exact, 16 fragments, 4 spaced, 2 rot13
    assert fpr <= 0.01  # measured 0.0 (0/115)
