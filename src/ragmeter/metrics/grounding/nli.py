"""An optional NLI / cross-encoder model for the grounding metrics (``grounding_model:
nli:PATH``).

PATH is a local folder the user provides (no package ships such weights), in one of two forms:

* **ONNX** (run with onnxruntime and tokenizers, the ``semantic`` extra): ``model.onnx`` (inputs
  ``input_ids``, ``attention_mask`` and optionally ``token_type_ids``; first output the logits,
  shape ``(batch, labels)``) and ``tokenizer.json``, usually with ``config.json``;
* **transformers**: ``config.json`` and ``model.safetensors`` or ``pytorch_model.bin`` with its
  tokenizer files, run through ``transformers`` and ``torch`` (imported only then).

The entailment probability of a (premise, hypothesis) pair is the softmax of the logits at the
entailment label, found in ``config.json``'s ``id2label`` (a label named "entailment",
"consistent", "supported", ...); a two-label head without such a name uses label 1; a single
logit (a "consistent" head such as HHEM's) goes through a sigmoid. An optional
``ragmeter.json`` in the folder can name the label (``"entailment_label": "ENTAILMENT"`` or an
index), a ``"template"`` with ``{premise}`` and ``{hypothesis}`` (the pair is then one text),
and ``"max_tokens"``.

``apply_nli`` scores each claim of an ``Assessment`` against its best context windows (the
best sentence with one neighbour each side, and up to ``TOP_WINDOWS`` windows around the
sentences sharing the most terms with the claim): the claim's ``model_support`` and ``support``
are the highest entailment probability, a checked claim is supported at
``ENTAILMENT_THRESHOLD`` (0.5), and ``model_score`` (``grounding_score``, ``score_model``
"nli") is the term-weighted mean over the checked claims (over all claims when none is
checked). docs/grounding.md tells how to point ragmeter at a model.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ragmeter.config import NLI_PREFIX
from ragmeter.errors import InputError
from ragmeter.metrics.grounding.assessment import Assessment, ClaimVerdict
from ragmeter.metrics.grounding.features import Context, terms

ENTAILMENT_THRESHOLD = 0.5  # a checked claim is supported when its entailment reaches this
WINDOW_NEIGHBOURS = 1  # context sentences on each side of a window's centre sentence
TOP_WINDOWS = 3  # windows scored per claim (the best sentence's first); the claim keeps the max
MAX_TOKENS = 512  # a pair longer than this is cut (the longer side first)
BATCH_SIZE = 16
MAX_BATCH_TOKENS = 8192  # padded positions per forward pass
SETTINGS_FILE = "ragmeter.json"
ONNX_FILES = ("model.onnx", "tokenizer.json")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TRANSFORMERS_HINT = "pip install transformers torch"
EXPECTED = (
    "expected a folder holding either model.onnx and tokenizer.json (and config.json with "
    "id2label), run with onnxruntime, or a transformers model: config.json and "
    "model.safetensors or pytorch_model.bin with its tokenizer files (docs/grounding.md)"
)
# label names read as "the premise supports the hypothesis" (lower case, "-" and " " as "_")
POSITIVE_LABELS = frozenset(
    {"entailment", "entail", "entailed", "entails", "consistent", "supported", "support",
     "factual", "faithful", "grounded", "attributable"}
)  # fmt: skip

FloatArray = npt.NDArray[np.float64]


class NliModelError(InputError):
    """The NLI model of ``grounding_model: nli:PATH`` is missing, incomplete or unusable
    (``details``: what a failed score records)."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class NliScorer(Protocol):
    description: str

    def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
        """P(premise entails hypothesis) for each pair, in input order."""
        ...


def model_folder(spec: str) -> Path:
    """The folder of ``nli:PATH`` (relative to the working directory), checked to hold a model
    of a known form; the error names the path and the files expected."""
    path = Path(spec[len(NLI_PREFIX) :].strip() if spec.startswith(NLI_PREFIX) else spec)
    where = f"grounding_model nli:{path}"
    if not path.exists():
        raise NliModelError(f"{where}: no such folder {str(path)!r}; {EXPECTED}")
    if not path.is_dir():
        raise NliModelError(f"{where}: {str(path)!r} is not a folder; {EXPECTED}")
    model_format(path)
    return path


def model_format(folder: Path) -> Literal["onnx", "transformers"]:
    names = {p.name for p in folder.iterdir()}
    where = f"grounding_model nli:{folder}"
    if "model.onnx" in names:
        missing = [n for n in ONNX_FILES if n not in names]
        if missing:
            raise NliModelError(f"{where}: model.onnx without {', '.join(missing)}; {EXPECTED}")
        return "onnx"
    weights = [n for n in names if n in WEIGHT_FILES or n.endswith(".index.json")]
    if "config.json" in names and weights:
        return "transformers"
    found = ", ".join(sorted(names)[:12]) or "nothing"
    raise NliModelError(f"{where}: no usable model in {str(folder)!r} (found: {found}); {EXPECTED}")


