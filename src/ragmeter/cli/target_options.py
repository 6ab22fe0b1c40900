"""``eval`` options that say how to talk to the target: ``--response-format NAME|auto``,
``--request-template JSON`` and ``--response-map KEY=PATH`` (docs/targets.md; the YAML form is
``target.response_format``, ``target.request_template`` and ``target.response_mapping``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.app import option_group
from ragmeter.cli.options import pairs
from ragmeter.targets.formats import RESPONSE_FORMATS


def _template(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--request-template``: a JSON object, given inline or as the path of a .json file."""
    if value is None:
        return None
    text = value
    if not value.lstrip().startswith("{") and Path(value).is_file():
        text = Path(value).read_text(encoding="utf-8")
    try:
        template = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(
            f'not a JSON object ({exc}); e.g. \'{{"query": "{{question}}", "k": "{{top_k}}"}}\''
        ) from None
    if not isinstance(template, dict):
        raise click.BadParameter('must be a JSON object, e.g. \'{"query": "{question}"}\'')
    return template


target_options = option_group(
    click.option(
        "--response-format",
        "response_format",
        type=click.Choice(RESPONSE_FORMATS),
        help="How to read the target's replies: auto (the default: the first format that fits, "
        "named in the run), native (ragmeter's contract), llamaindex, langchain, haystack, "
        "openai, ragas or deepeval (docs/targets.md, 'Response formats').",
    ),
    click.option(
        "--request-template",
        "request_template",
        callback=_template,
        help="HTTP request body as a JSON object (or a .json file) with {question}, {top_k}, "
        '{case_id}, ... placeholders, e.g. \'{"query": "{question}"}\'.',
    ),
    click.option(
        "--response-map",
        "response_mapping",
        multiple=True,
        callback=pairs("="),
        help="FIELD=PATH: read a response field from a dotted path of the reply, e.g. "
        "answer=data.text, retrieved=hits, retrieved.id=chunk_id (repeatable; any target).",
    ),
)
