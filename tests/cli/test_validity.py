"""``ragmeter validity`` end to end through the real command line: a run replayed from a file,
labels written by an independent rule (and, when ../shared/datasets is there, BEGIN's human
attribution labels), the report's numbers against an independent computation, the report
stored with the run and shown by ``show``, and ``--gate``'s exit codes."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli.main import main
from ragmeter.errors import EXIT_BAD_INPUT, EXIT_GATE
from ragmeter.models import Score
from ragmeter.store.sqlite import RunStore
from tests.conftest import DATASETS


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def pairwise_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Every (positive, negative) pair, ties 1/2 (or SciPy's Mann-Whitney U when installed)."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    found = wins / (len(positives) * len(negatives))
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        return found
    u = mannwhitneyu(positives, negatives).statistic / (len(positives) * len(negatives))
    assert found == pytest.approx(u)
    return found


def hand_ranks(values: Sequence[float]) -> list[float]:
    ordered = sorted(values)
    first = {v: ordered.index(v) + 1 for v in set(values)}
    return [first[v] + (ordered.count(v) - 1) / 2 for v in values]


def hand_spearman(x: Sequence[float], y: Sequence[float]) -> float:
    rx, ry = hand_ranks(x), hand_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)
    return float(cov / var**0.5)


def kappa_and_balanced(predicted: Sequence[int], labels: Sequence[int]) -> tuple[float, float]:
    n = len(labels)
    tp = sum(1 for p, y in zip(predicted, labels, strict=True) if p and y)
    tn = sum(1 for p, y in zip(predicted, labels, strict=True) if not p and not y)
    positives = sum(labels)
    observed = (tp + tn) / n
    share_p, share_y = sum(predicted) / n, positives / n
    expected = share_p * share_y + (1 - share_p) * (1 - share_y)
    balanced = (tp / positives + tn / (n - positives)) / 2
    return (observed - expected) / (1 - expected), balanced


def stored_scores(store: Path, run_id: str, metric: str) -> dict[str, Score]:
    run_store = RunStore(store, create=False)
    try:
        return {s.case_id: s for s in run_store.get_scores(run_id) if s.metric == metric}
    finally:
        run_store.close()


def evaluate(
    tmp_path: Path, cases: list[dict[str, Any]], replies: list[dict[str, Any]], metrics: str
) -> tuple[Path, str]:
    """Write a dataset and a replay file, run ``ragmeter eval`` on them; (store, run id)."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    store = tmp_path / "runs.db"
    result = run(
        "eval", "--dataset", str(tmp_path / "cases.jsonl"),
        "--target", f"replay:{tmp_path / 'replay.jsonl'}", "--metrics", metrics,
        "--no-progress", "--store", str(store), "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [run_file] = (tmp_path / "out").glob("*.json")
    return store, run_file.name.split("_")[0]


# a replayed run with labels from an independent rule ---------------------------------------------
NUMBERS = [17, 42, 8, 1999, 64, 3, 250, 71, 12, 905, 38, 560, 29, 7, 88, 144, 5, 333, 21, 76]


def synthetic_run(tmp_path: Path) -> tuple[Path, str, dict[str, int], dict[str, int]]:
    """20 cases "what is the value of item i?" whose answers give the right number, a wrong
    one or none, in varied wording; one case without a reference (lexical metrics skip it) and
    one whose answer failed (scores fail). Binary label: the reference's number is in the
    answer (a reviewer's check, independent of the metrics); graded: 0-3 by hand-made rule."""
    cases, replies, binary, graded = [], [], {}, {}
    for i, number in enumerate(NUMBERS):
        case_id = f"item-{i:02d}"
        cases.append(
            {
                "case_id": case_id,
                "question": f"What is the value of item {i}?",
                "reference_answer": f"The value of item {i} is {number}.",
            }
        )
        style = i % 5
        answer = [
            f"The value of item {i} is {number}.",
            f"The value of item {i} is {number + 1}.",
            f"Item {i} has the value {number} according to the records.",
            "I could not find the value of that item.",
            f"{number}",
        ][style]
        replies.append({"case_id": case_id, "response": {"answer": answer}})
        binary[case_id] = int(re.search(rf"\b{number}\b", answer) is not None)
        graded[case_id] = [3, 1, 2, 0, 2][style]
    cases.append({"case_id": "no-reference", "question": "What is the value of nothing?"})
    replies.append({"case_id": "no-reference", "response": {"answer": "Nothing."}})
    cases.append({"case_id": "failed", "question": "What is item 99?", "reference_answer": "9"})
    replies.append({"case_id": "failed", "error_type": "timeout", "error_message": "slow"})
    binary.update({"no-reference": 1, "failed": 0})
    graded.update({"no-reference": 2, "failed": 1})
    store, run_id = evaluate(tmp_path, cases, replies, "lexical")
    return store, run_id, binary, graded


def write_labels(path: Path, labels: dict[str, Any], extra: Sequence[str] = ()) -> Path:
    lines = [{"case_id": c, "label": v, "reviewer": "a"} for c, v in labels.items()]
    lines += [{"case_id": c, "label": 1} for c in extra]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_binary_labels_end_to_end(tmp_path: Path) -> None:
    store, run_id, labels, _ = synthetic_run(tmp_path)
    path = write_labels(tmp_path / "labels.jsonl", labels, extra=["ghost-1", "ghost-2"])
    shown = run("validity", run_id, "--labels", str(path), "--store", str(store), "--json")
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.output)
    assert (report["label_form"], report["n_labels"], report["n_unknown"]) == ("binary", 24, 2)
    assert report["unknown_case_ids"] == ["ghost-1", "ghost-2"]

    for metric in ("token_f1", "exact_match", "keyword_coverage"):
        scores = stored_scores(store, run_id, metric)
        ok = [c for c in labels if scores[c].status == "ok"]
        values, truth = [scores[c].value or 0.0 for c in ok], [labels[c] for c in ok]
        result = next(m for m in report["metrics"] if m["metric"] == metric)
        left_out = sum(1 for c in labels if scores[c].status != "ok")
        assert (result["n_labelled"], result["n_scored"]) == (22, len(ok)) and left_out == 2
        assert result["n_skipped"] + result["n_failed"] == 2  # never scored as 0
        stats = result["statistics"]
        assert stats["auc"]["value"] == pytest.approx(pairwise_auc(values, truth))
        assert stats["base_rate"]["value"] == pytest.approx(sum(truth) / len(truth))
        # the threshold: the midpoint of the 0-1 scale (no target for these metrics)
        assert (result["threshold_op"], result["threshold"]) == (">=", 0.5)
        kappa, balanced = kappa_and_balanced([int(v >= 0.5) for v in values], truth)
        assert stats["kappa"]["value"] == pytest.approx(kappa)
        assert stats["balanced_accuracy"]["value"] == pytest.approx(balanced)
        for statistic in stats.values():
            assert statistic["ci_low"] <= statistic["ci_high"]

    # the table; stored with the run and shown by `show` (text and JSON)
    table = run("validity", run_id, "--labels", str(path), "--store", str(store))
    assert (
        "Validity against" in table.output and "2 labels name cases not in the run" in table.output
    )
    assert "token_f1" in table.output and "thresholds: " in table.output
    token_f1 = next(m for m in report["metrics"] if m["metric"] == "token_f1")
    auc_text = f"{token_f1['statistics']['auc']['value']:.3f}"
    show = run("show", run_id, "--store", str(store))
    section = show.output[show.output.index("Validity") :]
    assert re.search(rf"token_f1\s*│\s*AUC\s*│\s*{auc_text}", section), section
    assert f"({report['labels_sha256'][:8]})" in section  # two versions of a file differ
    document = json.loads(run("show", run_id, "--store", str(store), "--json").output)
    [stored] = document["validity"]
    assert stored["labels_sha256"] == report["labels_sha256"]
    assert {m["metric"]: m for m in stored["metrics"]}["token_f1"] == token_f1

    # running it again with the same file replaces the rows, not adds to them
    run("validity", run_id, "--labels", str(path), "--store", str(store), "--metric", "token_f1")
    run_store = RunStore(store, create=False)
    count = run_store.db.execute("SELECT COUNT(*) FROM validity WHERE metric='token_f1'")
    assert count.fetchone()[0] == 1
    run_store.close()


