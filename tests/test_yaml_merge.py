"""``<<`` merge keys as the YAML merge-key spec (yaml.org/type/merge.html) says, whatever the
installed PyYAML does: own keys win over merged ones, earlier merged mappings over later ones.
PyYAML 6.0.4 read ``{<<: *m}`` of ``m: &m {<<: {x: 1}, x: 2}`` as ``{x: 1}``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.yamlio import YamlError, load_yaml

SPEC_EXAMPLE = """\
- &CENTER { x: 1, y: 2 }
- &LEFT { x: 0, y: 2 }
- &BIG { r: 10 }
- &SMALL { r: 1 }
- x: 1
  y: 2
  r: 10
  label: center/big
- << : *CENTER
  r: 10
  label: center/big
- << : [ *CENTER, *BIG ]
  label: center/big
- << : [ *BIG, *LEFT, *SMALL ]
  x: 1
  label: center/big
"""


def test_the_specs_own_example_gives_four_equal_maps() -> None:
    data = load_yaml(SPEC_EXAMPLE, "spec.yaml")
    expected = {"x": 1, "y": 2, "r": 10, "label": "center/big"}
    assert data[4:] == [expected] * 4
    # the anchored maps themselves are not changed by being merged
    assert data[:4] == [{"x": 1, "y": 2}, {"x": 0, "y": 2}, {"r": 10}, {"r": 1}]


def test_a_merged_mapping_that_merges_keeps_its_own_override() -> None:
    text = "m0: &m {<<: {x: 1}, x: 2}\nuse: {<<: *m}\nagain: {<<: *m, y: 3}\n"
    data = load_yaml(text, "t.yaml")
    assert data == {"m0": {"x": 2}, "use": {"x": 2}, "again": {"x": 2, "y": 3}}


def test_a_chain_of_merges_resolves_at_every_level() -> None:
    text = (
        "a: &a {k: a, only_a: 1}\nb: &b {<<: *a, k: b}\nc: &c {<<: [*b, *a], k2: c}\nd: {<<: *c}\n"
    )
    data = load_yaml(text, "t.yaml")
    assert data["b"] == {"k": "b", "only_a": 1}
    assert data["c"] == {"k": "b", "only_a": 1, "k2": "c"}
    assert data["d"] == data["c"]


def test_keys_equal_once_constructed_are_one_key_in_a_merge() -> None:
    # 1 and 0x1 are one integer key: the own key wins, as a dict would fold them
    assert load_yaml("m: &m {1: merged}\nuse: {<<: *m, 0x1: own}\n", "t.yaml")["use"] == {1: "own"}


@pytest.mark.parametrize(
    ("text", "found"),
    [("use: {<<: 3}\n", "scalar"), ("a: &a [1]\nuse: {<<: [*a]}\n", "sequence")],
)
def test_merging_what_is_not_a_mapping_is_refused_with_its_line(text: str, found: str) -> None:
    with pytest.raises(YamlError) as info:
        load_yaml(text, "t.yaml")
    assert str(info.value).startswith("t.yaml:")
    assert "for merging" in str(info.value) and found in str(info.value)


KEYS = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def merge_documents(draw: st.DrawFn) -> list[tuple[dict[str, int], list[int]]]:
    """Anchored mappings m0..mN, each with its own keys and merges of earlier ones."""
    maps: list[tuple[dict[str, int], list[int]]] = []
    for index in range(draw(st.integers(1, 6))):
        own = draw(st.dictionaries(KEYS, st.integers(0, 99), max_size=3))
        merges = draw(st.lists(st.integers(0, index - 1), max_size=3)) if index else []
        maps.append((own, merges))
    return maps


def expected_by_the_spec(maps: list[tuple[dict[str, int], list[int]]]) -> list[dict[str, int]]:
    resolved: list[dict[str, int]] = []
    for own, merges in maps:
        result: dict[str, int] = {}
        for source in merges:  # earlier merged mappings win over later ones
            for key, value in resolved[source].items():
                result.setdefault(key, value)
        result.update(own)  # the mapping's own keys win over every merged one
        resolved.append(result)
    return resolved


def as_yaml(maps: list[tuple[dict[str, int], list[int]]]) -> str:
    lines = []
    for index, (own, merges) in enumerate(maps):
        parts = []
        if merges:
            parts.append("<<: [" + ", ".join(f"*m{source}" for source in merges) + "]")
        parts.extend(f"{key}: {value}" for key, value in own.items())
        lines.append(f"m{index}: &m{index} {{{', '.join(parts)}}}")
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(merge_documents())
def test_merges_follow_the_spec_for_any_chain(maps: Any) -> None:
    data = load_yaml(as_yaml(maps), "t.yaml")
    assert [data[f"m{index}"] for index in range(len(maps))] == expected_by_the_spec(maps)
