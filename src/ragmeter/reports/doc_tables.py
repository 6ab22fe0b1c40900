"""The tables docs/ holds that are generated from the declarations: every setting with its
default and environment variable (``EvalConfig``), every dataset known by name
(``datasets.declarations``) and every metric of the built-in families with its group, kind
and direction. ``python scripts/doc_tables.py`` rewrites them between their markers
(``<!-- generated: NAME -->`` and ``<!-- end generated -->``); a test checks they are current."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

if TYPE_CHECKING:
    from ragmeter.registry import ExtensionPoint, Registry

MARKER = re.compile(
    r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(field: Any) -> Any:
    if field.default_factory is not None:
        return field.default_factory()
    return None if field.default is PydanticUndefined else field.default


def _settings(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _settings(annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", _default(field)


def settings_table() -> str:
    """Every ``EvalConfig`` setting (``target.*`` flattened), its default and variable."""
    from ragmeter.config import ENV_FIELDS, EvalConfig

    variables = {".".join(path): variable for variable, path in ENV_FIELDS.items()}
    lines = ["| setting | default | environment |", "|---|---|---|"]
    for name, default in _settings(EvalConfig):
        shown = "none" if default is None else f"`{_cell(json.dumps(default, default=str))}`"
        variable = f"`{variables[name]}`" if name in variables else ""
        lines.append(f"| `{name}` | {shown} | {variable} |")
    return "\n".join(lines) + "\n"


def datasets_table() -> str:
    """Every dataset known by name: what it tests, where it comes from, its forms."""
    from ragmeter.datasets.declarations import DATASETS

    lines = [
        "| name | aspects | source | `--dataset` form | notes |",
        "|---|---|---|---|---|",
    ]
    for item in DATASETS:
        cells = (item.aspects, item.source, f"`{item.local_form}`", item.notes)
        lines.append(f"| `{item.name}` | " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def metrics_table(registry: Registry | None = None, built_in: bool | None = True) -> str:
    """Every metric of the families (``built_in``: ragmeter's own, False: the plugins', None:
    all), with its group, kind, direction and inputs; with the origin when plugins are in."""
    from ragmeter.metrics.family import declarations, or_own

    registry = or_own(registry)
    origin = built_in is not True
    lines = [
        "| family | metric | group | kind | better | needs |" + (" origin |" if origin else ""),
        "|---|---|---|---|---|---|" + ("---|" if origin else ""),
    ]
    for family in registry.names("metrics", built_in=built_in):
        where = f" {_cell(registry.origin('metrics', family))} |" if origin else ""
        for metric in declarations(family, registry=registry):
            better = "higher" if metric.higher_is_better else "lower"
            needs = ", ".join(metric.requires) or "-"
            cells = (metric.group, metric.kind, better, needs)
            lines.append(
                f"| `{family}` | `{_cell(metric.name)}` | "
                + " | ".join(_cell(c) for c in cells)
                + f" |{where}"
            )
    return "\n".join(lines) + "\n"


def metric_params_table(registry: Registry | None = None, built_in: bool | None = True) -> str:
    """Every parameter of the families (``-P FAMILY.PARAM=VALUE``; ``built_in`` as for
    :func:`metrics_table`)."""
    from ragmeter.metrics.family import or_own
    from ragmeter.reports.plugins import plugin_listing

    registry = or_own(registry)
    lines = [
        "| family | parameter | default | sets | what it is |",
        "|---|---|---|---|---|",
    ]
    chosen = set(registry.names("metrics", built_in=built_in))
    for family in plugin_listing(registry)["metrics"]:
        if family["name"] not in chosen:
            continue
        for param in family.get("params", []):
            cells = (f"`{json.dumps(param['default'])}`", param["sets"], param["help"])
            lines.append(
                f"| `{_cell(family['name'])}` | `{_cell(param['name'])}` | "
                + " | ".join(_cell(c) for c in cells)
                + " |"
            )
    return "\n".join(lines) + "\n"


def entries_table(point: ExtensionPoint, registry: Registry | None = None) -> str:
    """Every entry of an extension point with its origin (built-in or the distribution)."""
    from ragmeter.metrics.family import or_own

    registry = or_own(registry)
    lines = ["| name | origin |", "|---|---|"]
    for name in registry.names(point):
        lines.append(f"| `{_cell(name)}` | {_cell(registry.origin(point, name))} |")
    return "\n".join(lines) + "\n"


def registry_markdown(registry: Registry | None = None) -> str:
    """The generated tables for what this installation holds, plugins included
    (``ragmeter plugins --markdown``): metrics, family parameters and every other extension
    point's entries."""
    parts = [
        "## Metrics\n\n" + metrics_table(registry, built_in=None),
        "## Metric family parameters (-P FAMILY.PARAM=VALUE)\n\n"
        + metric_params_table(registry, built_in=None),
    ]
    titles: dict[ExtensionPoint, str] = {
        "targets": "Target types (--target NAME[:ARGUMENT])",
        "judges": "Judge providers (--judge NAME:MODEL)",
        "embedders": "Embedders (embedder: NAME[:ARGUMENT])",
        "loaders": "Dataset loaders (--dataset NAME:ARGUMENT)",
    }
    for point, title in titles.items():
        parts.append(f"## {title}\n\n" + entries_table(point, registry))
    return "\n".join(parts)


TABLES: dict[str, Callable[[], str]] = {
    "settings": settings_table,
    "datasets": datasets_table,
    "metrics": metrics_table,
    "metric_params": metric_params_table,
}


def render(text: str) -> str:
    """``text`` with every generated table between its markers made current."""

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in TABLES:
            raise KeyError(f"no generated table named {name!r} (known: {', '.join(TABLES)})")
        return match.group(1) + TABLES[name]() + match.group(4)

    return MARKER.sub(fill, text)


def documents(root: Path) -> list[Path]:
    """The docs holding a generated table."""
    paths = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [path for path in paths if MARKER.search(path.read_text(encoding="utf-8"))]
