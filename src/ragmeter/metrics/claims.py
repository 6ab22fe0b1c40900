"""Claim splitting and classification for the grounding metrics (seed 003, section C).

An answer is split into sentences (``split_sentences``); each sentence is then either a claim to
check or a non-claim with the reason it is not checked:

* ``question``: it ends with a question mark ("do you play tennis?");
* ``refusal``: it only refuses or hedges ("I don't know.", "I'm not sure."); a hedge in front of
  a statement is cut off and the statement is kept ("I'm not sure, but it aired in 1994");
* ``no content``: it has no content word left after stop words and fillers ("Yes!", "Wow.").

Citation markers ("[1]", "(Source: X)", "¹", ...: ``ragmeter.metrics.markers``) are removed
from the answer before it is split, so they are neither claims nor numbers.

Claims are classified by their indicators (``classify_claim``), most lenient first:

* ``general`` ("generally", "typically", "in general"): common knowledge, not checked;
* ``inference`` ("may", "might", "could", "possibly", "probably", "likely", ...): checked with a
  relaxed threshold;
* ``assertion`` (everything else; "is", "must", "will" are its indicators): checked strictly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ragmeter.metrics import textmatch
from ragmeter.metrics.markers import strip_markers
from ragmeter.text import tokenize

ClaimType = Literal["assertion", "inference", "general"]

# sentence ends: . ! ? (also full-width and ellipsis) followed by white space, or a new line,
# or a semicolon; the previous word is checked against abbreviations before splitting
_BOUNDARY = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u2026])[\"')\]]*\s+|\n+|;\s+")
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "etc",
        "eg",
        "ie",
        "e.g",
        "i.e",
        "inc",
        "ltd",
        "co",
        "corp",
        "no",
        "fig",
        "approx",
        "est",
        "dept",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "u.s",
        "u.k",
    ]
)
_LAST_WORD = re.compile(r"([\w.]+)\.\W*$")
# a tokenised decimal ("5 . 7 million", "12. 5"): a number of at most three digits, a period,
# one space, then a digit is not a sentence end (``numbers`` reads it both ways)
_DECIMAL_POINT = re.compile(r"(?<![\d.,])\d{1,3} ?\.$")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])\s+")

_GENERAL = re.compile(r"\b(generally|typically|in general)\b", re.IGNORECASE)
_INFERENCE = re.compile(
    r"\b(may|might|could|possibly|perhaps|probably|likely|presumably|suggests?|appears? to|"
    r"seems? to)\b",
    re.IGNORECASE,
)
_ASSERTION = re.compile(r"\b(is|are|was|were|must|will|always|never)\b", re.IGNORECASE)

# refusals and hedges, matched on the apostrophe-folded lower-case text
_REFUSAL = re.compile(
    r"\b(i\s*(?:do\s*not|don'?t|did\s*not|didn'?t)\s*know|i'?\s*m\s*not\s*(?:sure|certain)|"
    r"i\s*am\s*not\s*(?:sure|certain)|not\s*sure|no\s*idea|"
    r"(?:i\s*)?(?:cannot|can'?t|can\s*not|am\s*unable\s*to|could\s*not|couldn'?t)\s*"
    r"(?:answer|find|say|tell|help)|"
    r"(?:do\s*not|don'?t)\s*have\s*(?:enough\s*)?(?:information|data|details)|"
    r"not\s*enough\s*information|insufficient\s*information|no\s*(?:relevant\s*)?information|"
    r"(?:is\s*)?not\s*(?:mentioned|stated|covered)\s*in\s*the\s*\w+)\b"
)
_HEDGE_SEPARATOR = re.compile(r"^[\s,:;.!-]*(?:but|however|though|although)?[\s,:;-]*")

# conversational fillers that carry no checkable content (on top of the stop words)
FILLERS = frozenset(
    [
        "yes",
        "yeah",
        "yep",
        "no",
        "nope",
        "ok",
        "okay",
        "oh",
        "wow",
        "well",
        "hi",
        "hello",
        "hey",
        "thank",
        "thanks",
        "please",
        "sure",
        "really",
        "actually",
        "lol",
        "haha",
        "hmm",
        "um",
        "uh",
        "s",
        "t",
        "m",
        "d",
        "ll",
        "re",
        "ve",
        "nt",
    ]
)

NonClaimReason = Literal["question", "refusal", "no content"]


@dataclass(frozen=True, slots=True)
class Claim:
    """A checkable sentence, its type and the indicator word that decided the type."""

    text: str
    type: ClaimType
    indicator: str | None = None


@dataclass(frozen=True, slots=True)
class NonClaim:
    """A sentence that is not checked, and why."""

    text: str
    reason: NonClaimReason


def fold(text: str) -> str:
    """``textmatch.fold`` with split apostrophes joined ("it ' s" -> "it's"), for cue words."""
    return textmatch.fold(text).replace(" ' ", "'")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; keeps abbreviations ("U.S.", "Dr.", "j. r.") and tokenised
    decimals ("5 . 7") inside a sentence."""
    pieces: list[str] = []
    position = 0
    for match in _BOUNDARY.finditer(text):
        piece = text[position : match.start()]
        if (
            match.group(0) == " "
            and text[match.end() : match.end() + 1].isdigit()
            and _DECIMAL_POINT.search(piece)
        ):
            continue
        last = _LAST_WORD.search(piece) if match.group(0).strip() not in (";",) else None
        if (
            last
            and "\n" not in match.group(0)
            and (len(last.group(1)) == 1 or last.group(1).lower().rstrip(".") in _ABBREVIATIONS)
        ):
            continue  # an abbreviation or an initial: not a sentence end
        pieces.append(piece)
        position = match.end()
    pieces.append(text[position:])
    sentences = []
    for piece in pieces:
        piece = _BULLET.sub("", piece).strip()
        if piece:
            sentences.append(piece)
    return sentences


