"""The relation-level check of a claim: are its key terms found *together* in the context?

A hallucination often reuses the context's own words bound to another subject ("the Louvre is
in Lyon" where Lyon is another museum's city; "won the prize in 2019" where 2019 is the year of
another event). Term coverage reads these as supported, so each claim's **key terms** are
checked for their binding:

* key terms are the claim's numbers and dates (any reading, ``ragmeter.metrics.numbers``), its
  names (capitalised words; the claim's first word only when the context treats it as a name:
  ``context_names``) and its absolute qualifiers ("unlimited", "only", "always",
  "every", ...: ``ADDED_QUALIFIERS``);
* a **window** is one context sentence, joined with the sentence before it when it continues it
  (it opens with a pronoun: "She moved ...") and with its chunk's heading (a short first
  sentence, such as a title);
* a key term is **bound** when some window holds it together with another key term of the
  claim (a claim with a single name or number has nothing to bind it to and is not checked
  this way). A key term that the context has only in windows without another of the claim's
  key terms is **unbound**: the context binds it to something else;
* an absolute qualifier of the claim that its best window lacks is unbound too ("unlimited
  vacation" against "15 days of paid vacation");
* a **lost qualifier** is a word of the best window that narrows or hedges the claim's relation
  ("formerly", "only", "no longer", "nearly", "allegedly", "may", ...: ``LOST_QUALIFIERS``)
  placed just before one of the claim's terms, when the claim says neither it nor a word to the
  same effect ("almost" for "nearly", "will" for "planned", a hedge such as "can" for "may").

A number's **binding** (``Relation.number_binding``) is how close it sits to the rest of its
claim: for each number the context has, the best share of the claim's other terms in one window
holding it, the lowest over the claim's numbers. It is a signal of ``grounding_score`` with weight
0 (issue 32's cross-validation did not choose it: ``bench/grounding_cv.py``).

Everything is deterministic: the best window is the one holding the most claim terms (key terms
count twice), the earliest on a tie."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ragmeter.metrics import textmatch
from ragmeter.metrics.numbers import NumberMention
from ragmeter.text import STOP_WORDS, stem

ADDED_QUALIFIERS = frozenset(
    [
        "unlimited",
        "solely",
        "exclusively",
        "always",
        "every",
        "entire",
        "entirely",
        "completely",
        "fully",
        "guaranteed",
        "mandatory",
        "permanent",
        "permanently",
        "infinite",
        "unrestricted",
    ]
)
LOST_QUALIFIERS = frozenset(
    [
        "only",
        "formerly",
        "former",
        "previously",
        "ex",
        "nearly",
        "almost",
        "allegedly",
        "reportedly",
        "proposed",
        "planned",
        "rumored",
        "rumoured",
        "temporarily",
        "may",
        "might",
        "possibly",
        "probably",
        "likely",
    ]
)
# a hedge in the claim answers a hedge in the context ("may" for "might", "can" for "may")
_HEDGES = frozenset(
    ["may", "might", "can", "could", "possibly", "probably", "likely", "perhaps", "would"]
)
# words of the claim that say what a lost qualifier says
_SAME_QUALIFIER = {
    "nearly": frozenset(["almost", "nearly", "approximately", "about", "around", "roughly"]),
    "almost": frozenset(["almost", "nearly", "approximately", "about", "around", "roughly"]),
    "planned": frozenset(["will", "plan", "plans", "planned", "scheduled", "expected"]),
    "proposed": frozenset(["will", "proposed", "proposal", "planned", "plan"]),
    "former": frozenset(["former", "formerly", "previously", "was", "were", "once", "ex"]),
    "formerly": frozenset(["former", "formerly", "previously", "was", "were", "once", "ex"]),
    "previously": frozenset(["former", "formerly", "previously", "was", "were", "once"]),
    "only": frozenset(["only", "just", "solely", "exclusively", "alone"]),
}
# words after a lost qualifier that it reaches ("formerly a member": 'member' is 2 words on)
_QUALIFIER_REACH = 4
# a sentence opening with one of these continues the sentence before it
_CONTINUATION = re.compile(
    r"^\W*(he|she|it|they|his|her|its|their|this|these|those|there|the latter|the former|"
    r"the company|the group|the band|the team|the city|the museum)\b",
    re.IGNORECASE,
)
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][\w'-]*|[A-Z]{2,})")
# a heading: the short first sentence of a chunk ("Employee Handbook > Vacation")
MAX_HEADING_WORDS = 12


def continues(sentence: str) -> bool:
    """The sentence opens with a pronoun or a back-reference, so it continues the one before."""
    return bool(_CONTINUATION.match(sentence))


_LOWER = re.compile(r"(?<![\w'])[a-z][\w'-]*")


def name_evidence(sentence: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(words written capitalised after the sentence's first word, the first word when it is
    capitalised, words written in lower case), stemmed and lower-cased; stop words left out."""
    inside: set[str] = set()
    initial: set[str] = set()
    for match in _CAPITALISED.finditer(sentence):
        word = match.group(1).lower()
        if word in STOP_WORDS:
            continue
        first = not sentence[: match.start()].strip(" \"'([#*>-")
        (initial if first else inside).add(stem(word))
    lower = {stem(m.group(0)) for m in _LOWER.finditer(sentence)}
    return frozenset(inside), frozenset(initial), frozenset(lower - STOP_WORDS)


