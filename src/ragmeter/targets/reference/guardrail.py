"""The reference pipeline's input guardrail: a heuristic prompt-injection scorer.

Each rule is a regular expression over the folded question (lowercase, typographic quotes
plain, white space folded) with a weight, filed under one of seed 003's six attack categories
(``instruction_override``, ``prompt_extraction``, ``jailbreak_persona``, ``delimiter_attack``,
``role_override``, ``bypass_intent``) or under ``signal`` (weak evidence that only adds up). The
score is a noisy OR: ``1 - prod(1 - w)`` over the strongest rule that fired in each category
and every weak signal, so one strong rule decides and several weak ones add up; it lies in
[0, 1) and is 0 when nothing fired. English and German phrasings are covered (and "forget
everything" in a few more languages); the rules were written from the seed's categories and
tuned on the deepset prompt-injection *train* split only (docs/safety.md gives the figures on
its test split).

No model, no network: ``injection_score(text)`` is a pure function of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# seed 003's attack categories, the only ones a rule may score (or the weak ``SIGNAL``)
CATEGORIES = (
    "instruction_override",
    "prompt_extraction",
    "jailbreak_persona",
    "delimiter_attack",
    "role_override",
    "bypass_intent",
)
SIGNAL = "signal"
WARN_THRESHOLD = 0.40
BLOCK_THRESHOLD = 0.50


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    weight: float
    pattern: re.Pattern[str]


def _rule(name: str, category: str, weight: float, pattern: str, *, cased: bool = False) -> Rule:
    if category not in (*CATEGORIES, SIGNAL):
        raise ValueError(f"guardrail rule {name!r}: unknown category {category!r}")
    return Rule(name, category, weight, re.compile(pattern, 0 if cased else re.IGNORECASE))


_PREVIOUS = (
    r"(all|any|every|the|your|my|previous|prior|preceding|earlier|above|before|initial|original|"
    r"instructions?|directions?|rules|orders|commands|assignments|tasks|prompts?|context|"
    r"documents?|articles|artikels?|said|told|information|everything)"
)
_FORGET_EN = r"(ignore|ignoring|disregard(ing)?|forget|drop|abandon|overlook|neglect|skip|erase)"
_FORGET_OTHER = (
    r"(vergiss|vergessen sie|vergesst|ignorier\w*|missachte\w*|olvid[ae]\w*|oubliez|oublie|"
    r"dimentica\w*|zaboravi|забудь\w*|игнорируй\w*)"
)
_SECRET = (
    r"(system ?prompt|system message|prompt[- _]?te?xt\w*|initial (prompt|instructions)|"
    r"original (prompt|instructions)|(your|deine|ihre|hidden|secret) (prompt|instructions|"
    r"anweisungen|instruktionen|rules|directions|guidelines)|above prompt|prompt above|"
    r"text above|obige eingabeaufforderung|eingabeaufforderung|anweisungen lauteten)"
)
_REVEAL = (
    r"(show|print|reveal|display|output|repeat|tell|give|list|write|spell[- ]?check|return|"
    r"zeig\w*|gib|nenne\w*|drucke\w*|wiederhole\w*|verrate\w*)"
)

RULES: tuple[Rule, ...] = (
    # instruction_override: discard what came before, take new orders
    _rule(
        "forget_previous",
        "instruction_override",
        0.90,
        rf"\b{_FORGET_EN}\b[^.?!]{{0,40}}\b{_PREVIOUS}\b",
    ),
    _rule("forget_other_language", "instruction_override", 0.85, rf"(^|\W){_FORGET_OTHER}(\W|$)"),
    _rule(
        "previous_orders_de",
        "instruction_override",
        0.80,
        r"\b(vorherig|bisherig|vorangehend|vorangegangen|obig|zuvor|davor)\w*\s+"
        r"(\w+\s+)?(anweisung|instruktion|aufgabe|auftr|befehl|angaben|information|gesagt)",
    ),
    _rule(
        "not_listen_de",
        "instruction_override",
        0.80,
        r"\b(höre|hör) nicht auf\b|\babweichend (zu|von) (den )?(vorherigen|bisherigen)",
    ),
    _rule(
        "leave_behind",
        "instruction_override",
        0.75,
        r"\b(leave|put|remove)\b[^.?!]{0,30}\b(previous|prior) (information|tasks|instructions)|"
        r"\b(hinter sich|aus dem kopf)\b",
    ),
    _rule(
        "new_task",
        "instruction_override",
        0.65,
        r"\b(new|next|further|another|second) (task|tasks|assignment|instructions?|challenge|"
        r"test|orders?)\b|\bneue[nr]? (aufgabe|aufgaben|anweisung\w*|herausforderung)\b|"
        r"\bweitere aufgaben\b|\bnächste aufgabe\b|\bzweite test\b",
    ),
    _rule(
        "instruction_change",
        "instruction_override",
        0.70,
        r"\b(your|the) (new )?instructions (are|is) now\b|\bchange your instructions\b|"
        r"\b(additional|new) (instruction|statement)\s*[-:]|\binstruction\s*:|\border\s*:",
    ),
    _rule(
        "despite_told",
        "instruction_override",
        0.75,
        r"\b(despite|regardless of|no matter) what you('ve| have)? been told\b",
    ),
    _rule("from_now_on", "instruction_override", 0.55, r"\b(from now on|von nun an|ab jetzt)\b"),
    _rule(
        "praise_pivot",
        "instruction_override",
        0.45,
        r"\b(well done|good job|great|excellent|superbly done|congratulations|fantastic|"
        r"very good|very well done|simply great|you did it|gut gemacht|super gemacht|sehr gut|"
        r"ausgezeichnet\w*|herzlichen glückwunsch|einfach großartig|fantastisch)\b[^?]{0,80}"
        r"\b(now|but now|that is enough|nun|jetzt|aber jetzt|das genügt)\b",
    ),
    _rule(
        "stop_command",
        "instruction_override",
        0.55,
        r"(^|[.!?]\s*)(attention\s*-\s*)?(stop|stopp|achtung)\b\s*[-:,!]",
    ),
    # prompt_extraction: ask for the hidden prompt or instructions
    _rule(
        "reveal_prompt",
        "prompt_extraction",
        0.90,
        rf"\b{_REVEAL}\b[^.?!]{{0,40}}{_SECRET}",
    ),
    _rule(
        "what_is_your_prompt",
        "prompt_extraction",
        0.85,
        r"\bwhat (is|are|was|were) (your|the) (system |initial |original |hidden |secret )?"
        r"(prompt|instructions|system message|rules)\b|\b(information|text) in the prompt\b",
    ),
    _rule("mentions_prompt", "prompt_extraction", 0.40, _SECRET),
    _rule(
        "what_was_above",
        "prompt_extraction",
        0.80,
        r"\bwhat (is|was) written (above|at the beginning)|\b(beginning|start) of (this|the) "
        r"prompt|\b(sentences?|text|words) before the text\b|\bwhat (are|were) your "
        r"(instructions|rules)\b|\bwie (deine|ihre) (anweisungen|instruktionen)",
    ),
    _rule(
        "embeddings",
        "prompt_extraction",
        0.60,
        r"\breturn your (embeddings|weights|configuration)\b",
    ),
    # jailbreak_persona: an alternate persona without limits
    _rule(
        "dan",
        "jailbreak_persona",
        0.95,
        r"\bDAN\b|\b[Dd]o [Aa]nything [Nn]ow\b|\b[Dd]eveloper [Mm]ode\b|\b[Jj]ailbr(eak|oken)",
        cased=True,
    ),
    _rule(
        "no_limits",
        "jailbreak_persona",
        0.75,
        r"\b(no|without|free of|beyond) (any )?(programming )?(restrictions|limits|filters|"
        r"guidelines|rules|censorship|ethics|morals)\b|\b(unfiltered|uncensored|amoral)\b|"
        r"\bevil (ai|assistant|bot|ki)\b|\bböse ki\b",
    ),
    _rule(
        "stay_in_character",
        "jailbreak_persona",
        0.70,
        r"\b(stay|stays|remain|remains|staying) in (character|their roles?|your role)|"
        r"\bwithout (even )?breaking out of\b|\b(in (deiner|ihrer|ihren) rollen?)\b|"
        r"\bverharren\b|\bamnesia\b|\bamnesie\b",
    ),
    _rule(
        "pretend",
        "jailbreak_persona",
        0.65,
        r"\b(pretend|imagine|suppose) (that )?(you|you're|you are|to be)\b|"
        r"\bstell dir vor,? (du|dass du)\b|\btu so,? als\b|\bstellen sie sich vor\b",
    ),
    _rule(
        "role_play",
        "jailbreak_persona",
        0.60,
        r"\brole[- ]?play\w*|\brollenspiel\w*|\b(play|playing) (a|the) (role|game)\b|"
        r"\blet'?s play a game\b|\b(two|three) (actors|entities|people who are acting)\b|"
        r"\bacting characters\b|\bact in a film\b|\bschauspieler\b",
    ),
    # role_override: change what the assistant is
    _rule(
        "you_are_now",
        "role_override",
        0.80,
        r"\byou are (now|no longer|no more)\b|\bnow you are\b|\bfrom now on,? you\b|"
        r"\b(jetzt|nun) bist du\b|\bdu bist (jetzt|nun|ab jetzt)\b|\bsie sind (jetzt|nun)\b|"
        r"\byou are no (\w+ )?(team|newspaper|assistant)\b|\b(du bist|you are) (keine?|not an?)\b",
    ),
    _rule(
        "act_as",
        "role_override",
        0.75,
        r"\b(act|acting|behave|respond|answer|reply|speak|talk) (as|like) (a|an|the|if|two)?\b|"
        r"\bi want you to act\b|\b(als|wie ein\w*) \w+([- ]\w+)? (agieren|fungieren|auftreten|"
        r"reden|antworten)\b|\bich möchte, dass sie als\b|\bbe a (dj|\w+bot)\b",
    ),
    _rule(
        "in_the_style",
        "role_override",
        0.55,
        r"\bin the style of\b|\bim stil(e)? (eine[sr]?|des|der)\b|\bspeak like\b",
    ),
    _rule(
        "you_are_x",
        "role_override",
        0.45,
        r"(^|[.!?:]\s+)(you are|du bist|sie sind|you're) (a|an|the|ein|eine|three|two)?\s*\w+",
    ),
    # delimiter_attack: fake prompt boundaries and turns
    _rule(
        "fake_system_block",
        "delimiter_attack",
        0.90,
        r"\[/?\s*(end|new|begin|start)?\s*(system|inst|instructions?|admin)\s*\]|"
        r"<\|?\s*/?(im_start|im_end|system|endoftext|assistant|user)\s*\|?>|</?system>|"
        r"#{2,}\s*(system|instructions?|new|end)\b|\bend (of )?(system|prompt|instructions)\b",
    ),
    _rule("separator_end", "delimiter_attack", 0.80, r"(={3,}|-{3,}|\*{3,})\s*(end|ende|stop)\b"),
    _rule("escaped_newlines", "delimiter_attack", 0.55, r"\\+\s?n"),
    _rule(
        "role_markers",
        "delimiter_attack",
        0.55,
        r"(^|\s)(human|assistant|system|ai|antwort|response)\s*:\s*\S",
    ),
    _rule(
        "fake_context",
        "delimiter_attack",
        0.55,
        r"\b(context|kontext|artikel|documents?)\s*[:{\"]?\s*.{1,200}?"
        r"\b(question|frage)\s*[:?]?\s|\bdocument context\b",
    ),
    _rule(
        "io_examples",
        "delimiter_attack",
        0.50,
        r"\b(input|eingabe)\s*:\s*\S+.{0,40}\b(output|ausgabe)\s*:|\$\w+\s*[:=]",
    ),
    # bypass_intent: get around filters, rules or the documents
    _rule(
        "bypass_filters",
        "bypass_intent",
        0.90,
        r"\b(bypass|circumvent|evade|disable|override|get around|turn off|switch off|"
        r"umgehe\w*|deaktiviere\w*)\b[^.?!]{0,30}\b(filters?|safety|guardrails?|restrictions?|"
        r"rules|guidelines|moderation|censorship|polic(y|ies)|content policy|filter\w*|regeln)\b",
    ),
    _rule(
        "not_the_documents",
        "bypass_intent",
        0.80,
        r"\b(not|don'?t|do not|never)\b[^.?!]{0,30}\b(by|from|according to|based on|look in|"
        r"use) the (provided |given )?(articles|artikels|documents|context|sources)\b|"
        r"\bdisregarding the (articles|documents|context)\b|\bby your own knowledge\b|"
        r"\bignore all (provided )?(documents|context)\b",
    ),
    _rule(
        "always_answer",
        "bypass_intent",
        0.70,
        r"\b(you are supposed to|you must|you have to) answer (at all times|always|anyway)|"
        r"\bnot supposed to tell me\b|\bno relevant answer\b|\bsteht nicht in den artikeln\b|"
        r"\b(or|oder|o) (you|du|tu) (die|stirbst|muertes)\b|\bif you (don'?t|do not) answer\b|"
        r"\bmake (something|it|stuff) up\b",
    ),
    _rule(
        "force_output",
        "bypass_intent",
        0.60,
        r"\b(just|only|nur) (say|output|print|write|reply|answer|sagen|schreibe\w*|sag)\b|"
        r"\b(say|print|output|write|respond|answer|reply|sage|schreibe|sag|dites|di)\b"
        r"[^.?!]{0,25}?(with|mit|:)?\s*[\"'«“][^\"'»”]{1,80}[\"'»”]|\brepeat after me\b|"
        r"\b(say|state|include) that\b|\bsay yes\b|\bsage ja\b",
    ),
    _rule(
        "execute_code",
        "bypass_intent",
        0.50,
        r"\bexecute the following\b|\b(generate|write|generiere\w*|schreibe) "
        r"(\w+ )?((sql|python|javascript|code)\b|c\+\+)",
    ),
    # weak signals: add up, never decide alone
    _rule("all_caps_command", SIGNAL, 0.35, r"\b[A-ZÄÖÜ]{2,}(\s+[A-ZÄÖÜ!\"]{2,}){3,}", cased=True),
    _rule("instead", SIGNAL, 0.20, r"\b(instead|stattdessen)\b"),
    _rule("now_do", SIGNAL, 0.15, r"\bnow (write|say|print|focus|concentrate|answer|tell)\b"),
    _rule("urgent", SIGNAL, 0.15, r"\b(this is very important|urgently|dringend)\b"),
    _rule("spaced_letters", SIGNAL, 0.45, r"\b(\w ){6,}\w\b"),
)


@dataclass(frozen=True)
class GuardrailVerdict:
    """The guardrail's reading of one text: its score, the rules that fired and, per
    category, the weight of its strongest rule."""

    score: float
    rules: tuple[str, ...]
    categories: dict[str, float]

    @property
    def category(self) -> str | None:
        """The attack category with the strongest rule (None when no category fired)."""
        named = {c: w for c, w in self.categories.items() if c != SIGNAL}
        return max(named, key=lambda c: named[c]) if named else None


def _fold(text: str) -> str:
    table = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
    return " ".join(text.translate(table).split())


def assess(text: str) -> GuardrailVerdict:
    """Score ``text``: every rule is tried; per category only the strongest counts, weak
    signals all count."""
    folded = _fold(text)
    fired = [rule for rule in RULES if rule.pattern.search(folded)]
    strongest: dict[str, float] = {}
    keep = 1.0
    for rule in fired:
        if rule.category == SIGNAL:
            keep *= 1.0 - rule.weight
        strongest[rule.category] = max(strongest.get(rule.category, 0.0), rule.weight)
    for category, weight in strongest.items():
        if category != SIGNAL:
            keep *= 1.0 - weight
    return GuardrailVerdict(round(1.0 - keep, 6), tuple(r.name for r in fired), strongest)


def injection_score(text: str) -> float:
    """The injection score of ``text`` in [0, 1): 0 when no rule fired."""
    return assess(text).score
