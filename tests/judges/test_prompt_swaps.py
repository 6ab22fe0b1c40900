"""Seed 004's spot check with another prompt version of the same judge: ``--spot-check-prompt
TASK=VERSION`` names any shipped version, a wrong name or version stops the run before the
first question naming the valid ones, the re-judged verdicts use the other template, and the
run records which judge and which prompt versions were compared."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter import EvalConfig, evaluate
from ragmeter.errors import InputError, JudgeConfigError
from ragmeter.judges import templates
from ragmeter.judges.openai_compat import OpenAICompatJudge
from ragmeter.judges.prompt_swaps import prompt_swaps, swapped_tasks
from ragmeter.judges.session import JudgeSession
from ragmeter.judges.tasks import TASKS, Item
from ragmeter.judges.templates import load_prompt, template_versions
from ragmeter.judges.verdicts import groundedness
from ragmeter.runner import preflight
from ragmeter.store.sqlite import RunStore
from tests.judges.servers import Reply, completion, smart_judge

V1, V3 = load_prompt("groundedness.v1").version, load_prompt("groundedness.v3").version


def citing_judge(body: dict[str, Any]) -> Reply:
    """smart_judge, but groundedness follows the prompt it is asked: 5 under v3 (the rubric
    that asks for citations, and quotes: the first words of the first context), 1 under v1."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if "grounded in retrieved context" in system:
        score = 5 if "A score of 5 requires citations" in user else 1
        first = re.search(r'<context index="1">\n(.*?)\n</context>', user, re.S)
        quote = " ".join(first.group(1).split()[:6]) if first else ""
        quoted = '"quote"' in user
        supported = [{"claim": "A", "quote": quote} if quoted else "A"]
        out = {"supported_claims": supported, "unsupported_claims": [], "score": score}
        return completion(json.dumps(out))
    return smart_judge(body)


def is_v1(body: dict[str, Any]) -> bool:
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    return "grounded in retrieved context" in system and "<citations>" not in user


def test_names_are_tasks_or_their_templates_and_versions_are_shipped() -> None:
    assert prompt_swaps({"groundedness": "v1"}) == {"groundedness.v3": "groundedness.v1"}
    assert prompt_swaps({"groundedness": "groundedness.v1"}) == {
        "groundedness.v3": "groundedness.v1"
    }
    # a task swaps each of its templates; a template name swaps that one
    assert prompt_swaps({"faithfulness": "v1"}) == {
        "faithfulness_claims.v1": "faithfulness_claims.v1",
        "faithfulness_verify.v2": "faithfulness_verify.v1",
    }
    assert prompt_swaps({"answer_classification": "v1"}) == {
        "answer_classification.v1": "answer_classification.v1"
    }
    swaps = prompt_swaps({"classification": "v1", "groundedness": "v1"})
    assert swapped_tasks(swaps) == ["groundedness", "classification"]
    assert swapped_tasks(swaps, ["classification"]) == ["classification"]


def test_a_wrong_name_or_version_names_the_valid_ones() -> None:
    with pytest.raises(JudgeConfigError, match=r"no version 'v9'; its versions: v1, v2, v3 "):
        prompt_swaps({"groundedness": "v9"})
    with pytest.raises(JudgeConfigError, match="no judged task or prompt 'grounded'") as caught:
        prompt_swaps({"grounded": "v1"})
    assert "groundedness" in str(caught.value) and "faithfulness_claims" in str(caught.value)
    # a task the run does not judge cannot be spot-checked
    with pytest.raises(JudgeConfigError, match="'groundedness' in this run; name one of: corr"):
        prompt_swaps({"groundedness": "v1"}, ["correctness"])


def test_every_shipped_prompt_version_stays_loadable_by_name() -> None:
    folder = Path(templates.__file__).parent / "prompts"
    files = sorted(p.name.removesuffix(".txt") for p in folder.glob("*.txt"))
    shipped = template_versions().items()
    listed = sorted(f"{name}.{v}" for name, versions in shipped for v in versions)
    assert files == listed
    for name in files:
        assert load_prompt(name).name == name
    assert template_versions()["groundedness"] == ("v1", "v2", "v3")
    assert TASKS["groundedness"].prompts == ("groundedness.v3",)  # v1, v2 kept beside it
    assert V1 != V3


def _config(tmp_path: Path, **changes: Any) -> EvalConfig:
    values: dict[str, Any] = {
        "store": str(tmp_path / "r.db"), "output_dir": str(tmp_path / "o"), "progress": False,
        "samples": 3, "seed": 2, "metrics": ["lexical"], "judge": "http://127.0.0.1:9/v1#m",
    }  # fmt: skip
    return EvalConfig(**{**values, **changes})


def test_mistakes_are_found_before_any_question(tmp_path: Path) -> None:
    prompts = {"groundedness": "v1"}
    bad = [
        ({"spot_check_prompts": prompts}, "needs --spot-check N"),
        ({"spot_check": 2, "spot_check_prompts": prompts, "judge": None}, "name --judge"),
        ({"spot_check": 2}, "--spot-check-prompt TASK=VERSION"),
        ({"spot_check": 2, "spot_check_prompts": {"groundedness": "v4"}}, "versions: v1, v2, v3"),
        ({"spot_check": 2, "spot_check_prompts": {"correctness": "v1"}}, "compare it with itself"),
        (
            {"spot_check": 2, "spot_check_prompts": prompts, "judge_tasks": ["correctness"]},
            "no judged task or prompt 'groundedness' in this run",
        ),
    ]
    for changes, message in bad:
        with pytest.raises(InputError, match=message):
            preflight.check_options(_config(tmp_path, **changes))
    # another judge may ask the run's own version: that compares judges on that prompt
    preflight.check_options(
        _config(
            tmp_path, spot_check=2, spot_check_prompts={"correctness": "v1"},
            second_judge="http://127.0.0.1:9/v1#other",
        )
    )  # fmt: skip
    preflight.check_options(_config(tmp_path, spot_check=2, spot_check_prompts=prompts))