def _read_json(path: Path, where: str) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise NliModelError(f"{where}: cannot read {path.name}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise NliModelError(f"{where}: {path.name} must hold a JSON object")
    return loaded


def labels_of(config: dict[str, Any]) -> list[str] | None:
    """``config.json``'s ``id2label`` as a list by index (None without one)."""
    raw = config.get("id2label")
    if not isinstance(raw, dict) or not raw:
        return None
    by_index = {int(k): str(v) for k, v in raw.items()}
    return [by_index.get(i, f"LABEL_{i}") for i in range(max(by_index) + 1)]


def entailment_index(
    labels: list[str] | None, n_outputs: int, chosen: str | int | None, where: str
) -> int:
    """Which output is entailment: ``chosen`` (``ragmeter.json``), else the label named like
    one (``POSITIVE_LABELS``), else 1 for a two-label head; 0 for a single logit."""
    if labels is not None and len(labels) != n_outputs and n_outputs > 1:
        raise NliModelError(
            f"{where}: config.json names {len(labels)} labels but the model gives {n_outputs}"
        )
    names = labels or [f"LABEL_{i}" for i in range(n_outputs)]
    if isinstance(chosen, int) and not isinstance(chosen, bool):
        if 0 <= chosen < n_outputs:
            return chosen
        raise NliModelError(f"{where}: entailment_label {chosen} is not an output of the model")
    if isinstance(chosen, str):
        folded = [n.lower() for n in names]
        if chosen.lower() in folded:
            return folded.index(chosen.lower())
        raise NliModelError(f"{where}: entailment_label {chosen!r} is not one of {names}")
    if n_outputs == 1:
        return 0
    matches = [
        i for i, n in enumerate(names) if n.lower().replace("-", "_").replace(" ", "_").strip()
        in POSITIVE_LABELS
    ]  # fmt: skip
    if len(matches) == 1:
        return matches[0]
    if n_outputs == 2:
        return 1
    raise NliModelError(
        f"{where}: cannot tell which of the labels {names} is entailment; give config.json an "
        f'id2label or name it in {SETTINGS_FILE}: {{"entailment_label": "..."}}'
    )


def probabilities(logits: npt.ArrayLike, index: int) -> FloatArray:
    """The entailment probability per row: sigmoid of a single logit, else softmax at
    ``index``."""
    values = np.asarray(logits, dtype=np.float64)
    if values.ndim != 2:
        raise NliModelError(f"the model's logits have shape {values.shape}, not (batch, labels)")
    if values.shape[1] == 1:
        result: FloatArray = 1.0 / (1.0 + np.exp(-values[:, 0]))
        return result
    shifted = np.exp(values - values.max(axis=1, keepdims=True))
    result = shifted[:, index] / shifted.sum(axis=1)
    return result


def filled(template: str, premises: list[str], hypotheses: list[str]) -> list[str]:
    """Each pair as one text (``ragmeter.json``'s ``template``, e.g. HHEM-2.1's prompt)."""
    return [
        template.replace("{premise}", p).replace("{hypothesis}", h)
        for p, h in zip(premises, hypotheses, strict=True)
    ]


def _require(module: str, purpose: str, hint: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise NliModelError(
            f"{purpose} needs the Python package {module!r}, which is not installed "
            f"({type(exc).__name__}: {exc}); install it with: {hint}"
        ) from exc


class OnnxNliScorer:
    """A sequence-pair classifier exported to ONNX, with its ``tokenizer.json``."""

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        where = f"grounding_model nli:{folder}"
        purpose = f"the NLI model {str(folder)!r} (ONNX)"
        hint = "pip install 'ragmeter[semantic]'"
        ort = _require("onnxruntime", purpose, hint)
        tokenizers = _require("tokenizers", purpose, hint)
        config = _read_json(folder / "config.json", where)
        settings = _read_json(folder / SETTINGS_FILE, where)
        self.template: str | None = settings.get("template")
        try:
            self._tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:
            raise NliModelError(f"{where}: cannot read tokenizer.json: {exc}") from exc
        padding = self._tokenizer.padding
        pad = padding["pad_id"] if padding else config.get("pad_token_id")
        self._pad_id = int(pad) if isinstance(pad, int) else 0
        limit = settings.get("max_tokens", config.get("max_position_embeddings", MAX_TOKENS))
        self.max_tokens = min(int(limit), MAX_TOKENS)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_tokens, strategy="longest_first")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise NliModelError(f"{where}: onnxruntime cannot load model.onnx: {exc}") from exc
        inputs = {i.name for i in self._session.get_inputs()}
        unknown = inputs - {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in inputs or unknown:
            raise NliModelError(
                f"{where}: model.onnx takes {sorted(inputs)}; expected input_ids, attention_mask "
                "and optionally token_type_ids"
            )
        self._inputs = inputs
        self._output = self._session.get_outputs()[0].name
        try:  # one pair through the model: its label count, and that it runs at all
            n_outputs = int(self._logits([self._encode(["a"], ["b"])[0]]).shape[1])
        except NliModelError:
            raise
        except Exception as exc:
            raise NliModelError(f"{where}: model.onnx fails on a test pair: {exc}") from exc
        labels = labels_of(config)
        self.index = entailment_index(labels, n_outputs, settings.get("entailment_label"), where)
        label = (labels or [])[self.index] if labels and n_outputs > 1 else None
        self.description = f"nli:{folder} (ONNX, " + (
            f"entailment label {label!r})" if label else f"output {self.index} of {n_outputs})"
        )

    def _encode(self, premises: list[str], hypotheses: list[str]) -> list[Any]:
        if self.template:
            return list(self._tokenizer.encode_batch(filled(self.template, premises, hypotheses)))
        return list(self._tokenizer.encode_batch(list(zip(premises, hypotheses, strict=True))))

    def _logits(self, encodings: list[Any]) -> FloatArray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
            types[row, : len(encoding.ids)] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (logits,) = self._session.run([self._output], {k: feeds[k] for k in self._inputs})
        return np.asarray(logits, dtype=np.float64)

    def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
        if not premises:
            return []
        encodings = self._encode(premises, hypotheses)
        result = np.zeros(len(encodings), dtype=np.float64)
        batch: list[int] = []
        # shortest first, so a batch's rows have similar lengths and little padding
        for index in sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids)):
            width = len(encodings[index].ids)
            if batch and (len(batch) >= BATCH_SIZE or (len(batch) + 1) * width > MAX_BATCH_TOKENS):
                result[batch] = probabilities(
                    self._logits([encodings[i] for i in batch]), self.index
                )
                batch = []
            batch.append(index)
        result[batch] = probabilities(self._logits([encodings[i] for i in batch]), self.index)
        return [float(v) for v in result]