def test_graded_labels_end_to_end(tmp_path: Path) -> None:
    store, run_id, _, grades = synthetic_run(tmp_path)
    path = write_labels(tmp_path / "grades.jsonl", grades)
    shown = run(
        "validity", run_id, "--labels", str(path), "--store", str(store), "--json",
        "--metric", "token_f1", "--metric", "answer_completeness",
    )  # fmt: skip
    report = json.loads(shown.output)
    assert report["label_form"] == "graded"
    for result in report["metrics"]:
        scores = stored_scores(store, run_id, result["metric"])
        ok = [c for c in grades if scores[c].status == "ok"]
        values, truth = [scores[c].value or 0.0 for c in ok], [grades[c] for c in ok]
        rho = result["statistics"]["spearman"]["value"]
        assert rho == pytest.approx(hand_spearman(values, truth))
        try:
            from scipy.stats import kendalltau
        except ImportError:
            continue
        tau = result["statistics"]["kendall_tau_b"]["value"]
        assert tau == pytest.approx(kendalltau(values, truth).statistic)
    # the gate checks Spearman's rho for graded labels
    rho = report["metrics"][0]["statistics"]["spearman"]["value"]
    gated = run(
        "validity", run_id, "--labels", str(path), "--store", str(store), "--gate",
        "--floor", f"token_f1={min(rho + 0.01, 1.0)}",
    )  # fmt: skip
    assert gated.exit_code == EXIT_GATE
    assert f"gate: token_f1: Spearman's rho {rho:.3f} is below its floor" in gated.output


