"""``runfile.rewrite_header``: a verdict decided after the run changes the run file's header and
copies its cases byte for byte (a file ragmeter did not lay out is rewritten whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.runfile import rewrite_header

TEXT = st.text(alphabet=st.characters(max_codepoint=0x2FFF), max_size=30)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)


def _document(config: Any, cases: list[Any]) -> dict[str, Any]:
    return {
        "run_file_version": 3,
        "id": "r1",
        "config": config,
        "goals": [{"metric": "mrr", "status": "not_measured"}],
        "performance": {"latency_ms": {}},
        "cases": cases,
    }


@given(config=JSON, cases=st.lists(JSON, max_size=4))
def test_the_header_changes_and_the_cases_are_copied_as_they_were(
    tmp_path_factory: Any, config: Any, cases: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("run") / "run.json"
    # the config may hold the text '"cases": [' itself: the header is found by parsing
    config = {"note": '"cases": [', "value": config}
    written = json.dumps(_document(config, cases))
    path.write_text(written, encoding="utf-8")
    goals = [{"metric": "mrr", "status": "pass"}]
    rewrite_header(path, {"goals": goals})
    after = path.read_text(encoding="utf-8")
    expected = {**_document(config, cases), "goals": goals}
    assert json.loads(after) == expected
    assert list(json.loads(after)) == list(expected)  # goals kept its place
    cases_part = written[written.rindex('"cases": [') :]
    assert after.endswith(cases_part)


def test_a_file_laid_out_by_hand_is_rewritten_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    document = _document({"k": 1}, [{"case_id": "a", "scores": {"mrr": 1.0}}])
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    rewrite_header(path, {"goals": []})
    assert json.loads(path.read_text(encoding="utf-8")) == {**document, "goals": []}
    assert not list(tmp_path.glob("*.part"))
