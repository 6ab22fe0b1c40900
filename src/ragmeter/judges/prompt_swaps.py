"""Another prompt version of a judged task, for the spot check (seed 004: "a spot check with
another prompt version of the same judge").

``--spot-check-prompt NAME=VERSION`` names a judged task (``groundedness``, ``classification``)
or one of its templates (``faithfulness_claims``) and a version shipped in
``judges/prompts`` (``v1``, or the full ``groundedness.v1``). A task name swaps every template
of the task. :func:`prompt_swaps` turns the choices into ``{the run's template: the spot
check's}`` (``{"groundedness.v2": "groundedness.v1"}``) and raises
:class:`~ragmeter.errors.JudgeConfigError` naming the valid names and versions; the
judge session then asks the swapped template wherever a task asks the run's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ragmeter.errors import JudgeConfigError
from ragmeter.judges.tasks import TASKS
from ragmeter.judges.templates import template_versions

OPTION = "--spot-check-prompt"


def _base(template: str) -> str:
    return template.rsplit(".", 1)[0]


def _templates(tasks: Iterable[str]) -> dict[str, str]:
    """{template name without version: the run's template} of the run's tasks."""
    return {_base(prompt): prompt for task in tasks for prompt in TASKS[task].prompts}


def prompt_swaps(choices: Mapping[str, str], tasks: Iterable[str] | None = None) -> dict[str, str]:
    """``{run's template: spot-check template}`` for ``choices`` (NAME -> VERSION) over the
    judged ``tasks`` the run runs (None: all). Raises JudgeConfigError for a name that is
    neither a task nor a template of one, or a version that is not shipped (both with the valid
    choices)."""
    run_tasks = list(tasks) if tasks is not None else list(TASKS)
    templates = _templates(run_tasks)
    shipped = template_versions()
    swaps: dict[str, str] = {}
    for name, version in choices.items():
        if name in run_tasks:
            bases = [_base(prompt) for prompt in TASKS[name].prompts]
        elif name in templates:
            bases = [name]
        else:
            known = sorted(set(run_tasks) | set(templates))
            raise JudgeConfigError(
                f"{OPTION} {name}={version}: no judged task or prompt {name!r} in this run; "
                f"name one of: {', '.join(known)}"
            )
        for base in bases:
            wanted = version.strip().removeprefix(f"{base}.")
            versions = shipped.get(base, ())
            if wanted not in versions:
                raise JudgeConfigError(
                    f"{OPTION} {name}={version}: prompt {base} has no version {wanted!r}; "
                    f"its versions: {', '.join(versions)} (the run uses {templates[base]})"
                )
            swaps[templates[base]] = f"{base}.{wanted}"
    return swaps


def swapped_tasks(swaps: Mapping[str, str], tasks: Iterable[str] | None = None) -> list[str]:
    """The tasks (of ``tasks``, None: all) that ask a template ``swaps`` replaces."""
    return [
        name
        for name in (tasks if tasks is not None else TASKS)
        if any(prompt in swaps for prompt in TASKS[name].prompts)
    ]
