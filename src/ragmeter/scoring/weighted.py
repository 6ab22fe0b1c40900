"""The weighted score (seed 002): objectives fed by metrics, combined with weights.

Each objective is the mean of the metrics that feed it, every metric first turned into a 0-1
"higher is better" value according to its declared kind (never its data or its unit):

- ``binary``, ``proportion`` and ``score``: placed on 0-1 by the declared scale, then
  ``1 - value`` where lower is better (a rate of wrong answers), clipped to [0, 1];
- ``cost`` (USD per query) and ``duration`` (ms) become ``ref / (ref + value)``: 1 at zero, 0.5
  at the reference value, towards 0 as the value grows (references ``reference_cost_usd``,
  ``reference_latency_ms``);
- ``count`` is left out (a count has no 0-1 reading);
- a run stored before metrics declared kinds is read by unit: none is a proportion, ``ms`` a
  duration, ``USD`` a cost, ``0-5`` a score on 0-5, any other unit left out.

A feed is ``group:NAME`` (every metric of the group) or a metric name. A metric named explicitly
by one objective is not also taken by another objective's group feed. A metric measured on
less than the coverage floor of the cases it applies to (``coverage_floor``, as for the goals)
is left out of its objective and listed under ``under_coverage``: its value speaks for a few
cases, not the run. Weights are renormalised over the objectives that have a value; the others
are listed as missing.
"""

from __future__ import annotations

from ragmeter.errors import InputError
from ragmeter.run_record import MetricSummary, ObjectiveScore, Scorecard, WeightedScore

DEFAULT_WEIGHTS: dict[str, float] = {
    "accuracy": 0.30,
    "faithfulness": 0.20,
    "citation": 0.20,
    "retrieval": 0.15,
    "cost": 0.10,
    "latency": 0.05,
}

DEFAULT_OBJECTIVES: dict[str, list[str]] = {
    "accuracy": [
        "answer_correctness",
        "group:generation",
        "group:lexical",
        "group:semantic",
        "group:abstention",
    ],
    "faithfulness": ["faithfulness", "groundedness", "claim_support_rate", "group:grounding"],
    "citation": ["group:citation"],
    "retrieval": ["group:retrieval"],
    "cost": ["cost_per_query"],
    "latency": ["latency_p50"],
}


def unit_interval(
    summary: MetricSummary, ref_cost_usd: float, ref_latency_ms: float
) -> float | None:
    """The summary's value as a 0-1 "higher is better" number, or None if it has none."""
    value = summary.value
    kind = summary.value_kind()
    if value is None or kind is None:
        return None
    if kind in ("cost", "duration"):
        ref = ref_cost_usd if kind == "cost" else ref_latency_ms
        return ref / (ref + max(value, 0.0))
    scale = summary.value_scale()
    if kind not in ("binary", "proportion", "score") or scale is None:
        return None
    low, high = scale
    share = (value - low) / (high - low)
    oriented = share if summary.higher_is_better else 1.0 - share
    return min(1.0, max(0.0, oriented))


def _feeds(
    objectives: dict[str, list[str]], scorecard: Scorecard
) -> dict[str, list[MetricSummary]]:
    explicit = {feed for feeds in objectives.values() for feed in feeds if ":" not in feed}
    chosen: dict[str, list[MetricSummary]] = {}
    for objective, feeds in objectives.items():
        names: list[str] = []
        for feed in feeds:
            prefix, _, name = feed.partition(":")
            if name and prefix == "group":
                names += [n for n in scorecard.by_group.get(name, []) if n not in explicit]
            elif name:
                raise InputError(
                    f"objective {objective!r}: feed {feed!r} must be 'group:NAME' or a metric name"
                )
            else:
                names.append(feed)
        summaries = [scorecard.get(name) for name in dict.fromkeys(names)]
        chosen[objective] = [s for s in summaries if s is not None]
    return chosen


def weighted_score(
    scorecard: Scorecard,
    weights: dict[str, float] | None = None,
    objectives: dict[str, list[str]] | None = None,
    reference_cost_usd: float = 0.01,
    reference_latency_ms: float = 1000.0,
    coverage_floor: float = 0.0,
) -> WeightedScore:
    weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
    objectives = {**DEFAULT_OBJECTIVES, **(objectives or {})}
    unfed = [name for name in weights if name not in objectives]
    if unfed:
        raise InputError(
            f"weights name objectives with no feeds: {unfed}; add them under 'objectives'"
        )
    if any(weight < 0 for weight in weights.values()):
        raise InputError(f"objective weights must be >= 0, got {weights}")
    feeds = _feeds({name: objectives[name] for name in weights}, scorecard)
    values: dict[str, float | None] = {}
    detail: list[ObjectiveScore] = []
    for objective, weight in weights.items():
        thin = {
            s.name: s.coverage
            for s in feeds[objective]
            if s.value is not None and s.coverage is not None and s.coverage < coverage_floor
        }
        used = [
            (s.name, v)
            for s in feeds[objective]
            if s.name not in thin
            and (v := unit_interval(s, reference_cost_usd, reference_latency_ms)) is not None
        ]
        value = sum(v for _, v in used) / len(used) if used else None
        values[objective] = value
        detail.append(
            ObjectiveScore(
                name=objective,
                value=value,
                weight=weight,
                metrics=[name for name, _ in used],
                under_coverage=thin,
            )
        )
    present = {o: w for o, w in weights.items() if values[o] is not None and w > 0}
    total = sum(present.values())
    effective = {o: w / total for o, w in present.items()} if total > 0 else {}
    score = sum(effective[o] * (values[o] or 0.0) for o in effective) if effective else None
    return WeightedScore(
        score=score,
        objectives=values,
        weights=weights,
        effective_weights=effective,
        missing=[o for o in weights if values[o] is None],
        detail=detail,
    )
