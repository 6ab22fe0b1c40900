"""The optional NLI model of the grounding metrics (``grounding_model: nli:PATH``), tested on
tiny randomly initialised ONNX models built here: loading, the entailment label, the
probabilities against numpy, batching, the metrics' details, failures, and the CLI."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.config import ConfigError, load_config
from ragmeter.errors import InputError
from ragmeter.metrics.base import MetricSettings, score_case
from ragmeter.metrics.grounding import assess, build_context, grounding_metrics
from ragmeter.metrics.grounding.nli import (
    BATCH_SIZE,
    CachedNli,
    NliModelError,
    OnnxNliScorer,
    apply_nli,
    check_grounding_model,
    claim_windows,
    load_scorer,
)
from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
from ragmeter.store.sqlite import RunStore

onnx = pytest.importorskip("onnx")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("onnxruntime")

WORDS = [
    "employees", "receive", "15", "days", "of", "paid", "vacation", "per", "year", "accrues",
    "monthly", "the", "company", "employs", "1,000", "people", "and", "spent", "on", "training",
    "is", "a", "are", "no", "sick", "leave", "office", "open", "weekends", "closed",
]  # fmt: skip
DIM = 8
MNLI = {"0": "contradiction", "1": "neutral", "2": "entailment"}


class TinyModel:
    """Embedding lookup (+ token type) -> masked mean pool -> linear to ``labels`` logits, as
    ONNX and as numpy, with a WordLevel ``[CLS] A [SEP] B [SEP]`` tokenizer."""

    def __init__(self, labels: int = 3, seed: int = 0, token_types: bool = True) -> None:
        rng = np.random.default_rng(seed)
        self.vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
        self.embedding = rng.normal(size=(len(self.vocab), DIM)).astype(np.float32)
        self.types = rng.normal(size=(2, DIM)).astype(np.float32)
        self.weight = rng.normal(size=(DIM, labels)).astype(np.float32)
        self.bias = rng.normal(size=(labels,)).astype(np.float32)
        self.token_types = token_types
        self.tokenizer = self._tokenizer()

    def _tokenizer(self) -> Any:
        tk = tokenizers
        tokenizer = tk.Tokenizer(tk.models.WordLevel(self.vocab, unk_token="[UNK]"))
        tokenizer.normalizer = tk.normalizers.Lowercase()
        tokenizer.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
        tokenizer.post_processor = tk.processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
        )
        return tokenizer

    def graph(self) -> Any:
        h, tp = onnx.helper, onnx.TensorProto
        inits = [
            onnx.numpy_helper.from_array(self.embedding, "embedding"),
            onnx.numpy_helper.from_array(self.types, "types"),
            onnx.numpy_helper.from_array(self.weight, "weight"),
            onnx.numpy_helper.from_array(self.bias, "bias"),
            onnx.numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
            onnx.numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        ]
        nodes = [h.make_node("Gather", ["embedding", "input_ids"], ["tokens"])]
        inputs = [h.make_tensor_value_info("input_ids", tp.INT64, ["batch", "length"])]
        hidden = "tokens"
        if self.token_types:
            nodes += [
                h.make_node("Gather", ["types", "token_type_ids"], ["typed"]),
                h.make_node("Add", ["tokens", "typed"], ["hidden"]),
            ]
            inputs.append(h.make_tensor_value_info("token_type_ids", tp.INT64, ["batch", "length"]))
            hidden = "hidden"
        inputs.append(h.make_tensor_value_info("attention_mask", tp.INT64, ["batch", "length"]))
        nodes += [
            h.make_node("Cast", ["attention_mask"], ["maskf"], to=tp.FLOAT),
            h.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
            h.make_node("Mul", [hidden, "mask3"], ["masked"]),
            h.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
            h.make_node("ReduceSum", ["mask3", "axis1"], ["count"], keepdims=0),
            h.make_node("Div", ["summed", "count"], ["pooled"]),
            h.make_node("MatMul", ["pooled", "weight"], ["projected"]),
            h.make_node("Add", ["projected", "bias"], ["logits"]),
        ]
        output = h.make_tensor_value_info("logits", tp.FLOAT, ["batch", self.weight.shape[1]])
        graph = h.make_graph(nodes, "tiny_nli", inputs, [output], inits)
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model

    def save(self, folder: Path, id2label: dict[str, str] | None = MNLI, **settings: Any) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(self.graph(), str(folder / "model.onnx"))
        self.tokenizer.save(str(folder / "tokenizer.json"))
        if id2label is not None:
            (folder / "config.json").write_text(json.dumps({"id2label": id2label}))
        if settings:
            (folder / "ragmeter.json").write_text(json.dumps(settings))
        return folder

    def logits(self, premise: str, hypothesis: str) -> np.ndarray:
        """The model by hand: numpy on the same weights and token ids."""
        encoding = self.tokenizer.encode(premise, hypothesis)
        hidden = self.embedding[encoding.ids].astype(np.float64)
        if self.token_types:
            hidden = hidden + self.types[encoding.type_ids]
        pooled = hidden.mean(axis=0)
        result: np.ndarray = pooled @ self.weight + self.bias
        return result


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    result: np.ndarray = e / e.sum()
    return result


PAIRS = [
    ("Employees receive 15 days of paid vacation per year.", "Employees get 15 days."),
    ("The office is closed on weekends.", "The office is open on weekends."),
    ("The company employs 1,000 people.", "Vacation accrues monthly."),
    ("no sick leave", "sick leave is paid"),
]


@pytest.mark.parametrize(
    "id2label,index",
    [
        (MNLI, 2),
        ({"0": "ENTAILMENT", "1": "NEUTRAL", "2": "CONTRADICTION"}, 0),
        ({"0": "neutral", "1": "Entailment", "2": "contradiction"}, 1),
    ],
)
def test_probabilities_equal_numpy_at_the_configured_label(
    tmp_path: Path, id2label: dict[str, str], index: int
) -> None:
    model = TinyModel()
    scorer = OnnxNliScorer(model.save(tmp_path / "m", id2label))
    assert scorer.index == index
    assert repr(id2label[str(index)]) in scorer.description
    values = scorer.entailment([p for p, _ in PAIRS], [h for _, h in PAIRS])
    expected = [softmax(model.logits(p, h))[index] for p, h in PAIRS]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == pytest.approx(expected, abs=1e-6)
    assert len(set(np.round(values, 6))) == len(PAIRS)  # the pairs really differ


def test_token_types_reach_the_model(tmp_path: Path) -> None:
    """The hypothesis is the second segment: swapping premise and hypothesis changes the value
    (token type embeddings), exactly as numpy says."""
    model = TinyModel()
    scorer = OnnxNliScorer(model.save(tmp_path / "m"))
    premise, hypothesis = PAIRS[0]
    forward, backward = scorer.entailment([premise, hypothesis], [hypothesis, premise])
    assert forward != pytest.approx(backward, abs=1e-4)
    assert backward == pytest.approx(softmax(model.logits(hypothesis, premise))[2], abs=1e-6)


def test_single_logit_head_is_a_sigmoid_and_a_binary_head_uses_label_1(tmp_path: Path) -> None:
    hhem = TinyModel(labels=1, token_types=False)
    scorer = OnnxNliScorer(hhem.save(tmp_path / "hhem", id2label=None))
    values = scorer.entailment([p for p, _ in PAIRS], [h for _, h in PAIRS])
    expected = [1 / (1 + np.exp(-hhem.logits(p, h)[0])) for p, h in PAIRS]
    assert values == pytest.approx(expected, abs=1e-6)
    binary = TinyModel(labels=2, seed=1)
    labels = {"0": "LABEL_0", "1": "LABEL_1"}
    scorer = OnnxNliScorer(binary.save(tmp_path / "binary", labels))
    assert scorer.index == 1
    (value,) = scorer.entailment([PAIRS[0][0]], [PAIRS[0][1]])
    assert value == pytest.approx(softmax(binary.logits(*PAIRS[0]))[1], abs=1e-6)


def test_batching_gives_the_one_by_one_values(tmp_path: Path) -> None:
    scorer = OnnxNliScorer(TinyModel(seed=3).save(tmp_path / "m"))
    rng = np.random.default_rng(7)
    premises = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) for _ in range(50)]
    hypotheses = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(50)]
    assert len(premises) > 2 * BATCH_SIZE
    together = scorer.entailment(premises, hypotheses)
    alone = [scorer.entailment([p], [h])[0] for p, h in zip(premises, hypotheses, strict=True)]
    assert together == pytest.approx(alone, abs=1e-6)


def test_the_entailment_label_must_be_known_or_named(tmp_path: Path) -> None:
    model = TinyModel()
    unnamed = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    with pytest.raises(NliModelError, match=r"ragmeter\.json.*entailment_label") as caught:
        OnnxNliScorer(model.save(tmp_path / "a", unnamed))
    assert str(tmp_path / "a") in str(caught.value)
    named = OnnxNliScorer(model.save(tmp_path / "b", unnamed, entailment_label="LABEL_0"))
    assert named.index == 0
    by_index = OnnxNliScorer(model.save(tmp_path / "c", None, entailment_label=1))
    assert by_index.index == 1
    (value,) = by_index.entailment(["no sick leave"], ["sick leave"])
    assert value == pytest.approx(softmax(model.logits("no sick leave", "sick leave"))[1], abs=1e-6)
    with pytest.raises(NliModelError, match="names 2 labels but the model gives 3"):
        OnnxNliScorer(model.save(tmp_path / "d", {"0": "a", "1": "entailment"}))


def test_a_template_makes_the_pair_one_text(tmp_path: Path) -> None:
    model = TinyModel()
    folder = model.save(tmp_path / "m", template="{premise} [SEP] {hypothesis}")
    (value,) = OnnxNliScorer(folder).entailment(["paid vacation"], ["15 days"])
    encoding = model.tokenizer.encode("paid vacation [SEP] 15 days")
    hidden = model.embedding[encoding.ids] + model.types[encoding.type_ids]
    logits = hidden.astype(np.float64).mean(axis=0) @ model.weight + model.bias
    assert value == pytest.approx(softmax(logits)[2], abs=1e-6)


def test_bad_paths_fail_naming_the_path_and_the_expected_files(tmp_path: Path) -> None:
    expected = "model.onnx and tokenizer.json"
    missing = tmp_path / "nowhere"
    with pytest.raises(NliModelError, match="no such folder") as caught:
        check_grounding_model(f"nli:{missing}")
    assert str(missing) in str(caught.value) and expected in str(caught.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("weights go here")
    with pytest.raises(NliModelError, match=r"no usable model.*found: README\.md") as caught:
        check_grounding_model(f"nli:{empty}")
    assert expected in str(caught.value)
    half = TinyModel().save(tmp_path / "half")
    (half / "tokenizer.json").unlink()
    with pytest.raises(NliModelError, match=r"model\.onnx without tokenizer\.json"):
        check_grounding_model(f"nli:{half}")
    broken = TinyModel().save(tmp_path / "broken")
    (broken / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(NliModelError, match=r"onnxruntime cannot load model\.onnx"):
        check_grounding_model(f"nli:{broken}")
    check_grounding_model("auto")  # not an NLI model: nothing to check
    with pytest.raises(ConfigError, match="nli:PATH"):
        load_config(None, overrides={"grounding_model": "nli:"})
    with pytest.raises(ValueError, match="not one of auto, lexical, nli:PATH"):
        MetricSettings(grounding_model="nli")


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is not None, reason="transformers is installed"
)
def test_a_transformers_folder_without_transformers_says_how_to_install_it(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "deberta"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"id2label": MNLI}))
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(NliModelError, match=r"'transformers'.*pip install transformers torch"):
        load_scorer(f"nli:{folder}")


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None,
    reason="transformers and torch are not installed",
)
def test_a_transformers_folder_scores_pairs(tmp_path: Path) -> None:  # pragma: no cover
    import transformers

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]))
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(vocab))
    config = transformers.BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, num_labels=3, id2label={0: "contradiction", 1: "neutral",
        2: "entailment"}, label2id={"contradiction": 0, "neutral": 1, "entailment": 2},
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    scorer = load_scorer(f"nli:{tmp_path / 'bert'}")
    values = scorer.entailment([p for p, _ in PAIRS], [h for _, h in PAIRS])
    assert len(values) == len(PAIRS) and all(0 <= v <= 1 for v in values)


# --- claims, windows and the metrics ------------------------------------------------------------

CONTEXT = [
    "The office opens at nine. Employees receive 15 days of paid vacation per year. "
    "Vacation accrues monthly. The cafeteria serves lunch.",
    "Sick leave is unlimited. The company employs 1,000 people.",
]


def test_claim_windows_centre_on_the_best_sentences() -> None:
    context = build_context(CONTEXT)
    sentences = context.sentences
    windows = claim_windows("Employees receive 15 days of vacation.", 1, context)
    assert windows[0] == " ".join(sentences[0:3])
    assert all(len(w) for w in windows) and len(windows) <= 3
    # the best sentence is the last one: one neighbour before it only
    assert claim_windows("The company employs 1,000 people.", 5, context)[0] == " ".join(
        sentences[4:6]
    )
    assert claim_windows("Anything.", None, build_context([])) == []
    assert claim_windows("Zebras sing.", None, context) == [" ".join(sentences[0:2])]


class FixedScorer:
    """Entailment by hypothesis (the claim), whatever the window: records what it was asked."""

    description = "fixed test scorer"

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values
        self.asked: list[tuple[str, str]] = []

    def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
        self.asked.extend(zip(premises, hypotheses, strict=True))
        return [self.values.get(h, 0.0) for h in hypotheses]


def test_apply_nli_sets_support_verdicts_and_the_term_weighted_mean() -> None:
    answer = (
        "Employees receive 15 days of paid vacation. Staff might get a bonus. "
        "Generally lunch is served."
    )
    assessment = assess(answer, CONTEXT)
    assert [c.type for c in assessment.claims] == ["assertion", "inference", "general"]
    texts = [c.text for c in assessment.claims]
    scorer = FixedScorer({texts[0]: 0.9, texts[1]: 0.3, texts[2]: 0.8})
    apply_nli(assessment, scorer)
    claims = assessment.claims
    assert [c.model_support for c in claims] == [0.9, 0.3, 0.8]
    assert [c.support for c in claims] == [0.9, 0.3, 0.8]
    assert [c.supported for c in claims] == [True, False, None]  # threshold 0.5; general: none
    weights = [max(c.signals.n_terms, 1) for c in claims[:2]]
    expected = (weights[0] * 0.9 + weights[1] * 0.3) / sum(weights)
    assert assessment.model_score == pytest.approx(expected)
    assert assessment.score == assessment.model_score and assessment.score_model == "nli"
    details = assessment.details()
    assert details["score_model"] == "nli"
    assert [c["model_support"] for c in details["claims"]] == [0.9, 0.3, 0.8]
    assert details["unsupported_claims"] == [texts[1]]
    # every window asked for a claim is one of its claim_windows
    for verdict in claims:
        windows = claim_windows(verdict.text, verdict.signals.best_sentence, assessment.context)
        assert {p for p, h in scorer.asked if h == verdict.text} == set(windows)


def test_a_claim_keeps_its_best_window() -> None:
    assessment = assess("The office opens at nine for the 1,000 people of the company.", CONTEXT)
    windows = claim_windows(
        assessment.claims[0].text, assessment.claims[0].signals.best_sentence, assessment.context
    )
    assert len(windows) >= 2

    class ByWindow(FixedScorer):
        def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
            return [0.7 if p == windows[-1] else 0.1 for p in premises]

    apply_nli(assessment, ByWindow({}))
    assert assessment.claims[0].model_support == 0.7 and assessment.model_score == 0.7


def case_result(answer: str, contexts: list[str], case_id: str = "c1") -> tuple[Case, CaseResult]:
    chunks = [RetrievedChunk(id=f"k{i}", text=t) for i, t in enumerate(contexts)]
    response = Response(answer=answer, retrieved=chunks)
    case = Case(case_id=case_id, question="How much vacation do I get?")
    return case, CaseResult(case_id=case_id, status="ok", response=response)


def test_the_metrics_report_the_nli_model_per_claim(tmp_path: Path) -> None:
    folder = TinyModel(seed=5).save(tmp_path / "m")
    metrics = grounding_metrics(MetricSettings(grounding_model=f"nli:{folder}"))
    answers = [
        "Employees receive 15 days of paid vacation per year. Vacation accrues monthly.",
        "The company employs 1,000 people. The cafeteria serves lunch.",
        "Sick leave is unlimited. Employees receive 20 days of vacation.",
    ]
    pairs = [case_result(a, CONTEXT, f"c{i}") for i, a in enumerate(answers)]
    prepare = metrics[0].prepare
    assert prepare is not None
    prepare([(c, r.response) for c, r in pairs if r.response is not None])
    state = prepare.__self__  # type: ignore[attr-defined]
    scored = state.nli().scored
    assert scored > len(answers)  # every claim's windows, in one batched call
    reference = load_scorer(f"nli:{folder}")
    for case, result in pairs:
        scores = {m.name: score_case(m, case, result) for m in metrics}
        grounding = scores["grounding_score"]
        assert grounding.status == "ok", grounding.reason
        assert grounding.details["score_model"] == "nli"
        assessment = assess(result.response.answer, CONTEXT)  # type: ignore[union-attr]
        expected = []
        for claim, shown in zip(assessment.claims, grounding.details["claims"], strict=True):
            windows = claim_windows(claim.text, claim.signals.best_sentence, assessment.context)
            value = max(reference.entailment(windows, [claim.text] * len(windows)))
            assert shown["model_support"] == pytest.approx(value, abs=1e-4)
            expected.append(value)
        rate = scores["claim_support_rate"]
        assert rate.value == pytest.approx(sum(v >= 0.5 for v in expected) / len(expected))
        assert scores["unsupported_claim_count"].value == sum(v < 0.5 for v in expected)
        assert any("claims scored by nli:" in n for n in grounding.details["notes"])
    assert state.nli().scored == scored  # scoring reused the batch, asked the model nothing


def test_a_model_that_fails_at_run_time_fails_the_claim_metrics(tmp_path: Path) -> None:
    folder = TinyModel().save(tmp_path / "m")
    (folder / "model.onnx").write_bytes(b"corrupt")
    metrics = grounding_metrics(MetricSettings(grounding_model=f"nli:{folder}"))
    case, result = case_result("Employees receive 15 days of paid vacation.", CONTEXT)
    scores = {m.name: score_case(m, case, result) for m in metrics}
    for name in ("claim_support_rate", "unsupported_claim_count", "grounding_score"):
        assert scores[name].status == "failed" and scores[name].value is None
        assert str(folder) in (scores[name].reason or "")
        assert "onnxruntime cannot load model.onnx" in (scores[name].reason or "")
        assert scores[name].details["grounding_model"] == f"nli:{folder}"
    assert scores["numeric_fabrication_count"].status == "ok"  # numbers need no model


def test_the_cached_scorer_checks_what_the_model_returns() -> None:
    class Bad(FixedScorer):
        def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
            return [float("nan")] * len(premises)

    with pytest.raises(NliModelError, match="non-probabilities"):
        CachedNli(Bad({})).entailment(["a"], ["b"])
    cached = CachedNli(FixedScorer({"b": 0.4}), max_pairs=2)
    assert cached.entailment(["a", "a", "c"], ["b", "b", "b"]) == [0.4, 0.4, 0.4]
    assert cached.scored == 2
    assert isinstance(NliModelError("x"), InputError)


# --- the command line ---------------------------------------------------------------------------


def ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_eval_with_an_nli_model_stores_nli_scores(tmp_path: Path) -> None:
    folder = TinyModel(seed=2).save(tmp_path / "model")
    (tmp_path / "run.yaml").write_text(f"grounding_model: nli:{folder}\n")
    done = ragmeter(
        "eval", "--config", "run.yaml", "--samples", "4", "--metrics", "grounding",
        "--no-progress", "--store", "s.db", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    store = RunStore(str(tmp_path / "s.db"))
    (record,) = store.list_runs()
    assert store.get_run(record.id).config["grounding_model"] == f"nli:{folder}"
    scored = [s for s in store.get_scores(record.id) if s.metric == "grounding_score"]
    assert scored and all(s.status in ("ok", "skipped") for s in scored)
    ok = [s for s in scored if s.status == "ok"]
    assert ok and all(s.details["score_model"] == "nli" for s in ok)
    assert all(c["model_support"] is not None for s in ok for c in s.details["claims"])
    store.close()


def test_eval_with_a_missing_model_fails_before_the_first_question(tmp_path: Path) -> None:
    missing = tmp_path / "no-model-here"
    (tmp_path / "run.yaml").write_text(f"grounding_model: nli:{missing}\n")
    done = ragmeter(
        "eval", "--config", "run.yaml", "--samples", "2", "--no-progress", "--store", "s.db",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert str(missing) in output and "model.onnx and tokenizer.json" in output
    assert not (tmp_path / "s.db").exists() or not RunStore(str(tmp_path / "s.db")).list_runs()