def context_names(
    evidence: list[tuple[frozenset[str], frozenset[str], frozenset[str]]],
) -> frozenset[str]:
    """Words the context treats as names: capitalised inside a sentence, or capitalised at a
    sentence's start and never written in lower case."""
    inside = frozenset().union(*(e[0] for e in evidence))
    initial = frozenset().union(*(e[1] for e in evidence))
    lower = frozenset().union(*(e[2] for e in evidence))
    return inside | (initial - lower)


@dataclass(frozen=True)
class KeyTerm:
    """One key term of a claim: how it is written and the context terms any reading of it
    matches (a number has one per reading)."""

    text: str
    readings: tuple[str, ...]
    qualifier: bool = False


def key_terms(
    claim: str,
    numbers: list[NumberMention],
    context_names: frozenset[str],
) -> list[KeyTerm]:
    """The claim's numbers and dates, names and absolute qualifiers (see the module doc)."""
    keys: list[KeyTerm] = []
    seen: set[str] = set()
    for mention in numbers:
        if mention.conversion:
            continue
        readings = tuple(dict.fromkeys("#" + k for k in mention.keys))
        if readings and readings[0] not in seen:
            seen.update(readings)
            keys.append(KeyTerm(mention.text, readings))
    number_spans = [(n.start, n.end) for n in numbers]
    for match in _CAPITALISED.finditer(claim):
        if any(start <= match.start() < end for start, end in number_spans):
            continue
        word = match.group(1).lower()
        if word in STOP_WORDS or word.isdigit():
            continue
        term = stem(word)
        first = not claim[: match.start()].strip(" \"'([#*>-")
        if first and term not in context_names:
            continue
        if term not in seen:
            seen.add(term)
            keys.append(KeyTerm(match.group(1), (term,)))
    for word in textmatch.words(claim):
        if word in ADDED_QUALIFIERS and word not in seen:
            seen.add(word)
            keys.append(KeyTerm(word, (word,), qualifier=True))
    return keys


@dataclass
class Relation:
    """The relation-level evidence of one claim."""

    best_window: int | None  # the sentence the best window ends at
    key_terms: list[str] = field(default_factory=list)
    unbound: list[str] = field(default_factory=list)  # key terms bound to something else
    absent: list[str] = field(default_factory=list)  # names and numbers not in the context
    lost_qualifiers: list[str] = field(default_factory=list)
    # a number's proximity to its subject: for each of the claim's numbers the context has, the
    # best share of the claim's other terms in one window holding it; the lowest of these
    # (None: no such number, or no other term)
    number_binding: float | None = None

    @property
    def violations(self) -> int:
        return len(self.unbound) + len(self.lost_qualifiers)


class Windows:
    """The context's windows (see the module doc) over its sentences' term sets."""

    def __init__(
        self,
        sentence_terms: list[frozenset[str]],
        previous: list[int | None],
        heading: list[int | None],
    ) -> None:
        self.sentence_terms = sentence_terms
        self.previous = previous  # the sentence a sentence continues, if any
        self.heading = heading  # its chunk's heading sentence, if any
        self.followers: dict[int, list[int]] = {}
        for position, before in enumerate(previous):
            if before is not None:
                self.followers.setdefault(before, []).append(position)
        for position, head in enumerate(heading):
            if head is not None and head != position:
                self.followers.setdefault(head, []).append(position)

    def members(self, position: int) -> list[int]:
        found = [position]
        before = self.previous[position]
        if before is not None:
            found.append(before)
        head = self.heading[position]
        if head is not None and head not in found:
            found.append(head)
        return found

    def containing(self, positions: list[int]) -> list[int]:
        """Windows (by their own sentence) that include any of ``positions``, in order."""
        found = set(positions)
        for position in positions:
            found.update(self.followers.get(position, ()))
        return sorted(found)


def _lost_qualifiers(sentence: str, claim_words: set[str], claim_terms: set[str]) -> list[str]:
    words = textmatch.words(sentence)
    lost = []
    for index, word in enumerate(words):
        if word not in LOST_QUALIFIERS or word in claim_words:
            continue
        if word in _HEDGES and claim_words & _HEDGES:
            continue
        if claim_words & _SAME_QUALIFIER.get(word, frozenset()):
            continue
        if word == "only" and index > 0 and words[index - 1] == "not":
            continue  # "not only X but Y" restricts nothing
        if word == "longer" and (index == 0 or words[index - 1] != "no"):
            continue
        reach = words[index + 1 : index + 1 + _QUALIFIER_REACH]
        if any(stem(w) in claim_terms for w in reach if w not in STOP_WORDS):
            lost.append(word)
    return lost


# labels of what a sentence holds besides the claim's terms (no term starts with NUL)
_KEY, _ASKED, _FOCUS = "\x00k", "\x00?", "\x00!"


