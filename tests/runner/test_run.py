"""runner.run: the library runs every stage of a run (pre-flight, asking, scoring, baseline,
verdicts, gate, reports, traces); ``ragmeter eval`` only parses options and prints the result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import ConfigError, EvalConfig
from ragmeter.errors import InputError
from ragmeter.runner.run import GateFailedError, evaluate
from ragmeter.store.sqlite import RunStore

TIMES = re.compile(r"(_at|_ms|^timings)$")
NON_INFERIOR_AND_FAILING = 'mrr: "non_inferior(margin=0.02)"\nrecall_at_5: "> 0.99"\n'


def _ragmeter(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _baseline(cwd: Path) -> str:
    """A stored demo run over the retrieval metrics, named ``base``; its id."""
    result = _ragmeter(cwd, "eval", "--no-progress", "--metrics", "retrieval", "--output", "base")
    assert result.returncode == 0, result.stderr
    run_id: str = json.loads((cwd / ".ragmeter" / "runs" / "base.json").read_text())["id"]
    return run_id


def _without_times(value: Any, key: str = "") -> Any:
    """``value`` with every time, duration and latency replaced by a placeholder."""
    if TIMES.search(key) and value is not None:
        return "<time>"
    if isinstance(value, dict):
        return {k: _without_times(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_times(v, key) for v in value]
    return value


def _run_json(path: Path) -> Any:
    document = json.loads(path.read_text())
    run_id = document["id"]
    text = json.dumps(_without_times(document)).replace(run_id, "<id>").replace(run_id[:8], "<id>")
    return json.loads(text)


def _markdown(path: Path, run_id: str) -> str:
    text = path.read_text().replace(run_id, "<id>").replace(run_id[:8], "<id>")
    return re.sub(r"created: \S+", "created: <time>", text)


def test_named_run_files_get_the_non_inferior_verdict(tmp_path: Path) -> None:
    """``--output NAME --baseline RUN`` with a ``non_inferior`` target: the verdict goes into
    NAME.json and NAME.md (it once crashed, the verdict written to a second, stray file)."""
    base = _baseline(tmp_path)
    (tmp_path / "targets.yaml").write_text('mrr: "non_inferior(margin=0.02)"\n')
    args = ("--metrics", "retrieval", "--output", "cand", "--baseline", base)
    result = _ragmeter(tmp_path, "eval", "--no-progress", *args, "--targets", "targets.yaml")
    assert result.returncode == 0, result.stderr
    runs = tmp_path / ".ragmeter" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        "base.json",
        "base.md",
        "cand.json",
        "cand.md",
    ]
    (target,) = json.loads((runs / "cand.json").read_text())["goals"]
    # the same reference pipeline on the same cases: a paired difference of exactly 0
    assert (target["metric"], target["status"]) == ("mrr", "pass")
    assert target["reason"] == f"paired difference vs {base}: lower bound +0 within the margin 0.02"
    assert "✅ pass: paired difference vs" in (runs / "cand.md").read_text()
    assert f"goal mrr non_inferior(margin=0.02): pass (paired difference vs {base}" in (
        result.stdout
    )
    run_id = json.loads((runs / "cand.json").read_text())["id"]
    stored = json.loads(_ragmeter(tmp_path, "show", "--json", run_id).stdout)["goals"]
    assert stored == [target]


def test_evaluate_writes_what_the_cli_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same config through ``ragmeter eval`` and ``evaluate``: the same run file, report
    and traces (apart from ids and times), and the same failed gate (exit 4 / the error)."""
    base = _baseline(tmp_path)
    (tmp_path / "targets.yaml").write_text(NON_INFERIOR_AND_FAILING)
    result = _ragmeter(
        tmp_path, "eval", "--no-progress", "--metrics", "retrieval", "--output", "cli",
        "--baseline", base, "--goals", "targets.yaml", "--gate", "--save-trace", "traces",
    )  # fmt: skip
    assert result.returncode == 4, result.stderr
    assert "gate: goals failed: recall_at_5 0.965 (goal > 0.99)" in result.stderr
    monkeypatch.chdir(tmp_path)
    config = EvalConfig(
        metrics=["retrieval"],
        output="py",
        baseline=base,
        targets={"mrr": "non_inferior(margin=0.02)", "recall_at_5": "> 0.99"},
        gate=True,
        save_trace="traces",
        progress=False,  # --no-progress
    )
    with pytest.raises(GateFailedError, match=r"recall_at_5 0\.965 \(goal > 0\.99\)") as failed:
        evaluate(config)
    outcome = failed.value.outcome
    runs = tmp_path / ".ragmeter" / "runs"
    assert outcome.run_file is not None and outcome.run_file.resolve() == runs / "py.json"
    assert outcome.report_file == outcome.run_file.with_suffix(".md")
    assert outcome.verdict is not None and outcome.verdict.failed
    assert outcome.comparison is not None and outcome.comparison.baseline == base
    cli, py = _run_json(runs / "cli.json"), _run_json(runs / "py.json")
    assert cli["config"].pop("output") == "cli" and py["config"].pop("output") == "py"
    assert cli == py
    cli_id, py_id = json.loads((runs / "cli.json").read_text())["id"], outcome.record.id
    assert _markdown(runs / "cli.md", cli_id) == _markdown(runs / "py.md", py_id)
    cli_trace = (tmp_path / "traces" / f"retrieval-{cli_id}.jsonl").read_text()
    py_trace = (tmp_path / "traces" / f"retrieval-{py_id}.jsonl").read_text()
    assert py_trace.count("\n") == outcome.traced_cases > 0
    assert [
        _without_times(json.loads(line)) for line in cli_trace.replace(cli_id, "<id>").splitlines()
    ] == [_without_times(json.loads(line)) for line in py_trace.replace(py_id, "<id>").splitlines()]
    assert outcome.trace_files == {
        Path("traces") / f"retrieval-{py_id}.jsonl": py_trace.count("\n")
    }
    verdicts = {t.metric: t.status for t in outcome.record.goals}
    assert verdicts == {"mrr": "pass", "recall_at_5": "fail"}