def test_gate_exits_4_only_under_a_floor_above_the_measured_auc(tmp_path: Path) -> None:
    store, run_id, labels, _ = synthetic_run(tmp_path)
    path = write_labels(tmp_path / "labels.jsonl", labels)
    scores = stored_scores(store, run_id, "token_f1")
    ok = [c for c in labels if scores[c].status == "ok"]
    measured = pairwise_auc([scores[c].value or 0.0 for c in ok], [labels[c] for c in ok])
    base = [
        sys.executable, "-m", "ragmeter", "validity", run_id, "--labels", str(path),
        "--store", str(store), "--metric", "token_f1", "--gate",
    ]  # fmt: skip
    above = subprocess.run(
        [*base, "--floor", f"token_f1={measured + 0.01:.4f}"], capture_output=True, text=True
    )
    assert above.returncode == EXIT_GATE, above.stderr
    assert f"gate: token_f1: AUC {measured:.3f} is below its floor" in above.stderr
    below = subprocess.run(
        [*base, "--floor", f"token_f1={measured - 0.01:.4f}"], capture_output=True, text=True
    )
    assert below.returncode == 0, below.stderr
    assert "gate" not in below.stderr
    # a floor on a metric the run cannot measure fails the gate; on one it lacks, exit 2
    few = run(*base[3:], "--floor", "token_f1=0.1", "--min-cases", "100")
    assert few.exit_code == EXIT_GATE and "AUC not measured" in few.output
    unknown = run(*base[3:], "--floor", "nope=0.5")
    assert unknown.exit_code == EXIT_BAD_INPUT and "--floor nope: run" in unknown.output
    bare = run(*base[3:-1], "--gate")
    assert bare.exit_code == EXIT_BAD_INPUT and "name at least one" in bare.output


def test_bad_labels_files_are_input_errors(tmp_path: Path) -> None:
    store, run_id, _, _ = synthetic_run(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "item-00", "label": 1}\n{"case_id": "item-00", "label": 0}\n')
    result = run("validity", run_id, "--labels", str(bad), "--store", str(store))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "bad.jsonl:2: case_id: 'item-00' is labelled twice (first on line 1)" in result.output
    bad.write_text('{"case_id": "item-00", "label": 1}\nnot json\n')
    result = run("validity", run_id, "--labels", str(bad), "--store", str(store))
    assert result.exit_code == EXIT_BAD_INPUT and "bad.jsonl:2: not valid JSON" in result.output


# BEGIN: human attribution labels ---------------------------------------------------------------
BEGIN = DATASETS / "faithfulness" / "begin" / "begin_dev_wow.tsv"


