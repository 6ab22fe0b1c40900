"""TREC qrels and run files read straight into arrays (no dicts, no pandas): ``ragmeter trec``.

:mod:`.tokens` splits a file into columns over its bytes and parses the numbers. Documents
are matched to their judgments by a 64-bit hash of (query, document id), and every match is
confirmed byte for byte, so a hash collision cannot change a result.

File rules are trec_eval's: a run line is ``query Q0 doc rank score tag`` (more columns are
ignored), a qrels line ``query iteration doc grade`` (an integer); lines starting with ``#``
and blank lines are skipped; the rank column is ignored; the runid is the last line's tag. A
document listed twice for an evaluated query, or judged twice, is an error naming both lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .batch import BatchResult, evaluate_ranked
from .core import FloatArray, Gain, IntArray, Measure
from .ranked import Ranked, rank_entries
from .tokens import U8, U64, Columns, TrecFileError

_MULT = np.random.default_rng(20261123).integers(1, 2**63, size=64, dtype=np.uint64) | 1


class _Segments:
    """Runs of consecutive rows with one query id: their starts, lengths and query ids."""

    def __init__(self, columns: Columns) -> None:
        ids = columns.matrix(0)
        words = ids.view(np.uint64)
        change = np.ones(columns.rows, dtype=bool)
        change[1:] = words[1:, 0] != words[:-1, 0]
        for column in range(1, words.shape[1]):
            change[1:] |= words[1:, column] != words[:-1, column]
        self.starts = np.flatnonzero(change)
        self.lengths = np.diff(np.append(self.starts, columns.rows))
        names = ids[self.starts].view(f"S{ids.shape[1]}").ravel().tolist()
        self.names = [name.decode("utf-8", "replace") for name in names]

    def query_of_rows(self, position: dict[str, int]) -> IntArray:
        """Each row's query index in ``position`` (-1 for a query not evaluated)."""
        codes = np.array([position.get(name, -1) for name in self.names], dtype=np.int64)
        return np.repeat(codes, self.lengths)

    def groups(self, position: dict[str, int]) -> tuple[IntArray | None, IntArray, IntArray]:
        """The rows of the evaluated queries, each query's rows together: which rows (None:
        all, in file order), and per group of rows its query index and length. Queries keep
        the file's order unless one is split into several runs of rows."""
        codes = np.array([position.get(name, -1) for name in self.names], dtype=np.int64)
        keep = np.flatnonzero(codes >= 0)
        if len(np.unique(codes[keep])) < len(keep):  # a query in pieces: gather them
            keep = keep[np.argsort(codes[keep], kind="stable")]
        lengths = self.lengths[keep]
        rows = None
        if len(keep) < len(codes) or (np.diff(keep) != 1).any():
            shift = self.starts[keep] - (np.cumsum(lengths) - lengths)
            rows = np.repeat(shift, lengths) + np.arange(int(lengths.sum()))
        query = codes[keep]
        new_group = np.ones(len(query), dtype=bool)
        new_group[1:] = query[1:] != query[:-1]
        group_start = np.flatnonzero(new_group)
        group_lengths = np.add.reduceat(lengths, group_start) if len(keep) else lengths
        return rows, query[group_start], group_lengths


