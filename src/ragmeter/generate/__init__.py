"""Test-set generation (``ragmeter generate``): factual, multi-hop, numeric, list and
unanswerable cases written from a corpus by an LLM judge, each checked by a second judge call,
near-duplicates removed. See docs/generate.md."""

from ragmeter.generate.categories import CATEGORIES, DEFAULT_MIX, allocate
from ragmeter.generate.dedup import THRESHOLD, Deduper
from ragmeter.generate.output import write_cases
from ragmeter.generate.plan import Corpus, open_corpus
from ragmeter.generate.run import Options, Summary, generate

__all__ = [
    "CATEGORIES",
    "DEFAULT_MIX",
    "THRESHOLD",
    "Corpus",
    "Deduper",
    "Options",
    "Summary",
    "allocate",
    "generate",
    "open_corpus",
    "write_cases",
]
