"""The id-space check: whether the retrieved ids of a run can match its gold ids at all, per
dataset and level (``metrics/retrieval.py`` fails or re-levels the scores it decides on)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ragmeter.metrics.passages import Level, all_passages, case_level, ranked_chunks
from ragmeter.models import Case, GoldPassage, Response, RetrievedChunk

# what each level matches on: a retrieved chunk's key and a gold passage's key in that id space
ID_NAMES: dict[Level, str] = {"chunk": "chunk ids", "doc": "doc ids", "anchor": "rel_paths"}
# a case's retrieved keys kept until the run's gold ids are all known, at most (later cases are
# checked against the gold ids seen so far)
PENDING_CASES = 100_000
_EXAMPLE_CHARS = 40


def retrieved_key(chunk: RetrievedChunk, level: Level) -> str | None:
    if level == "chunk":
        return chunk.id
    if level == "doc":
        return chunk.doc_id
    return chunk.rel_path


def gold_key(passage: GoldPassage, level: Level) -> str | None:
    if level == "chunk":
        return passage.chunk_id
    if level == "doc":
        return passage.doc_id
    return passage.rel_path


def _any_id(chunk: RetrievedChunk) -> str | None:
    """What a chunk is called, for a message: its id, else its doc id, else its path."""
    return chunk.id or chunk.doc_id or chunk.rel_path


def _example(key: str | None) -> str:
    key = key or ""
    return repr(key if len(key) <= _EXAMPLE_CHARS else key[: _EXAMPLE_CHARS - 3] + "...")


@dataclass
class _Tally:
    """One dataset's cases at one level, in one id space: its gold ids, and how many of the
    cases that retrieved keyed items retrieved one of them."""

    gold: set[str] = field(default_factory=set)
    cases: int = 0
    met: int = 0
    pending: list[frozenset[str]] = field(default_factory=list)
    retrieved_example: str | None = None
    gold_example: str | None = None

    def add(
        self, gold: list[str], retrieved: list[str], counted: bool, example: str | None
    ) -> None:
        """A case: its gold keys, its retrieved keys, whether it counts (it retrieved items
        that could match) and the retrieved id to quote if none matches."""
        self.gold.update(gold)
        if self.gold_example is None and gold:
            self.gold_example = gold[0]
        if not counted:
            return
        self.cases += 1
        keys = frozenset(retrieved)
        if not keys.isdisjoint(self.gold):
            self.met += 1
            return
        if self.retrieved_example is None:  # quoted from a case that matched nothing
            self.retrieved_example = example
        if len(self.pending) < PENDING_CASES:  # a later case's gold may hold them
            self.pending.append(keys)

    def overlap(self) -> int:
        """The cases that retrieved a gold id of the dataset (any case's)."""
        late = sum(1 for keys in self.pending if not keys.isdisjoint(self.gold))
        return self.met + late


@dataclass(frozen=True)
class IdVerdict:
    """What the id-space check decided for a dataset's cases at a level: fail them with
    ``failure``, or match them at ``level`` instead (``note`` says why)."""

    failure: str | None = None
    level: Level | None = None
    note: str | None = None


class IdSpace:
    """Whether the retrieved ids of a run can match its gold ids, per dataset and level.

    Filled with the run's answers before scoring (``prepare_run`` with every batch, else
    ``prepare`` with the run's one batch); a dataset whose cases at a level retrieve any of its
    gold ids in under ``min_overlap`` of them (among those that retrieved items with ids at
    that level) gets a verdict: its chunk-level cases whose gold passages all carry a
    ``doc_id`` are matched by document when the retrieved doc ids meet the gold ones in at
    least ``min_overlap`` of them; otherwise its retrieval scores fail with the reason. Never
    prepared (a metric called on its own), it decides nothing."""

    def __init__(self, min_overlap: float) -> None:
        self.min_overlap = min_overlap
        self._tallies: dict[tuple[str, Level, Level], _Tally] = {}
        # (dataset) -> every chunk-level case's gold passages carry a doc_id
        self._doc_labelled: dict[str, bool] = {}
        self.verdicts: dict[tuple[str, Level], IdVerdict] = {}
        self._whole_run = False
        self._hooks: dict[str, Any] | None = None

    def prepare_run(self, batches: Iterable[list[tuple[Case, Response]]]) -> None:
        self._reset()
        for pairs in batches:
            self._count(pairs)
        self._decide()
        self._whole_run = True

    def prepare(self, pairs: list[tuple[Case, Response]]) -> None:
        if self._whole_run:  # decided over the whole run already
            return
        self._reset()
        self._count(pairs)
        self._decide()

    def _reset(self) -> None:
        self._tallies.clear()
        self._doc_labelled.clear()
        self.verdicts = {}
        self._whole_run = False

    def _tally(self, dataset: str, level: Level, space: Level) -> _Tally:
        found = self._tallies.get((dataset, level, space))
        if found is None:
            found = self._tallies[(dataset, level, space)] = _Tally()
        return found

    def _count(self, pairs: list[tuple[Case, Response]]) -> None:
        if self.min_overlap <= 0:
            return
        for case, response in pairs:
            passages = all_passages(case)
            if not passages or not response.has("retrieved"):
                continue
            dataset = case.dataset or ""
            level = case_level(passages)
            chunks = ranked_chunks(response)
            spaces: list[Level] = [level]
            if level == "chunk":
                labelled = all(p.doc_id for p in passages)
                self._doc_labelled[dataset] = self._doc_labelled.get(dataset, True) and labelled
                spaces.append("doc")
            for space in spaces:
                gold = [k for p in passages if (k := gold_key(p, space)) is not None]
                keys = [k for c in chunks if (k := retrieved_key(c, space)) is not None]
                # a case counts when it retrieved something that could be matched: chunks at
                # the doc or anchor level (one without a doc id is a miss there too), chunks
                # with ids at the chunk level (none: skipped as not reported), and chunks with
                # doc ids for matching by document
                counted = bool(keys) or (space == level != "chunk" and bool(chunks))
                example = keys[0] if keys else (_any_id(chunks[0]) if chunks else None)
                self._tally(dataset, level, space).add(gold, keys, counted, example)

    def _decide(self) -> None:
        if self.min_overlap <= 0:
            return
        for (dataset, level, space), tally in self._tallies.items():
            if space != level or not tally.cases:
                continue
            met = tally.overlap()
            if met / tally.cases >= self.min_overlap:
                continue
            if level == "chunk" and self._doc_labelled.get(dataset):
                docs = self._tallies.get((dataset, level, "doc"))
                if (
                    docs is not None
                    and docs.cases
                    and docs.overlap() >= self.min_overlap * docs.cases
                ):
                    self.verdicts[(dataset, level)] = IdVerdict(
                        level="doc",
                        note=(
                            f"retrieved chunk ids {'rarely' if met else 'never'} match gold "
                            "chunk ids (example: "
                            f"retrieved {_example(tally.retrieved_example)} vs gold "
                            f"{_example(tally.gold_example)}): matched by doc_id"
                        ),
                    )
                    continue
            self.verdicts[(dataset, level)] = IdVerdict(
                failure=self._failure(dataset, level, tally, met)
            )

    def _failure(self, dataset: str, level: Level, tally: _Tally, met: int) -> str:
        ids = ID_NAMES[level]
        example = (
            f"(example: retrieved {_example(tally.retrieved_example)} vs gold "
            f"{_example(tally.gold_example)})"
        )
        where = f"dataset {dataset!r}" if dataset else "the dataset"
        if met:
            head = (
                f"retrieved ids rarely match gold ids {example}: {met} of {tally.cases} cases "
                f"of {where} retrieved any of its gold {ids}, under id_space_min_overlap "
                f"{self.min_overlap:g}"
            )
        else:
            head = (
                f"retrieved ids never match gold ids {example}: none of the {tally.cases} "
                f"cases of {where} retrieved any of its gold {ids}"
            )
        return (
            f"{head}; the target's ids are not the dataset's (another corpus, or ids made at "
            "indexing time): serve the dataset's corpus, give its chunks the dataset's ids, or "
            "report each chunk's doc_id and label gold passages by doc_id (docs/metrics.md, "
            "'Id spaces')"
        )

    def hooks(self) -> dict[str, Any]:
        """The ``prepare`` and ``prepare_run`` of the metrics reading this check (one bound
        method each, so the engine prepares them once a batch); none when it is off."""
        if self.min_overlap <= 0:
            return {}
        if self._hooks is None:
            self._hooks = {"prepare": self.prepare, "prepare_run": self.prepare_run}
        return self._hooks

    def verdict(self, case: Case) -> IdVerdict | None:
        """The verdict on this case's retrieval; None when it is scored as usual."""
        if not self.verdicts:
            return None
        return self.verdicts.get((case.dataset or "", case_level(all_passages(case))))