def test_the_session_asks_the_swapped_template(judge_servers: Any) -> None:
    server = judge_servers(citing_judge)
    item = Item(
        case_id="c", question="Q?", answer="A [1].", reference=None,
        contexts=["Annual leave is 27 days."],
        citations=["context 1"],
    )  # fmt: skip

    async def judge(prompts: dict[str, str] | None) -> Any:
        session = JudgeSession(
            OpenAICompatJudge(f"{server.url}/v1", "m", api_key_env=None), prompts=prompts
        )
        try:
            return await groundedness(session, item)
        finally:
            await session.judge.aclose()

    own = asyncio.run(judge(None))["groundedness"]
    other = asyncio.run(judge({"groundedness.v3": "groundedness.v1"}))["groundedness"]
    assert own[0] == 5.0 and own[1]["prompt_versions"] == {"groundedness.v3": V3}
    assert own[1]["supported_claims"] == [{"claim": "A", "quote": "Annual leave is 27 days."}]
    assert other[0] == 1.0 and other[1]["prompt_versions"] == {"groundedness.v1": V1}
    assert [is_v1(body) for body in server.requests] == [False, True]


def test_another_judge_with_another_prompt_version(judge_servers: Any, tmp_path: Path) -> None:
    first, second = judge_servers(citing_judge), judge_servers(citing_judge)
    config = _config(
        tmp_path, judge=f"{first.url}/v1#a", judge_tasks=["groundedness", "correctness"],
        spot_check=2, second_judge=f"{second.url}/v1#b",
        spot_check_prompts={"groundedness": "v1"},
    )  # fmt: skip
    report = evaluate(config).record.judge_reliability
    assert report is not None and report.same_judge is False
    assert (report.judge, report.second_judge) == (config.judge, config.second_judge)
    assert list(report.per_metric) == ["groundedness"]  # correctness is not re-judged
    assert report.prompt_versions == {
        "first": {"groundedness.v3": V3},
        "second": {"groundedness.v1": V1},
    }
    assert len(second.requests) == 2 and all(is_v1(body) for body in second.requests)
    assert not any(is_v1(body) for body in first.requests)


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **env},
    )  # fmt: skip


def test_spot_check_with_another_prompt_version_through_the_cli(
    judge_servers: Any, tmp_path: Path
) -> None:
    server = judge_servers(citing_judge)
    spec = f"{server.url}/v1#tiny"
    store = tmp_path / "runs.db"
    env = {"RAGMETER_JUDGE_TASKS": "groundedness,classification"}
    # seed 0: three answered demo cases (a refusal's groundedness is skipped, not judged)
    common = ["eval", "--samples", "3", "--seed", "0", "--metrics", "lexical", "--no-progress"]
    common += ["--store", str(store), "--output-dir", str(tmp_path / "out"), "--judge", spec]

    wrong = cli(*common, "--spot-check", "2", "--spot-check-prompt", "groundedness=v7",
                cwd=tmp_path, env=env)  # fmt: skip
    assert wrong.returncode == 2, wrong.stderr
    assert "groundedness has no version 'v7'; its versions: v1, v2, v3" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    assert server.requests == [] and not (tmp_path / "out").exists()  # nothing judged or run

    done = cli(*common, "--spot-check", "2", "--spot-check-prompt", "groundedness=v1",
               cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "judge spot check (2 cases, the run's judge, prompts groundedness.v1 vs the run's "
        "groundedness.v3): disagreement 1.00" in done.stdout
    ), done.stdout
    # 3 cases x (groundedness v3 + classification), then 2 cases x groundedness v1
    asked_v1 = [body for body in server.requests if is_v1(body)]
    assert len(asked_v1) == 2 and len(server.requests) == 3 * 2 + 2
    [run_file] = (tmp_path / "out").glob("*.json")
    run_id = json.loads(run_file.read_text())["id"]
    run_store = RunStore(store, create=False)
    try:
        record = run_store.get_run(run_id)
        ground = [s for s in run_store.get_scores(run_id) if s.metric == "groundedness"]
    finally:
        run_store.close()
    report = record.judge_reliability
    assert report is not None and report.spot_check_n == 2
    assert report.judge == report.second_judge == spec and report.same_judge is True
    assert report.prompts == {"groundedness.v3": "groundedness.v1"}
    assert report.prompt_versions == {
        "first": {"groundedness.v3": V3},
        "second": {"groundedness.v1": V1},
    }
    assert report.per_metric["groundedness"].model_dump() == {
        "n": 2, "disagreement_rate": 1.0, "kappa": 0.0
    }  # fmt: skip
    assert list(report.per_metric) == ["groundedness"] and report.pairs == 2
    # the run's own scores stand: every groundedness score is v3's 5
    assert [s.value for s in ground] == [5.0, 5.0, 5.0]
    info = record.config["judge_info"]
    assert info["spot_check_prompt_versions"] == {"groundedness.v1": V1}
    assert record.config["spot_check_prompts"] == {"groundedness": "v1"}
    # seed 001's counts beside the rates, judged: smart_judge says CORRECT for every case
    assert record.scorecard is not None
    total = record.scorecard.get("judged_correct_count")
    assert total is not None and total.value == 3.0 and total.aggregation == "sum"
    shown = cli("show", run_id, "--store", str(store), cwd=tmp_path, env=env)
    assert "prompts groundedness.v1 vs the run's groundedness.v3" in shown.stdout, shown.stdout
