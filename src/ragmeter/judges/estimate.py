"""Dry-run estimate of a judging pass: calls, tokens and cost, before anything is sent.

Prompt tokens come from rendering the real templates with the case's texts (characters / 4);
when a case has no response yet (a dry run happens before the target is asked) the answer and
the contexts are assumed (``answer_chars``, ``contexts`` x ``context_chars``). Completion tokens
use each task's typical output size. Repairs are not counted (at most one extra call per call).
"""

from __future__ import annotations

from ragmeter.judges.cost import Estimate, Price, price_for, tokens_of
from ragmeter.judges.tasks import TASKS
from ragmeter.judges.templates import load_prompt, render
from ragmeter.models import Case, Response


def estimate_judging(
    pairs: list[tuple[Case, Response | None]],
    model: str,
    *,
    tasks: list[str] | None = None,
    prices: dict[str, Price] | None = None,
    answer_chars: int = 400,
    contexts: int = 5,
    context_chars: int = 800,
    max_contexts: int = 10,
) -> Estimate:
    """Estimate judging ``pairs`` with judge ``model`` (its pinned id, e.g.
    ``openai:gpt-4o-mini``) on ``tasks`` (default: every judged task)."""
    chosen = [TASKS[name] for name in (tasks or list(TASKS))]
    calls = prompt_tokens = completion_tokens = 0
    for case, response in pairs:
        answer = response.answer if response is not None else "x" * answer_chars
        texts = (
            [c.text for c in response.retrieved[:max_contexts]]
            if response is not None
            else ["x" * context_chars] * contexts
        )
        values: dict[str, str | list[str]] = {
            "question": case.question,
            "answer": answer,
            "reference": case.reference_answer or "",
            "contexts": texts,
            "claims": [answer],  # the claims restate the answer, about as long
            "citations": "context 1",
        }
        for task in chosen:
            if "reference_answer" in task.requires and not case.reference_answer:
                continue
            for name in task.prompts:
                messages = render(load_prompt(name), values)
                prompt_tokens += sum(tokens_of(m["content"]) for m in messages)
                calls += 1
            completion_tokens += task.output_tokens
    price = price_for(model, prices)
    cost = (
        None
        if price is None
        else prompt_tokens / 1000.0 * price[0] + completion_tokens / 1000.0 * price[1]
    )
    return Estimate(calls, prompt_tokens, completion_tokens, cost, cases=len(pairs))