def _hash(docs: U8, query: IntArray, salt: int = 0) -> U64:
    """A 64-bit key of each (query, document) pair (equal pairs, equal keys)."""
    words = docs.view(np.uint64)
    key: U64
    with np.errstate(over="ignore"):
        key = query.astype(np.uint64) * _MULT[(62 + salt) % 64]
        for column in range(words.shape[1]):
            index = column + salt
            key += words[:, column] * (_MULT[index % 62] * np.uint64(2 * (index // 62) + 1))
        key ^= key >> np.uint64(29)
        key *= _MULT[-2]
        key ^= key >> np.uint64(32)
    return key


def _same(a: U8, b: U8) -> npt.NDArray[np.bool_]:
    """Row by row equality of two byte matrices of possibly different widths."""
    width = max(a.shape[1], b.shape[1])
    if a.shape[1] < width:
        a = np.pad(a, ((0, 0), (0, width - a.shape[1])))
    if b.shape[1] < width:
        b = np.pad(b, ((0, 0), (0, width - b.shape[1])))
    equal: npt.NDArray[np.bool_] = (a == b).all(axis=1)
    return equal


def _slots(keys: U64) -> tuple[npt.NDArray[np.intp], int]:
    """A bucket per key (its top bits), in a table about four times the number of keys."""
    bits = max(8, (4 * len(keys)).bit_length())
    return (keys >> np.uint64(64 - bits)).astype(np.intp), bits


def _duplicates(
    columns: Columns, rows: IntArray, keys: U64, query: IntArray, docs: U8, what: str
) -> bool:
    """Raise if a (query, document) pair occurs twice (``rows`` maps back to file rows);
    return whether two different pairs share a key."""
    slot, bits = _slots(keys)
    crowded = np.flatnonzero(np.bincount(slot, minlength=1 << bits)[slot] > 1)
    order = crowded[np.argsort(keys[crowded], kind="stable")]
    near = np.flatnonzero(keys[order[1:]] == keys[order[:-1]])
    if not len(near):
        return False
    first, second = order[near], order[near + 1]
    same = (query[first] == query[second]) & _same(docs[first], docs[second])
    if same.any():
        a, b = sorted((int(rows[first[same][0]]), int(rows[second[same][0]])))
        raise TrecFileError(
            f"{columns.path}:{columns.line[b]}: document {columns.token(b, 2)!r} {what} twice "
            f"for query {columns.token(b, 0)!r} (first at line {columns.line[a]})"
        )
    return True


class _Lookup:
    """Where each of many keys sits among a set of distinct keys: a direct table of buckets,
    and a sorted search for the few buckets holding several keys."""

    def __init__(self, keys: U64) -> None:
        self.keys = keys
        slot, self.bits = _slots(keys)
        self.counts = np.bincount(slot, minlength=1 << self.bits)
        self.table = np.full(1 << self.bits, -1, dtype=np.int64)
        alone = self.counts[slot] == 1
        self.table[slot[alone]] = np.flatnonzero(alone)
        crowded = np.flatnonzero(~alone)
        order = np.argsort(keys[crowded])
        self.crowded, self.crowded_keys = crowded[order], keys[crowded][order]

    def find(self, needles: U64) -> IntArray:
        """Index of the key equal to each needle, -1 where none is."""
        if not len(self.keys):
            return np.full(len(needles), -1, dtype=np.int64)
        slot = (needles >> np.uint64(64 - self.bits)).astype(np.intp)
        found = self.table[slot]
        found = np.where(self.keys[np.maximum(found, 0)] == needles, found, -1)
        shared = np.flatnonzero(self.counts[slot] > 1)
        if len(shared):
            at = np.minimum(
                np.searchsorted(self.crowded_keys, needles[shared]), len(self.crowded) - 1
            )
            equal = self.crowded_keys[at] == needles[shared]
            found[shared[equal]] = self.crowded[at[equal]]
        return found


def read_ranked(qrels_path: str | Path, run_path: str | Path, complete: bool = False) -> Ranked:
    """What the measures read from a qrels file and a run file (see :class:`.ranked.Ranked`):
    the queries in both (every qrels query with ``complete``, trec_eval's ``-c``)."""
    qrels = Columns(Path(qrels_path), 4, exact=True)
    run = Columns(Path(run_path), 6, exact=False)
    return _read(qrels, run, complete)


def _read(qrels: Columns, run: Columns, complete: bool) -> Ranked:
    qrels_segments, run_segments = _Segments(qrels), _Segments(run)
    in_run = set(run_segments.names)
    query_ids = sorted({q for q in qrels_segments.names if complete or q in in_run})
    position = {q: i for i, q in enumerate(query_ids)}

    judged_query = qrels_segments.query_of_rows(position)
    judged_rows = np.flatnonzero(judged_query >= 0)
    judged_query = judged_query[judged_rows]
    grades = qrels.numbers(3, integer=True).astype(np.int64)[judged_rows]
    qrels_docs = qrels.matrix(2)[judged_rows]

    rows, group_query, group_lengths = run_segments.groups(position)
    run_docs, run_rows = run.matrix(2), np.arange(run.rows)
    if rows is not None:
        run_docs, run_rows = run_docs[rows], rows
    row_group = np.repeat(np.arange(len(group_query)), group_lengths)
    row_query = group_query[row_group]
    for salt in range(8):  # a new salt if two different judged pairs share a key
        qrels_keys = _hash(qrels_docs, judged_query, salt)
        if not _duplicates(qrels, judged_rows, qrels_keys, judged_query, qrels_docs, "judged"):
            break
    run_keys = _hash(run_docs, row_query, salt)
    _duplicates(run, run_rows, run_keys, row_query, run_docs, "listed")
    num_ret = np.bincount(row_query, minlength=len(query_ids)).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(group_lengths))).astype(np.int64)

    candidate = _Lookup(qrels_keys).find(run_keys)
    entry_row = np.flatnonzero(candidate >= 0)
    confirmed = (judged_query[candidate[entry_row]] == row_query[entry_row]) & _same(
        qrels_docs[candidate[entry_row]], run_docs[entry_row]
    )
    entry_row = entry_row[confirmed]
    entry_group = row_group[entry_row]
    scores = run.numbers(4, integer=False)
    scores = scores if rows is None else scores[rows]

    def tie_break(positions: IntArray) -> IntArray:
        return _tied_above(positions, entry_row, row_group, scores, run_docs, offsets)

    ranks = rank_entries(scores, offsets, entry_group, scores[entry_row], tie_break)
    missing = np.array([q not in in_run for q in query_ids], dtype=bool)
    return Ranked(
        query_ids,
        np.where(missing, 1, num_ret),
        group_query[entry_group],
        ranks,
        grades[candidate[entry_row]],
        judged_query,
        grades,
        missing,
        run.token(run.rows - 1, 5),
    )


def _tied_above(
    positions: IntArray,
    entry_row: IntArray,
    row_group: IntArray,
    scores: FloatArray,
    docs: U8,
    offsets: IntArray,
) -> IntArray:
    """For tied entries: documents of the same query (group of rows) with the same score and
    a greater id."""
    strings = docs.view(f"S{docs.shape[1]}").ravel()
    rows = entry_row[positions]
    found = np.zeros(len(rows), dtype=np.int64)
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0))
    chunk = max(1, 2_000_000 // max(width, 1))
    for begin in range(0, len(rows), chunk):
        part = rows[begin : begin + chunk]
        group = row_group[part]
        index = offsets[group][:, None] + np.arange(width)
        valid = np.arange(width) < lengths[group][:, None]
        index = np.where(valid, index, 0)
        same = valid & (scores[index] == scores[part][:, None])
        found[begin : begin + chunk] = (same & (strings[index] > strings[part][:, None])).sum(1)
    return found


def evaluate_files(
    qrels_path: str | Path,
    run_path: str | Path,
    measures: Sequence[Measure],
    relevance_level: int = 1,
    gain: Gain = "linear",
    complete: bool = False,
    *,
    judged_only: bool = False,
    max_retrieved: int | None = None,
    num_docs: int = 0,
) -> BatchResult:
    """Measures of a TREC run file against a TREC qrels file, as trec_eval computes them."""
    ranked = read_ranked(qrels_path, run_path, complete)
    return evaluate_ranked(
        ranked,
        measures,
        relevance_level,
        gain,
        judged_only=judged_only,
        max_retrieved=max_retrieved,
        num_docs=num_docs,
    )