@pytest.mark.skipif(not BEGIN.is_file(), reason="../shared/datasets (BEGIN dev) is not there")
def test_grounding_metrics_against_begin_human_labels(tmp_path: Path) -> None:
    """BEGIN dev (WoW): 430 responses that people judged fully attributable to the knowledge or
    not. The knowledge is replayed as the one retrieved chunk, the response as the answer."""
    with BEGIN.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    cases, replies, labels = [], [], {}
    for i, row in enumerate(rows):
        case_id = f"begin-{i:03d}"
        cases.append({"case_id": case_id, "question": row["message"].strip() or "(none)"})
        retrieved = [{"id": "knowledge", "text": row["knowledge"]}]
        replies.append(
            {"case_id": case_id, "response": {"answer": row["response"], "retrieved": retrieved}}
        )
        labels[case_id] = row["begin_label"] == "Fully attributable"
    store, run_id = evaluate(tmp_path, cases, replies, "grounding")
    path = tmp_path / "begin_labels.jsonl"
    path.write_text(
        "".join(json.dumps({"case_id": c, "label": y}) + "\n" for c, y in labels.items())
    )

    shown = run("validity", run_id, "--labels", str(path), "--store", str(store), "--json")
    report = {m["metric"]: m for m in json.loads(shown.output)["metrics"]}
    for metric in ("grounding_score", "claim_support_rate"):
        scores = stored_scores(store, run_id, metric)
        ok = [c for c in labels if scores[c].status == "ok"]
        values, truth = [scores[c].value or 0.0 for c in ok], [int(labels[c]) for c in ok]
        result = report[metric]
        assert (result["n_labelled"], result["n_scored"]) == (430, len(ok))
        assert result["n_skipped"] == sum(1 for c in labels if scores[c].status == "skipped")
        measured = pairwise_auc(values, truth)
        assert result["statistics"]["auc"]["value"] == pytest.approx(measured)
        assert measured > 0.75  # a grounding score worth the name separates them
        # claim_support_rate has the default target > 0.85: its threshold
        threshold = (0.85, ">") if metric == "claim_support_rate" else (0.5, ">=")
        assert (result["threshold"], result["threshold_op"]) == threshold
        passes = [int(v > 0.85 if metric == "claim_support_rate" else v >= 0.5) for v in values]
        kappa, balanced = kappa_and_balanced(passes, truth)
        assert result["statistics"]["kappa"]["value"] == pytest.approx(kappa)
        assert result["statistics"]["balanced_accuracy"]["value"] == pytest.approx(balanced)

    measured = report["grounding_score"]["statistics"]["auc"]["value"]
    gate = ("validity", run_id, "--labels", str(path), "--store", str(store), "--gate")
    assert run(*gate, "--floor", f"grounding_score={measured + 0.005}").exit_code == EXIT_GATE
    assert run(*gate, "--floor", f"grounding_score={measured - 0.005}").exit_code == 0
    assert "grounding_score" in run("show", run_id, "--store", str(store)).output


def test_a_detector_statistic_is_not_measured_as_a_per_case_score(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    made = run("eval", "--store", str(store), "--metrics", "injection", "--no-progress")
    assert made.exit_code == 0, made.output
    run_store = RunStore(store, create=False)
    (run_id,) = [row[0] for row in run_store.db.execute("SELECT id FROM runs")]
    case_ids = [row[0] for row in run_store.db.execute("SELECT case_id FROM cases")]
    run_store.close()
    path = write_labels(tmp_path / "labels.jsonl", {c: i % 2 for i, c in enumerate(case_ids)})
    shown = run(
        "validity", run_id, "--labels", str(path), "--store", str(store), "--json",
        "--metric", "injection_auc",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    (result,) = json.loads(shown.output)["metrics"]
    # its run's target (> 0.85 on the AUC) is not a threshold on a case's detector score
    assert (result["metric"], result["measured"], result["threshold"]) == (
        "injection_auc",
        False,
        None,
    )
    assert "run-level statistic (auc)" in result["reason"]
    gated = run(
        "validity", run_id, "--labels", str(path), "--store", str(store),
        "--metric", "injection_auc", "--gate", "--floor", "injection_auc=0.6",
    )  # fmt: skip
    assert gated.exit_code == 4, gated.output
