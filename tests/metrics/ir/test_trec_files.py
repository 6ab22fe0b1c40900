"""The TREC file reader behind ``ragmeter trec``: the same values as the dict engine on files
written every way trec_eval accepts them, exact score parsing, and errors naming file:line."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.ir import evaluate_batch, evaluate_files, expand_measures, read_ranked
from ragmeter.metrics.ir.tokens import Columns as _Columns
from ragmeter.metrics.ir.tokens import TrecFileError

MEASURES = expand_measures(["all_trec", "ndcg.1=3,2=9", "dcg", "ideal_dcg", "yaap", "f1.5"])


def write_files(tmp: Path, seed: int) -> tuple[Path, Path, dict, dict]:
    """Files as people write them: numeric query ids out of string order, a query's lines
    split in two, comments, blank lines, extra columns, tied scores in several spellings,
    long ids; qrels-only and run-only queries. Returns the paths and the dicts they hold."""
    rng = random.Random(seed)
    docs = [f"D{i}" for i in range(30)] + ["X" * 600, "clueweb09-en0000-00-00001"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    qrels_lines = ["# judgments"]
    for q in rng.sample(range(1, 14), 10):
        for doc in rng.sample(docs, rng.randint(1, 12)):
            grade = rng.choice([-1, 0, 0, 1, 1, 2, 3])
            qrels.setdefault(str(q), {})[doc] = grade
            qrels_lines.append(f"{q} 0 {doc} {grade}")
    rng.shuffle(qrels_lines)
    run_lines: list[str] = []
    for q in rng.sample(range(3, 17), 10):
        ranked = rng.sample(docs, rng.randint(1, 25))
        for rank, doc in enumerate(ranked, start=1):
            score = rng.choice([1.5, 2.0, 0.25, -3.0, 17.125, 1e-7, 123456.5])
            run.setdefault(str(q), {})[doc] = score
            spelled = rng.choice(
                [repr(score), f"{score:.6e}", f"+{score}" if score > 0 else f"{score}"]
            )
            extra = " extra columns" if rng.random() < 0.1 else ""
            run_lines.append(f"{q}\tQ0  {doc} {rank} {spelled} tag{q}{extra}")
        if rng.random() < 0.3:
            run_lines.append("")
            run_lines.append("  # a comment")
    cut = len(run_lines) // 2
    run_lines = run_lines[cut:] + run_lines[:cut]  # a query may now be split in two
    (tmp / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (tmp / "run").write_text("\r\n".join(run_lines))  # CRLF, no final newline
    return tmp / "qrels", tmp / "run", qrels, run


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "options", [{}, {"complete": True}, {"judged_only": True, "max_retrieved": 7}]
)
def test_files_give_the_dict_engine_s_values(tmp_path: Path, seed: int, options: dict) -> None:
    qrels_path, run_path, qrels, run = write_files(tmp_path, seed)
    ours = evaluate_files(qrels_path, run_path, MEASURES, **options)
    expected = evaluate_batch(qrels, run, MEASURES, **options)
    assert ours.query_ids == expected.query_ids
    for label, column in expected.values.items():
        np.testing.assert_allclose(ours.values[label], column, atol=1e-12, err_msg=label)
    assert ours.texts == expected.texts
    last = run_path.read_text().strip().splitlines()[-1].split()
    assert read_ranked(qrels_path, run_path).runid == last[5]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-1e300, max_value=1e300, width=64)
        | st.decimals(allow_nan=False, allow_infinity=False, places=6).map(float),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["{!r}", "{:.6f}", "{:.15g}", "{:e}", "{:.3f}"]),
)
def test_scores_are_read_exactly_like_float(
    tmp_path_factory: pytest.TempPathFactory, values: list[float], spelling: str
) -> None:
    path = tmp_path_factory.mktemp("scores") / "run"
    texts = [spelling.format(v) for v in values]
    path.write_text("".join(f"q Q0 d{i} 1 {t} r\n" for i, t in enumerate(texts)))
    parsed = _Columns(path, 6, exact=False).numbers(4, integer=False)
    assert parsed.tolist() == [float(t) for t in texts]


def _write(tmp: Path, qrels: str, run: str) -> tuple[Path, Path]:
    (tmp / "q").write_text(qrels)
    (tmp / "r").write_text(run)
    return tmp / "q", tmp / "r"


@pytest.mark.parametrize(
    "qrels,run,message",
    [
        ("a 0 d1 1\na 0 d2\n", "a Q0 d1 1 1.0 t\n", r"q:2: expected 4 columns"),
        ("a 0 d1 1 x\n", "a Q0 d1 1 1.0 t\n", r"q:1: expected 4 columns"),
        ("a 0 d1 1\n", "a Q0 d1 1 1.0\n", r"r:1: expected 6 columns"),
        ("a 0 d1 high\n", "a Q0 d1 1 1.0 t\n", r"q:1: not an integer grade: 'high'"),
        ("a 0 d1 1.5\n", "a Q0 d1 1 1.0 t\n", r"q:1: not an integer grade"),
        ("a 0 d1 1\n", "a Q0 d1 1 x t\n", r"r:1: not a finite score: 'x'"),
        ("a 0 d1 1\n", "a Q0 d1 1 nan t\n", r"r:1: not a finite score"),
        (
            "a 0 d1 1\n",
            "a Q0 d1 1 1 t\na Q0 d2 2 1 t\na Q0 d1 3 0 t\n",
            r"r:3: document 'd1' "
            r"listed twice for query 'a' \(first at line 1\)",
        ),
        ("a 0 d1 1\nb 0 d1 1\na 0 d1 0\n", "a Q0 d1 1 1 t\n", r"q:3: document 'd1' judged twice"),
        ("", "a Q0 d1 1 1.0 t\n", r"q: no lines"),
        ("a 0 d1 1\n", "a Q0 d\x001 1 1.0 t\n", r"r: contains a NUL byte"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path: Path, qrels: str, run: str, message: str) -> None:
    paths = _write(tmp_path, qrels, run)
    with pytest.raises(TrecFileError, match=message):
        read_ranked(*paths)


def test_duplicates_only_matter_for_evaluated_queries(tmp_path: Path) -> None:
    """As trec_eval: a run-only query is never ranked, so its duplicate is not looked at; the
    same document in two queries is no duplicate."""
    paths = _write(
        tmp_path, "a 0 d1 1\n", "a Q0 d1 1 1 t\nb Q0 d1 1 1 t\nz Q0 d2 1 1 t\nz Q0 d2 1 1 t\n"
    )
    assert read_ranked(*paths).query_ids == ["a"]


def test_single_spaced_files_take_the_fast_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common layout is split without the general tokenizer, and plain decimals are
    parsed without one call per number (what keeps `ragmeter trec` fast)."""
    rng = random.Random(5)
    lines = [
        f"{q} Q0 D{rng.randrange(10**8)} {r} {rng.uniform(-50, 50):.6f} run"
        for q in range(20)
        for r in range(1, 30)
    ]
    path = tmp_path / "run"
    path.write_text("\n".join(lines) + "\n")

    def refuse(*args: object) -> float:
        raise AssertionError("slow path taken")

    monkeypatch.setattr(_Columns, "_any_spacing", refuse)
    monkeypatch.setattr(_Columns, "_slow_number", refuse)
    columns = _Columns(path, 6, exact=False)
    assert columns.numbers(4, integer=False).tolist() == [float(x.split()[4]) for x in lines]
    assert columns.numbers(3, integer=True).tolist() == [float(x.split()[3]) for x in lines]