class TransformersNliScorer:
    """A sequence-pair classifier in a transformers folder, run with torch on the CPU."""

    def __init__(self, folder: Path) -> None:
        where = f"grounding_model nli:{folder}"
        purpose = f"the NLI model {str(folder)!r} (a transformers folder)"
        transformers = _require("transformers", purpose, TRANSFORMERS_HINT)
        self._torch = _require("torch", purpose, TRANSFORMERS_HINT)
        settings = _read_json(folder / SETTINGS_FILE, where)
        self.template: str | None = settings.get("template")
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
            self._model = transformers.AutoModelForSequenceClassification.from_pretrained(
                str(folder)
            ).eval()
        except Exception as exc:
            raise NliModelError(f"{where}: transformers cannot load it: {exc}") from exc
        config = self._model.config
        n_outputs = int(config.num_labels)
        labels = [str(config.id2label[i]) for i in range(n_outputs)]
        self.index = entailment_index(labels, n_outputs, settings.get("entailment_label"), where)
        self.max_tokens = min(int(settings.get("max_tokens", MAX_TOKENS)), MAX_TOKENS)
        self.description = f"nli:{folder} (transformers, entailment label {labels[self.index]!r})"

    def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
        values: list[float] = []
        for start in range(0, len(premises), BATCH_SIZE):
            p, h = premises[start : start + BATCH_SIZE], hypotheses[start : start + BATCH_SIZE]
            texts = (filled(self.template, p, h),) if self.template else (p, h)
            limit = self.max_tokens
            encoded = self._tokenizer(
                *texts, return_tensors="pt", truncation=True, padding=True, max_length=limit
            )
            with self._torch.no_grad():
                logits = self._model(**encoded).logits.float().numpy()
            values.extend(float(v) for v in probabilities(logits, self.index))
        return values


_LOADED: dict[tuple[str, int], NliScorer] = {}
_LOAD_LOCK = threading.Lock()


def load_scorer(spec: str) -> NliScorer:
    """The scorer of ``nli:PATH``, loaded once per process (again if its files change)."""
    folder = model_folder(spec)
    form = model_format(folder)
    stamp = max(p.stat().st_mtime_ns for p in folder.iterdir())
    key = (str(folder.resolve()), stamp)
    with _LOAD_LOCK:
        if key not in _LOADED:
            scorer: NliScorer = (
                OnnxNliScorer(folder) if form == "onnx" else TransformersNliScorer(folder)
            )
            if len(_LOADED) >= 4:
                _LOADED.clear()
            _LOADED[key] = scorer
        return _LOADED[key]