def _run_count(store: Path) -> int:
    if not store.exists():
        return 0
    run_store = RunStore(str(store), create=False)
    try:
        return len(run_store.list_runs())
    finally:
        run_store.close()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gate": True, "baseline": "nope"}, r"--baseline: no run 'nope'|--baseline nope: "),
        ({"gate": True, "goals": {}}, r"--gate with an empty goals table checks nothing"),
        (
            {"targets": {"mrr": "non_inferior(margin=0.02)"}},
            r"non_inferior on mrr needs a baseline",
        ),
    ],
)
def test_evaluate_refuses_before_asking(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    """A gate or baseline the run could not honour is refused before the first question, in
    Python as on the command line (they were once ignored by ``evaluate``)."""
    store = tmp_path / "runs.db"
    with pytest.raises(InputError, match=message):
        evaluate(EvalConfig(store=str(store), output_dir=str(tmp_path / "out"), **changes))
    assert _run_count(store) == 0
    assert not (tmp_path / "out").exists()


def test_evaluate_refuses_a_dry_run(tmp_path: Path) -> None:
    """``dry_run`` asks nothing: ``evaluate`` refuses it rather than running the evaluation."""
    with pytest.raises(ConfigError, match="dry_run estimates judging and asks nothing"):
        evaluate(EvalConfig(dry_run=True, store=str(tmp_path / "runs.db")))
    assert _run_count(tmp_path / "runs.db") == 0


def test_resume_from_the_config(tmp_path: Path) -> None:
    """``EvalConfig(resume=ID)`` finishes that run, as ``--resume ID`` does (it was once
    ignored, a second run started)."""
    store = tmp_path / "runs.db"
    with pytest.raises(InputError, match=r"abc123"):
        evaluate(EvalConfig(resume="abc123", store=str(store)))
    assert _run_count(store) == 0


def test_the_api_docs_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/api.md's ``GateFailedError`` example prints what its comment says."""
    code = _api_example("GateFailedError")
    said = re.search(r"# (\[.*\])", code)
    assert said is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/api.md", "exec"), {})
    assert capsys.readouterr().out.strip() == said.group(1)


def test_the_api_docs_estimate_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(_api_example("estimate_judging_cost"), "docs/api.md", "exec"), {})
    cases, calls, prompt_tokens, cost = capsys.readouterr().out.split()
    assert cases == "10" and int(calls) > 10 and int(prompt_tokens) > 0
    assert float(cost) > 0  # the judge price table knows the model
    assert not (tmp_path / ".ragmeter").exists()


def _api_example(naming: str) -> str:
    """The Python block of docs/api.md's "What evaluate does" that names ``naming``."""
    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    section = text[text.index("## What `evaluate` does") : text.index("## Seed 002")]
    blocks = re.findall(r"```python\n(.*?)\n```\n", section, re.S)
    return next(block for block in blocks if naming in block)
