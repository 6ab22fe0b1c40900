"""`ragmeter trec` as a process: trec_eval's measure syntax, options and output lines, checked
line for line against values computed by pytrec_eval on the same files."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

# trec_eval 10.0 prints -m all_trec's summary in its measure table's order
ALL_TREC_SUMMARY = [
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    *(f"iprec_at_recall_{x / 10:.2f}" for x in range(11)),
    *(f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"recall_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    "infAP",
    "gm_bpref",
    *(f"Rprec_mult_{x / 10:.2f}" for x in range(2, 21, 2)),
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    *(f"ndcg_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"map_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"relative_P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    "success_1",
    "success_5",
    "success_10",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj_5",
    "unj_10",
    "unj_20",
]
NOT_PER_QUERY = {"runid", "num_q", "gm_map", "gm_bpref"}


def ragmeter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", "trec", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def write_trec(folder: Path, seed: int = 3) -> tuple[Path, Path]:
    """Graded qrels (negative grades too) and a run with tied scores; queries on one side
    only; qrels and run both out of order."""
    rng = random.Random(seed)
    docs = [f"doc{i}" for i in range(25)]
    qrels_lines, run_lines = [], []
    for q in rng.sample(range(1, 12), 8):
        judged = rng.sample(docs, rng.randint(2, 10))
        grades = [rng.choice([-1, 0, 0, 1, 2, 3]) for _ in judged]
        grades[0] = max(grades[0], 1)
        qrels_lines += [f"{q} 0 {d} {g}" for d, g in zip(judged, grades, strict=True)]
    for q in rng.sample(range(3, 14), 8):
        ranked = rng.sample(docs, rng.randint(1, 22))
        scores = [rng.choice([0.5, 1.0, 1.25, 2.0, 3.5, 8.0]) for _ in ranked]
        run_lines += [
            f"{q} Q0 {d} {i} {s} run{q}"
            for i, (d, s) in enumerate(zip(ranked, scores, strict=True), start=1)
        ]
    rng.shuffle(qrels_lines)
    (folder / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (folder / "run").write_text("\n".join(run_lines) + "\n")
    return folder / "qrels", folder / "run"


def reference(qrels_path: Path, run_path: Path, measures: set[str]) -> dict[str, dict[str, float]]:
    with qrels_path.open() as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with run_path.open() as handle:
        run = pytrec_eval.parse_run(handle)
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def line(label: str, query: str, value: float, integer: bool = False) -> str:
    shown = str(int(value)) if integer else f"{value:6.4f}"
    return f"{label:<22}\t{query}\t{shown}"


def test_output_lines_are_trec_eval_s(tmp_path: Path) -> None:
    qrels, run = write_trec(tmp_path)
    args = ["-m", "official", "-m", "ndcg_cut.5,10", "-m", "infAP", "-m", "set_F", "-m", "G"]
    result = ragmeter(str(qrels), str(run), "-q", *args)
    assert result.returncode == 0, result.stderr
    measures = {"official", "ndcg_cut.5,10", "infAP", "set_F", "G"}
    values = reference(qrels, run, measures)
    order = [
        "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
        *(f"iprec_at_recall_{x / 10:.2f}" for x in range(11)),
        *(f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
        "infAP", "G", "ndcg_cut_5", "ndcg_cut_10", "set_F",
    ]  # fmt: skip
    counts = {"num_ret", "num_rel", "num_rel_ret"}
    expected = [
        line(label, query, values[query][label], label in counts)
        for query in sorted(values)
        for label in order
    ]
    n = len(values)
    expected.append(f"{'runid':<22}\tall\trun{run.read_text().split()[-1][3:]}")
    expected.append(f"{'num_q':<22}\tall\t{n}")
    for label in order:
        column = [values[q][label] for q in sorted(values)]
        if label in counts:
            expected.append(line(label, "all", sum(column), True))
        else:
            expected.append(line(label, "all", sum(column) / n))
        if label == "map":
            geometric = math.exp(sum(math.log(max(v, 1e-5)) for v in column) / n)
            expected.append(line("gm_map", "all", geometric))
    assert result.stdout.splitlines() == expected


def test_all_trec_prints_trec_eval_s_names_in_its_order(tmp_path: Path) -> None:
    qrels, run = write_trec(tmp_path)
    result = ragmeter(str(qrels), str(run), "-m", "all_trec", "-q")
    assert result.returncode == 0, result.stderr
    lines = [row.split("\t") for row in result.stdout.splitlines()]
    summary = [name.strip() for name, query, _ in lines if query == "all"]
    assert summary == ALL_TREC_SUMMARY
    first = lines[0][1]
    per_query = [name.strip() for name, query, _ in lines if query == first]
    wanted = [n for n in ALL_TREC_SUMMARY if n not in NOT_PER_QUERY]
    wanted.insert(wanted.index("recall_5"), "relstring")
    assert per_query == wanted
    relstring = next(value for name, query, value in lines if name.strip() == "relstring")
    assert relstring.startswith("'") and relstring.endswith("'")


def test_several_cutoffs_and_defaults(tmp_path: Path) -> None:
    qrels, run = write_trec(tmp_path)
    result = ragmeter(str(qrels), str(run), "-m", "P.10,5", "-m", "utility.2,-1,0,0")
    names = [row.split("\t")[0].strip() for row in result.stdout.splitlines()]
    assert names == ["P_5", "P_10", "utility_2,-1,0,0"]
    default = ragmeter(str(qrels), str(run))
    names = [row.split("\t")[0].strip() for row in default.stdout.splitlines()]
    assert names == ALL_TREC_SUMMARY[: ALL_TREC_SUMMARY.index("P_1000") + 1]
    quiet = ragmeter(str(qrels), str(run), "-n", "-q", "-m", "map")
    assert all("\tall\t" not in row for row in quiet.stdout.splitlines()) and quiet.stdout


def test_complete_judged_only_and_cut_runs(tmp_path: Path) -> None:
    qrels, run = write_trec(tmp_path)
    plain = ragmeter(str(qrels), str(run), "-m", "num_q", "-m", "num_rel")
    complete = ragmeter(str(qrels), str(run), "-c", "-m", "num_q", "-m", "num_rel", "-m", "P.5")
    queries = {row.split()[0] for row in qrels.read_text().splitlines()}
    assert f"num_q                 \tall\t{len(queries)}" in complete.stdout.splitlines()
    assert plain.stdout != complete.stdout
    judged = ragmeter(str(qrels), str(run), "-J", "-M", "3", "-m", "num_ret", "-q")
    assert judged.returncode == 0, judged.stderr
    for row in judged.stdout.splitlines():
        _, query, value = row.split("\t")
        if query != "all":
            assert int(value) <= 3


@pytest.mark.parametrize(
    "args,message",
    [
        (["-m", "map.5"], "takes no cutoff"),
        (["-m", "no_such"], "unknown measure"),
        (["-m", "prefs_simp"], "does not read"),
        (["-R", "prefs"], "reads qrels judgments only"),
        (["-m", "ndcg.1-3"], "malformed pair parameters"),
        (["-m", "utility.1,2"], "utility needs 4 coefficients"),
    ],
)
def test_refusals_are_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    qrels, run = write_trec(tmp_path)
    result = ragmeter(str(qrels), str(run), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_command_runs_alone(tmp_path: Path) -> None:
    """`python -m ragmeter.cli.trec` is the command without the rest of the CLI."""
    qrels, run = write_trec(tmp_path)
    alone = subprocess.run(
        [sys.executable, "-m", "ragmeter.cli.trec", str(qrels), str(run), "-m", "P.5"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        alone.returncode == 0 and alone.stdout == ragmeter(str(qrels), str(run), "-m", "P.5").stdout
    )
    bad = subprocess.run(
        [sys.executable, "-m", "ragmeter.cli.trec", str(qrels), str(run), "-m", "map.5"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")
