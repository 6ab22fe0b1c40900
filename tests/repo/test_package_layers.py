"""The subpackages import one another in one direction: at import time (module-level imports,
outside ``TYPE_CHECKING``) no chain of subpackages leads back to where it started."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "ragmeter"


def _unit(path: Path) -> str:
    """The subpackage (or top-level module) a file belongs to."""
    relative = path.relative_to(SOURCE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def import_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path in SOURCE.rglob("*.py"):
        here = _unit(path)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            found = node.body if isinstance(node, ast.Try) else [node]
            for item in found:
                if isinstance(item, ast.ImportFrom) and (item.module or "").startswith("ragmeter."):
                    there = str(item.module).split(".")[1]
                    if there != here:
                        edges[here].add(there)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for other in sorted(edges.get(unit, ())):
            if other not in index:
                visit(other)
                low[unit] = min(low[unit], low[other])
            elif other in stack:
                low[unit] = min(low[unit], index[other])
        if low[unit] == index[unit]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == unit:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for unit in sorted(edges):
        if unit not in index:
            visit(unit)
    return groups


def test_no_import_cycle_between_subpackages() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"judges": {"scoring"}, "scoring": {"metrics"}, "metrics": {"judges"}, "web": {"x"}}
    assert cycles(edges) == [["judges", "metrics", "scoring"]]
