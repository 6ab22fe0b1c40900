"""``ragmeter plugins``: what the registry holds for each extension point, and each metric
family's metrics with their group and kind. Names can come from third-party plugins: shown inert."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text

from ragmeter.errors import RagmeterError
from ragmeter.metrics.family import MetricParam
from ragmeter.registry import EXTENSION_POINTS, Registry
from ragmeter.reports.terminal import inert, inert_text


def _family(registry: Registry, name: str) -> dict[str, Any]:
    from ragmeter.metrics.family import declarations, metric_family

    entry: dict[str, Any] = {"name": name, "origin": registry.origin("metrics", name)}
    try:
        metrics = declarations(name, registry=registry)
        params = metric_family(name, registry).params
    except RagmeterError as exc:  # a plugin that cannot be loaded or declares a bad metric
        entry["problem"] = str(exc)
        return entry
    except Exception as exc:  # a plugin written for another version (e.g. Metric without kind=)
        entry["problem"] = f"cannot build its metrics: {type(exc).__name__}: {exc}"
        return entry
    entry["metrics"] = [{"name": m.name, "group": m.group, "kind": m.kind} for m in metrics]
    entry["params"] = [param_row(param) for param in params]
    return entry


def param_row(param: MetricParam) -> dict[str, Any]:
    """A family parameter as shown and listed: name, what it sets, default, help."""
    from ragmeter.metrics.base import MetricSettings

    default = getattr(MetricSettings(), param.setting) if param.setting else param.default
    return {
        "name": param.name,
        "sets": "the run setting, this family only" if param.setting else "its own option",
        "default": list(default) if isinstance(default, tuple) else default,
        "help": param.help,
    }


def params_table(listing: list[dict[str, Any]]) -> Table:
    """``ragmeter metrics --params``: every family parameter ``-P FAMILY.PARAM=VALUE`` sets."""
    table = Table(title="Metric family parameters (-P FAMILY.PARAM=VALUE)", title_justify="left")
    for column in ("family", "parameter", "default"):
        table.add_column(column, no_wrap=column != "default", overflow="fold", max_width=40)
    table.add_column("what it sets", overflow="fold", ratio=1, min_width=30)
    for family in listing:
        for param in family.get("params", []):
            table.add_row(
                inert_text(family["name"]),
                inert_text(param["name"]),
                inert_text(json.dumps(param["default"], default=str)),
                inert_text(f"{param['help']} ({param['sets']})"),
            )
    return table


def plugin_listing(registry: Registry) -> dict[str, list[dict[str, Any]]]:
    """Every extension point of the registry, each entry's name and origin (``built-in`` or the
    plugin's distribution); metric families also list their metrics, or the problem loading
    them."""
    listing: dict[str, list[dict[str, Any]]] = {}
    for point in EXTENSION_POINTS:
        if point == "metrics":
            listing[point] = [_family(registry, name) for name in registry.names(point)]
        else:
            listing[point] = [
                {"name": name, "origin": registry.origin(point, name)}
                for name in registry.names(point)
            ]
    return listing


def plugins_tables(listing: dict[str, list[dict[str, Any]]]) -> list[Table]:
    """One table an extension point; metric families get a row a metric (name, group, kind)."""
    tables = []
    for point, entries in listing.items():
        table = Table(title=inert(point), title_justify="left")
        table.add_column("name", no_wrap=True)
        table.add_column("origin", overflow="fold")
        if point == "metrics":
            for column in ("metric", "group", "kind"):
                table.add_column(column, no_wrap=True)
        for entry in entries:
            cells: list[Text | str] = [inert_text(entry["name"]), inert_text(entry["origin"])]
            if point != "metrics":
                table.add_row(*cells)
                continue
            if "problem" in entry:
                problem = f"{entry['origin']}; cannot load: {entry['problem']}"
                table.add_row(cells[0], inert_text(problem, style="red"), "-", "-", "-")
                continue
            for index, metric in enumerate(entry["metrics"]):
                shown = cells if index == 0 else ["", ""]
                table.add_row(
                    *shown,
                    inert_text(metric["name"]),
                    inert_text(metric["group"]),
                    inert_text(metric["kind"]),
                    end_section=index == len(entry["metrics"]) - 1,
                )
        tables.append(table)
    return tables
