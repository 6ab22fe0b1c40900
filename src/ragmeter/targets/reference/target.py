"""The reference pipeline as an in-process target (what ``ragmeter eval`` uses by default)."""

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
    return ReferencePipeline.from_corpus(Path(corpus), PipelineSettings(top_k=top_k))


class ReferenceTarget:
    name = "reference"

    def __init__(self, config: TargetConfig, **_: Any) -> None:
        self.config = config
        corpus = str(Path(config.corpus).resolve()) if config.corpus else str(DEMO_CORPUS)
        self.corpus = Path(corpus)
        self.pipeline = load_pipeline(corpus, config.top_k)

    async def preflight(self) -> dict[str, Any]:
        return self.pipeline.info()

    async def query(self, case: Case) -> Response:
        return Response.model_validate(self.pipeline.answer(case.question, self.config.top_k))

    async def index_stats(self) -> dict[str, Any]:
        """The index statistics of the pipeline (``targets/reference/index_stats.py``)."""
        from ragmeter.targets import index_stats
        from ragmeter.targets.reference.index_stats import reference_index_stats

        return index_stats.reported("reference", reference_index_stats(self.pipeline, self.corpus))

    async def aclose(self) -> None:
        return None
