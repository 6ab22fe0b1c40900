"""The reference pipeline as an in-process target (what ``ragmeter eval`` uses by default).

Its corpus: ``--corpus`` (a Markdown folder, a corpus spec such as ``cranfield:DIR``, a BEIR or
Cranfield folder, or a folder ``ragmeter index`` built); without it, each case is answered over
the corpus its dataset carries (``metadata["ragmeter_corpus"]``, indexed and cached by
:mod:`ragmeter.targets.reference.corpus_index`), and only a case without one over the demo's.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ragmeter.config import TargetConfig
from ragmeter.demo import DEMO_CORPUS
from ragmeter.models import Case, Response
from ragmeter.targets.reference.pipeline import PipelineSettings, ReferencePipeline


@lru_cache(maxsize=4)
def load_pipeline(corpus: str, top_k: int) -> ReferencePipeline:
    from ragmeter.targets.reference.corpus_index import as_corpus_spec, load_chunks

    settings = PipelineSettings(top_k=top_k)
    spec = as_corpus_spec(corpus)
    if spec is not None:
        return ReferencePipeline(load_chunks(spec, settings.max_chunk_words), settings)
    return ReferencePipeline.from_corpus(Path(corpus), settings)


def _corpus_of(case: Case) -> str | None:
    from ragmeter.datasets.corpus import corpus_of

    return corpus_of(case)


class ReferenceTarget:
    name = "reference"

    def __init__(self, config: TargetConfig, **_: Any) -> None:
        self.config = config
        self.follow_cases = not config.corpus  # each case's own corpus, when it names one
        if config.corpus:
            given = Path(config.corpus)
            corpus = str(given.resolve()) if given.exists() else config.corpus
        else:
            corpus = str(DEMO_CORPUS)
        self.corpus_name = corpus
        self.corpus = Path(corpus)
        self.pipeline = load_pipeline(corpus, config.top_k)

    def _pipeline_for(self, case: Case) -> ReferencePipeline:
        spec = _corpus_of(case) if self.follow_cases else None
        return self.pipeline if spec is None else load_pipeline(spec, self.config.top_k)

    async def preflight(self) -> dict[str, Any]:
        info = self.pipeline.info()
        return {**info, "corpus": self.corpus_name} if self._is_spec() else info

    async def query(self, case: Case) -> Response:
        pipeline = self._pipeline_for(case)
        return Response.model_validate(pipeline.answer(case.question, self.config.top_k))

    async def index_stats(self) -> dict[str, Any]:
        """The index statistics of the pipeline (``targets/reference/index_stats.py``)."""
        from ragmeter.targets import index_stats
        from ragmeter.targets.reference.index_stats import reference_index_stats

        folder = self.corpus if self.corpus.is_dir() and not self._is_spec() else None
        return index_stats.reported("reference", reference_index_stats(self.pipeline, folder))

    def _is_spec(self) -> bool:
        from ragmeter.targets.reference.corpus_index import as_corpus_spec

        return as_corpus_spec(self.corpus_name) is not None

    async def aclose(self) -> None:
        return None
