"""Fitting a judge prompt into a judge's context window (the ``local:`` judge's ``n_ctx``).

A judge that states its context size (``context_window``, in tokens) gets every prompt measured
before it is sent (``count_tokens``: llama.cpp's tokenizer, else a conservative estimate).
When the prompt and the reply's ``max_tokens`` do not fit, the evidence (the ``contexts`` list)
is trimmed, never the question, answer, reference or claims: each context is cut into windows of
``WINDOW_WORDS`` words, the windows sharing the most words with the rest of the prompt (the
question, answer, reference, claims) are kept, best first, until the prompt fits; kept windows
stay in their own order, dropped stretches show as ``[...]``, and every context keeps its place
(its ``index``), so verdicts and citations per context still line up. The score's details then
say so (``evidence trimmed to fit 2048 tokens: 3 of 9 windows kept``). A prompt that does not
fit even without evidence is not sent: it fails as ``too_long``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ragmeter.judges.base import Message

WINDOW_WORDS = 80  # words per evidence window
MARGIN_TOKENS = 48  # room left for the chat template's own tokens and the tokenizer's slack
MESSAGE_OVERHEAD_TOKENS = 8  # role markers of one chat message (an estimate, kept on top)
GAP = "[...]"
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "the a an and or of to in on for with by at from as is are was were be been it its this "
        "that these those which who what when where how why does do did not no can could would "
        "should will shall may might has have had than then there their they them he she his "
        "her you your we our",
    )
)

Counter = Callable[[list[Message]], Awaitable[int]]


@dataclass(frozen=True)
class Fit:
    contexts: list[str]
    kept: int  # windows kept
    total: int  # windows the contexts had

    @property
    def trimmed(self) -> bool:
        return self.kept < self.total


def estimate_tokens(messages: list[Message]) -> int:
    """A conservative token count without a tokenizer: UTF-8 bytes / 3 per message (English
    runs near 4 bytes a token) plus the role markers."""
    return sum(
        math.ceil(len(m["content"].encode("utf-8")) / 3) + MESSAGE_OVERHEAD_TOKENS for m in messages
    )


def upper_bound_tokens(messages: list[Message]) -> int:
    """At most one token per UTF-8 byte (plus the role markers): a prompt under the window by
    this count fits without asking the tokenizer."""
    return sum(len(m["content"].encode("utf-8")) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def split_windows(text: str, size: int = WINDOW_WORDS) -> list[str]:
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)] or [""]


def select_windows(contexts: list[str], query: str, budget_chars: int) -> Fit:
    """The contexts cut to their best windows (most words shared with ``query``; ties: the
    higher-ranked context, then the earlier window) within ``budget_chars`` characters."""
    wanted = terms(query)
    split = [split_windows(text) for text in contexts]
    ranked = sorted(
        ((c, w) for c, windows in enumerate(split) for w in range(len(windows))),
        key=lambda cw: (-len(wanted & terms(split[cw[0]][cw[1]])), cw[0], cw[1]),
    )
    kept: set[tuple[int, int]] = set()
    used = 0
    for c, w in ranked:
        cost = len(split[c][w]) + len(GAP) + 2
        if used + cost <= budget_chars:
            kept.add((c, w))
            used += cost
    out: list[str] = []
    for c, windows in enumerate(split):
        parts: list[str] = []
        for w, window in enumerate(windows):
            if (c, w) in kept:
                parts.append(window)
            elif not parts or parts[-1] != GAP:
                parts.append(GAP)
        out.append(" ".join(parts))
    total = sum(len(windows) for windows in split)
    return Fit(out, len(kept), total)


async def fit_contexts(
    contexts: list[str],
    query: str,
    render: Callable[[list[str]], list[Message]],
    count: Counter,
    limit: int,
) -> tuple[list[Message], Fit | None, int]:
    """``render(contexts)`` made to fit ``limit`` prompt tokens: (messages, the fit when the
    evidence was trimmed else None, their token count). Raises ``OverflowError`` when even the
    prompt without evidence does not fit."""
    messages = render(contexts)
    if upper_bound_tokens(messages) <= limit:
        return messages, None, 0
    tokens = await count(messages)
    if tokens <= limit:
        return messages, None, tokens
    # the prompt with every window left out, then the evidence's tokens a character
    fit = select_windows(contexts, query, 0)
    messages = render(fit.contexts)
    base = await count(messages)
    if base > limit:
        raise OverflowError(
            f"the prompt takes {base} tokens with no evidence kept; the judge's context allows "
            f"{limit} for it"
        )
    per_char = max(tokens - base, 1) / max(sum(len(text) for text in contexts), 1)
    budget = int((limit - base) / per_char * 0.95)
    for _ in range(4):  # each pass measures again and cuts by what is still over
        fit = select_windows(contexts, query, budget)
        messages = render(fit.contexts)
        tokens = await count(messages)
        if tokens <= limit:
            return messages, fit, tokens
        budget = int(budget * min(0.9, (limit - base) / max(tokens - base, 1)))
    fit = select_windows(contexts, query, 0)
    messages = render(fit.contexts)
    return messages, fit, base
