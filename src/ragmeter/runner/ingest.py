"""A new run's cases: chosen (smoke suite, samples, repeats), checked and stored in batches, so
a dataset of a million cases is never held at once.

A native JSONL dataset is read line by line (``datasets.stream``); ``--samples`` and the smoke
suite choose among all of a dataset's cases, so with them the datasets are loaded whole, as
are cases given as objects.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from ragmeter.config import EvalConfig
from ragmeter.datasets import DATASET_SPEC_KEY, load_datasets
from ragmeter.datasets.stream import iter_dataset_batches
from ragmeter.models import Case
from ragmeter.repeat_ids import expand_repeats
from ragmeter.runner.preflight import CaseSummary
from ragmeter.runner.selection import smoke_cases
from ragmeter.store import streams
from ragmeter.store.sqlite import RunStore


def select_cases(cases: list[Case], config: EvalConfig) -> list[Case]:
    """The cases a run asks: the smoke suite's subset (``suite: smoke``), then ``samples``,
    then each case ``repeats`` times (``scoring.repeats``)."""
    if config.suite == "smoke":
        cases = smoke_cases(cases, config.seed)
    return expand_repeats(sample_cases(cases, config.samples, config.seed), config.repeats)


def sample_cases(cases: list[Case], samples: int | None, seed: int) -> list[Case]:
    """A seeded random subset of ``samples`` cases **per dataset given** (seed 002's
    ``samples_per_dataset``; two RAGBench subset files are two datasets), kept in dataset
    order."""
    if samples is None:
        return cases
    by_dataset: dict[str | None, list[int]] = {}
    for index, case in enumerate(cases):
        group = case.metadata.get(DATASET_SPEC_KEY) or case.dataset  # the --dataset given
        by_dataset.setdefault(group, []).append(index)
    chosen: set[int] = set()
    for indices in by_dataset.values():
        if samples >= len(indices):
            chosen.update(indices)
        else:
            picks = random.Random(seed).sample(range(len(indices)), samples)
            chosen.update(indices[i] for i in picks)
    return [case for i, case in enumerate(cases) if i in chosen]


def case_batches(
    config: EvalConfig, cases: list[Case] | None = None, size: int | None = None
) -> Iterator[list[Case]]:
    """The run's cases in batches of about ``size`` (a case and its repeats stay together);
    a dataset's problems are raised as :class:`~ragmeter.datasets.DatasetError` once every
    dataset has been read."""
    size = size or streams.BATCH_CASES
    if cases is None and config.samples is None and config.suite != "smoke":
        for batch in iter_dataset_batches(config.datasets, config.field_map or None, size):
            yield expand_repeats(batch, config.repeats)
        return
    if cases is None:
        cases = load_datasets(config.datasets, config.field_map or None)
    chosen = select_cases(cases, config)
    for start in range(0, len(chosen), size):
        yield chosen[start : start + size]


def store_new_cases(
    store: RunStore,
    run_id: str,
    batches: Iterator[list[Case]],
    on_stored: Callable[[int], None] | None = None,
) -> CaseSummary:
    """Store the batches as the cases of the run ``run_id`` (not visible until its run row is
    inserted); whatever stops it (a dataset problem, an interruption) leaves no case behind.
    ``on_stored`` hears the count of cases stored after each batch."""
    summary = CaseSummary()
    try:
        for batch in batches:
            store.add_cases(run_id, batch, summary.count)
            summary.add(batch)
            if on_stored is not None:
                on_stored(summary.count)
    except BaseException:
        store.delete_orphan_cases(run_id)
        raise
    return summary
