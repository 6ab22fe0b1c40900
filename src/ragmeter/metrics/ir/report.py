"""trec_eval's output: the lines ``ragmeter trec`` prints, and the summary over queries.

A line is ``name<TAB>query<TAB>value`` with the name left-justified in 22 characters and the
value as ``%6.4f`` (counts as whole numbers, relstring quoted). With ``-q`` every query's lines
come first (queries in trec_eval's order, measures in its table order); the summary follows
with ``all`` as the query: counts are summed, ``gm_*`` combined by geometric mean, the others
averaged, over the evaluated queries (under ``-c``, every qrels query). Sums run query by query
in that order, as trec_eval adds them, so the printed digits are trec_eval's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from .batch import BatchResult
from .core import Measure, MeasureError
from .measures import TrecMeasure, declaration_of


def number(value: float) -> str:
    """``%6.4f``, with NaN as glibc prints trec_eval's 0/0 (``-nan``)."""
    return "  -nan" if math.isnan(value) else f"{value:6.4f}"


def _line(label: str, query: str, value: str) -> str:
    return f"{label:<22}\t{query}\t{value}"


def summary(declared: TrecMeasure, column: Sequence[float] | npt.NDArray[np.float64]) -> float:
    """The value over all queries of one measure's per-query values."""
    values = np.asarray(column, dtype=np.float64)
    if not len(values):
        return 0.0
    total = float(np.cumsum(values)[-1])  # one by one, in order
    if declared.summary == "sum":
        return total
    if declared.summary == "geometric":
        return math.exp(total / len(values))
    return total / len(values)


def trec_lines(
    result: BatchResult,
    measures: Sequence[Measure],
    *,
    per_query: bool = False,
    totals: bool = True,
    runid: str = "",
) -> Iterator[str]:
    """The lines trec_eval prints for these measures (in this order)."""
    if not result.query_ids:
        raise MeasureError("no queries with both results and relevance information")
    declared = [declaration_of(m)[0] for m in measures]
    if per_query:
        printed = [(m, d) for m, d in zip(measures, declared, strict=True) if d.per_query]
        columns = [(m.label, result.values[m.label].tolist()) for m, _ in printed]
        for i, query in enumerate(result.query_ids):
            for (_, found), (label, column) in zip(printed, columns, strict=True):
                if found.text_batch is not None:
                    yield _line(label, query, f"'{result.texts[label][i]}'")
                elif found.integer:
                    yield _line(label, query, str(int(column[i])))
                else:
                    yield _line(label, query, number(column[i]))
    if not totals:
        return
    for measure, found in zip(measures, declared, strict=True):
        label = measure.label
        if found.name == "runid":
            yield _line("runid", "all", runid)
        elif found.summary == "none":
            continue
        elif found.integer:
            yield _line(label, "all", str(round(summary(found, result.values[label]))))
        else:
            yield _line(label, "all", number(summary(found, result.values[label])))
