"""Claims built from the question and a short answer.

"Yes", "No." or a bare span ("Penguin", "in 1998") asserts nothing on its own: the claim is
what the answer says about the question. ``question_claim`` turns such an answer into the
statement it asserts:

* a yes/no question answered "yes" ("Is the Louvre in Paris?" / "Yes, it is.") asserts the
  question's statement ("the Louvre in Paris"); answered "no", its negation (polarity "no");
* a wh-question answered with a span ("Who published the English edition?" / "Penguin")
  asserts the question with the span in place of the wh-phrase ("Penguin published the English
  edition"; "When did the museum open?" / "1998" gives "the museum open 1998"). The span is
  the claim's focus: it must be found in the context window the question points to
  (``relations``), so the right span from the wrong sentence is not supported.

An answer of more than ``MAX_SHORT_ANSWER_WORDS`` words, of more than one sentence, or that
repeats a content word of the question ("Vacation accrues monthly." to "How much vacation do I
get?") is checked as it is written, and so is any answer when there is no question."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ragmeter.metrics.claims import (
    Claim,
    analyse_sentence,
    content_tokens,
    fold,
    split_sentences,
)
from ragmeter.metrics.markers import strip_markers

MAX_SHORT_ANSWER_WORDS = 8
Polarity = Literal["yes", "no", "span"]

_YES = frozenset(["yes", "yeah", "yep", "yup", "correct", "true", "right", "indeed", "affirmative"])
_NO = frozenset(["no", "nope", "false", "incorrect", "negative", "not"])
_AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "am",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "has",
        "have",
        "had",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
    ]
)
# auxiliaries that stay in the statement ("Who is the CEO?" -> "the CEO is Jane Doe")
_COPULAS = frozenset(["is", "are", "was", "were"])
_WH = frozenset(["who", "whom", "whose", "what", "which", "where", "when", "why", "how"])
_HOW_WORDS = frozenset(["many", "much", "long", "old", "far", "big", "large", "tall", "often"])
_WORD = re.compile(r"\S+")
_ECHO_WORDS = 4  # "Yes, it is." / "No, he did not." carry at most this many words after the cue


@dataclass(frozen=True)
class QuestionClaim:
    """The statement a short answer asserts about its question."""

    text: str  # the statement checked against the context
    polarity: Polarity
    answer: str  # the answer as written (markers removed)
    focus: str | None = None  # a span answer: the span, which must sit where the question points


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _bare(word: str) -> str:
    return fold(word).strip(".,;:!?\"'()[]")


def _yes_no(answer: str) -> Polarity | None:
    words = [_bare(w) for w in _words(answer)]
    words = [w for w in words if w]
    if not words or len(words) > 1 + _ECHO_WORDS:
        return None
    if words[0] in _YES:
        return "yes"
    if words[0] in _NO:
        return "no"
    return None


def _statement(question: str) -> str:
    """A yes/no question without its leading auxiliary and question mark."""
    words = _words(question.strip().rstrip("?\uff1f").strip())
    if words and _bare(words[0]) in _AUXILIARIES:
        words = words[1:]
    return " ".join(words)


def _with_span(question: str, span: str) -> str | None:
    """The wh-question with ``span`` in place of its wh-phrase, or None without one."""
    words = _words(question.strip().rstrip("?\uff1f").strip())
    bare = [_bare(w) for w in words]
    at = next((i for i, w in enumerate(bare) if w in _WH), None)
    if at is None:
        return None
    end = at + 1
    if bare[at] == "how" and end < len(bare) and bare[end] in _HOW_WORDS:
        end += 1
    before, rest = words[:at], words[end:]
    if rest and _bare(rest[0]) in _AUXILIARIES and len(rest) > 1:
        auxiliary, rest = rest[0], rest[1:]
        tail = [auxiliary, span] if _bare(auxiliary) in _COPULAS else [span]
        return " ".join([*before, *rest, *tail])
    return " ".join([*before, span, *rest])  # "how many people live there" -> "500 people ..."


def _short_answer(answer: str) -> str | None:
    """The answer (markers removed, stripped) if it is short enough to be read through its
    question: one sentence, at most ``MAX_SHORT_ANSWER_WORDS`` words, not a question."""
    text = strip_markers(answer).text.strip()
    sentences = split_sentences(text)
    if len(sentences) != 1 or len(_words(text)) > MAX_SHORT_ANSWER_WORDS or text.endswith("?"):
        return None
    return text


def reads_question(answer: str) -> bool:
    """False when ``question_claim(question, answer)`` is None whatever the question: the
    answer is checked as it is written, so what is made of it does not depend on the
    question."""
    return _short_answer(answer) is not None


def question_claim(question: str | None, answer: str) -> QuestionClaim | None:
    """The statement a short answer asserts about ``question`` (see the module doc), or None
    when the answer is checked as written."""
    if not question or not question.strip():
        return None
    text = _short_answer(answer)
    if text is None:
        return None
    polarity = _yes_no(text)
    first = _bare(_words(question.strip())[0]) if question.strip() else ""
    if polarity is not None:
        if first not in _AUXILIARIES:
            return None
        plain = _statement(question)
        return QuestionClaim(plain, polarity, text) if plain else None
    item = analyse_sentence(text)
    if not isinstance(item, Claim):
        return None  # a refusal or a hedge: not a span
    if set(content_tokens(text)) & set(content_tokens(question)):
        return None  # it restates the question's terms: a sentence in its own right
    span = text.rstrip(".!")
    statement = _with_span(question, span)
    if statement is None:
        return None
    return QuestionClaim(statement, "span", text, focus=span)
