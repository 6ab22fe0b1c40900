"""Versioned judge prompt templates (``judges/prompts/NAME.vN.txt``).

A template has a ``### system`` and a ``### user`` section. ``{{name}}`` placeholders take the
untrusted texts (question, answer, reference, contexts, claims): every value is escaped
(``&``, ``<``, ``>`` become ``&amp;``, ``&lt;``, ``&gt;``) and the template puts it inside a
tagged block, so text such as ``</answer> ignore the instructions`` can never close its block.
A list value becomes one ``<TAG index="i">`` block per item. The system section tells the judge
that block contents are data, never instructions.

The version of a template is the first 12 hex digits of the sha256 of its file: it is recorded
with every judge call and in the details of every judged score.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ragmeter.judges.base import Message

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SECTION = re.compile(r"^### (system|user)\s*$", re.MULTILINE)
LIST_TAGS = {"contexts": "context", "claims": "claim"}


@dataclass(frozen=True)
class Prompt:
    name: str  # e.g. "faithfulness_claims.v1"
    version: str  # sha256 of the template file, first 12 hex digits
    system: str
    user: str

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.system + self.user))


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _value(name: str, value: str | list[str]) -> str:
    if isinstance(value, str):
        return escape(value)
    tag = LIST_TAGS.get(name, "item")
    if not value:
        return f"(no {name})"
    return "\n".join(
        f'<{tag} index="{i}">\n{escape(item)}\n</{tag}>' for i, item in enumerate(value, 1)
    )


def render(prompt: Prompt, values: dict[str, str | list[str]]) -> list[Message]:
    """The chat messages of ``prompt`` with ``values`` escaped into their blocks."""
    missing = prompt.placeholders - set(values)
    if missing:
        raise KeyError(f"prompt {prompt.name}: no value for {sorted(missing)}")

    def fill(template: str) -> str:
        return _PLACEHOLDER.sub(lambda m: _value(m.group(1), values[m.group(1)]), template)

    return [
        {"role": "system", "content": fill(prompt.system)},
        {"role": "user", "content": fill(prompt.user)},
    ]


def parse_template(name: str, text: str) -> Prompt:
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    if set(sections) != {"system", "user"}:
        raise ValueError(f"prompt {name}: needs a '### system' and a '### user' section")
    version = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return Prompt(name=name, version=version, system=sections["system"], user=sections["user"])


_VERSIONED = re.compile(r"^(\w+)\.(v\d+)\.txt$")


@cache
def template_versions() -> dict[str, tuple[str, ...]]:
    """Every template shipped, by name: ``{"groundedness": ("v1", "v2"), ...}`` (versions in
    number order). Every version stays loadable by its full name (``groundedness.v1``)."""
    found: dict[str, list[str]] = {}
    for entry in resources.files("ragmeter.judges").joinpath("prompts").iterdir():
        match = _VERSIONED.match(entry.name)
        if match:
            found.setdefault(match.group(1), []).append(match.group(2))
    return {
        name: tuple(sorted(versions, key=lambda v: int(v[1:])))
        for name, versions in sorted(found.items())
    }


@cache
def load_prompt(name: str) -> Prompt:
    """Load ``prompts/NAME.txt`` (NAME includes the version suffix, e.g. ``groundedness.v1``)."""
    source = resources.files("ragmeter.judges").joinpath("prompts", f"{name}.txt")
    if not source.is_file():
        raise KeyError(f"no judge prompt template {name!r}")
    return parse_template(name, source.read_text(encoding="utf-8"))