class _Hits:
    """Which of the claim's labels (its terms, ``_KEY`` + i for key term i, ``_ASKED`` + term
    for the question's terms, ``_FOCUS``) each sentence and window holds, from the index. Only
    the ``CANDIDATES`` sentences sharing the most claim terms, and those holding a key term or
    the question's terms, are windows to weigh (a long context stays cheap)."""

    CANDIDATES = 32

    def __init__(
        self, windows: Windows, index: dict[str, list[int]], claim_terms: set[str]
    ) -> None:
        self.windows = windows
        self.index = index
        self.claim_terms = claim_terms
        self.counts: Counter[int] = Counter()
        for term in claim_terms:
            self.counts.update(index.get(term, ()))
        self.special: dict[int, set[str]] = {}
        self._sentence: dict[int, frozenset[str]] = {}
        self._window: dict[int, frozenset[str]] = {}

    def add(self, label: str, readings: tuple[str, ...]) -> None:
        for reading in readings:
            for position in self.index.get(reading, ()):
                self.special.setdefault(position, set()).add(label)

    def sentence(self, position: int) -> frozenset[str]:
        found = self._sentence.get(position)
        if found is None:
            own = self.claim_terms & self.windows.sentence_terms[position]
            found = frozenset(own | self.special.get(position, set()))
            self._sentence[position] = found
        return found

    def window(self, position: int) -> frozenset[str]:
        found = self._window.get(position)
        if found is None:
            found = frozenset().union(*(self.sentence(m) for m in self.windows.members(position)))
            self._window[position] = found
        return found

    def candidates(self) -> list[int]:
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        top = {position for position, _ in ranked[: self.CANDIDATES]}
        return self.windows.containing(sorted(top | set(self.special)))


def relation(
    claim: str,
    claim_terms: set[str],
    keys: list[KeyTerm],
    windows: Windows,
    index: dict[str, list[int]],
    sentences: list[str],
    focus: KeyTerm | None = None,
    asked: frozenset[str] = frozenset(),
) -> Relation:
    """The claim's best window, its unbound key terms and the qualifiers it lost; a span
    answer's ``focus`` must be in the window its question (``asked``: its terms) points to."""
    if focus is not None:
        keys = [k for k in keys if not set(k.readings) & set(focus.readings)]
    hits = _Hits(windows, index, claim_terms)
    for number, key in enumerate(keys):
        hits.add(f"{_KEY}{number}", key.readings)
    for term in asked:
        hits.add(_ASKED + term, (term,))
    if focus is not None:
        hits.add(_FOCUS, focus.readings)
    candidates = hits.candidates()

    def weight(label: str) -> int:
        return 2 if label.startswith(_KEY) else int(not label.startswith("\x00"))

    # the most claim terms (key terms count twice), the earliest on a tie
    best = max(candidates, key=lambda p: (sum(map(weight, hits.window(p))), -p), default=None)
    result = Relation(best, [k.text for k in keys])
    if best is None:
        return result
    if focus is not None:
        result.key_terms.insert(0, focus.text)
        found = any(_FOCUS in hits.sentence(p) for p in candidates)
        if found and not _focus_bound(hits, candidates):
            result.unbound.append(focus.text)
    plain = [f"{_KEY}{n}" for n, k in enumerate(keys) if not k.qualifier]
    others = frozenset(t for t in claim_terms if not t.startswith("#"))  # words, not numbers
    for number, key in enumerate(keys):
        label = f"{_KEY}{number}"
        if key.qualifier:
            if label not in hits.window(best):
                result.unbound.append(key.text)
            continue
        holding = [p for p in candidates if label in hits.window(p)]
        if not holding:
            result.absent.append(key.text)  # the coverage and number checks count it
            continue
        if key.readings[0].startswith("#") and others:
            share = max(len(others & hits.window(p)) for p in holding) / len(others)
            if result.number_binding is None or share < result.number_binding:
                result.number_binding = share
        anchors = {a for a in plain if a != label}
        if anchors and not any(anchors & hits.window(p) for p in holding):
            result.unbound.append(key.text)
    claim_words = set(textmatch.words(claim))
    for member in windows.members(best):
        result.lost_qualifiers.extend(_lost_qualifiers(sentences[member], claim_words, claim_terms))
    result.lost_qualifiers = list(dict.fromkeys(result.lost_qualifiers))
    return result


def _focus_bound(hits: _Hits, candidates: list[int]) -> bool:
    """Whether the span is in the sentence of a window the rest of the claim (the question)
    points to: one holding as many of the question's terms as any window does, then as many
    in its own sentence (the sentence a window continues may name another span)."""

    def asked(labels: Iterable[str]) -> int:
        return sum(label.startswith(_ASKED) for label in labels)

    counts = {p: (asked(hits.window(p)), asked(hits.sentence(p))) for p in candidates}
    most = max(counts.values(), default=(0, 0))
    return any(_FOCUS in hits.sentence(p) for p, n in counts.items() if n == most)