def content_tokens(text: str) -> list[str]:
    """Stemmed content words: ``tokenize`` minus conversational fillers."""
    return [token for token in tokenize(text) if token not in FILLERS]


def strip_hedge(sentence: str) -> tuple[str, bool]:
    """(what is left to check, whether a refusal or hedge was found).

    A sentence that only refuses or hedges leaves ``""``; a leading hedge is cut off ("I'm not
    sure, but it aired in 1994" leaves "it aired in 1994"); a hedge inside a statement leaves
    the whole sentence.
    """
    folded = fold(sentence)
    match = _REFUSAL.search(folded)
    if not match:
        return sentence, False
    before, after = folded[: match.start()], folded[match.end() :]
    if not content_tokens(before + " " + after):
        return "", True
    if not content_tokens(before):
        return _HEDGE_SEPARATOR.sub("", after, count=1).strip(), True
    return sentence, True


def classify_claim(sentence: str) -> tuple[ClaimType, str | None]:
    """(claim type, indicator) by the seed-003 indicators; an unmarked claim is an assertion."""
    for claim_type, pattern in (("general", _GENERAL), ("inference", _INFERENCE)):
        match = pattern.search(sentence)
        if match:
            return claim_type, match.group(1).lower()  # type: ignore[return-value]
    match = _ASSERTION.search(sentence)
    return "assertion", match.group(1).lower() if match else None


def analyse_sentence(sentence: str) -> Claim | NonClaim:
    """Decide whether one sentence is a claim (and of which type) or a non-claim (and why)."""
    if sentence.rstrip().endswith(("?", "\uff1f")):
        return NonClaim(sentence, "question")
    rest, hedged = strip_hedge(sentence)
    if hedged and not rest:
        return NonClaim(sentence, "refusal")
    if not content_tokens(rest):
        return NonClaim(sentence, "no content")
    claim_type, indicator = classify_claim(rest)
    return Claim(rest, claim_type, indicator)


def extract_claims(text: str, max_claims: int = 200) -> tuple[list[Claim], list[NonClaim]]:
    """Claims and non-claims of an answer, in order, its citation markers removed first; at
    most ``max_claims`` claims are kept."""
    claims: list[Claim] = []
    non_claims: list[NonClaim] = []
    for sentence in split_sentences(strip_markers(text).text):
        item = analyse_sentence(sentence)
        if isinstance(item, Claim):
            if len(claims) < max_claims:
                claims.append(item)
            hedge = _REFUSAL.search(fold(sentence))
            if hedge and item.text != sentence:  # a leading hedge was cut off: keep it apart
                non_claims.append(NonClaim(hedge.group(0), "refusal"))
        else:
            non_claims.append(item)
    return claims, non_claims