def check_grounding_model(spec: str) -> None:
    """Before the first question: an ``nli:PATH`` model must load and run on a test pair."""
    if spec.startswith(NLI_PREFIX):
        load_scorer(spec)


class CachedNli:
    """Each distinct (premise, hypothesis) pair is scored once; the values are checked to be
    probabilities. At most ``max_pairs`` values are kept."""

    def __init__(self, inner: NliScorer, max_pairs: int = 200_000) -> None:
        self.inner = inner
        self.description = inner.description
        self.max_pairs = max_pairs
        self._values: dict[tuple[str, str], float] = {}
        self.scored = 0  # pairs sent to the model

    def entailment(self, premises: list[str], hypotheses: list[str]) -> list[float]:
        keys = list(zip(premises, hypotheses, strict=True))
        missing = [k for k in dict.fromkeys(keys) if k not in self._values]
        fresh: dict[tuple[str, str], float] = {}
        if missing:
            values = self.inner.entailment([k[0] for k in missing], [k[1] for k in missing])
            if len(values) != len(missing):
                raise NliModelError(
                    f"{self.description} gave {len(values)} values for {len(missing)} pairs"
                )
            bad = [v for v in values if not (math.isfinite(v) and -1e-6 <= v <= 1 + 1e-6)]
            if bad:
                raise NliModelError(f"{self.description} gave non-probabilities, e.g. {bad[0]!r}")
            fresh = {k: min(1.0, max(0.0, v)) for k, v in zip(missing, values, strict=True)}
            self.scored += len(missing)
            if len(self._values) + len(fresh) > self.max_pairs:
                self._values.clear()
            self._values.update(fresh)
        return [fresh[k] if k in fresh else self._values[k] for k in keys]


def claim_windows(
    claim: str, best: int | None, context: Context, top: int = TOP_WINDOWS
) -> list[str]:
    """The premises a claim is scored against: windows of ``WINDOW_NEIGHBOURS`` sentences each
    side around its best sentence, then around the sentences sharing the most terms with it
    (earliest first on a tie), skipping centres inside a window already taken; the context's
    first window when nothing is shared. None for an empty context."""
    if not context.sentences:
        return []
    hits: Counter[int] = Counter()
    for term in set(terms(claim)) & context.terms:
        hits.update(context.index.get(term, ()))
    ranked = sorted(hits, key=lambda i: (-hits[i], i))
    centres: list[int] = []
    for index in [best, *ranked] if best is not None else ranked or [0]:
        if index is None or any(abs(index - c) <= WINDOW_NEIGHBOURS for c in centres):
            continue
        centres.append(index)
        if len(centres) == top:
            break
    n = len(context.sentences)
    return [
        " ".join(
            context.sentences[max(0, c - WINDOW_NEIGHBOURS) : min(n, c + WINDOW_NEIGHBOURS + 1)]
        )
        for c in centres
    ]


def nli_pairs(assessment: Assessment) -> list[tuple[ClaimVerdict, list[str]]]:
    """Every claim with the context windows ``apply_nli`` scores it against."""
    return [
        (v, claim_windows(v.text, v.signals.best_sentence, assessment.context))
        for v in assessment.claims
    ]


def apply_nli(
    assessment: Assessment, scorer: NliScorer, threshold: float = ENTAILMENT_THRESHOLD
) -> None:
    """Score every claim with the NLI model (see the module doc): ``model_support``,
    ``support`` and, for checked claims, ``supported``; then ``model_score``."""
    requests = nli_pairs(assessment)
    premises = [w for _, windows in requests for w in windows]
    hypotheses = [v.text for v, windows in requests for _ in windows]
    values = iter(scorer.entailment(premises, hypotheses) if premises else [])
    for verdict, windows in requests:
        value = max((next(values) for _ in windows), default=0.0)
        verdict.model_support = value
        verdict.support = value
        if verdict.supported is not None:
            verdict.supported = value >= threshold
    scored = assessment.checked or assessment.claims
    if scored:
        weights = [max(v.signals.n_terms, 1) for v in scored]
        total = sum(w * (v.model_support or 0.0) for w, v in zip(weights, scored, strict=True))
        assessment.model_score = total / sum(weights)
    assessment.notes.append(
        f"claims scored by {scorer.description}: support = the highest entailment probability "
        f"over the claim's best context windows, supported at >= {threshold:g}; grounding_score "
        "= their term-weighted mean over the checked claims"
    )
