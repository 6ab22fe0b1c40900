"""Judges that must quote, measured: a local judge verifies human-labelled RAG claims with
``faithfulness_verify.v2`` (verdict and supporting quote), and its verdicts are scored against
the human labels twice: as the judge gave them, and after the quote check
(``ragmeter.judges.quotes``: a supported verdict whose quote is not in the passages becomes
unsupported). Also the tokens each verdict costs.

Data: the AttributionBench development halves in ../shared/datasets/grounding_rag/ (a question,
the cited passages, one claim of the answer, a human support label; see the manifests). A
seeded, label-balanced sample of ``--per-family`` claims from each half (id, ood); the test
halves are not used. Each claim is asked alone (one claim a call), so the figure is the
verification step of ``faithfulness``, without the claim extraction before it.

Figures per family and in all, for the raw verdicts and the quote-checked ones: accuracy,
balanced accuracy (for a 0/1 prediction the ROC AUC is the balanced accuracy), Cohen's kappa
with the human label; how many supported verdicts were overturned and how many of those the
humans labelled unsupported (overturned rightly); invalid replies (no verdict after ragmeter's
one repair) count as unsupported and are reported.

    python bench/judge_quotes.py --model ~/.cache/ragmeter-wheels/MODEL.gguf   # local: judge
    python bench/judge_quotes.py --judge http://127.0.0.1:8080/v1#model   # any judge spec
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragmeter.judges import JudgeSettings
from ragmeter.judges import schemas as s
from ragmeter.judges.quotes import quote_found
from ragmeter.judges.session import JudgeFailure, JudgeSession

DATA = (
    Path(os.environ.get("RAGMETER_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared"))
    / "datasets"
    / "grounding_rag"
)
FAMILIES = {"id": "attributionbench_id_dev.jsonl", "ood": "attributionbench_ood_dev.jsonl"}


def sample(family: str, n: int, seed: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / FAMILIES[family]).read_text().splitlines()]
    rng = random.Random(seed)
    chosen: list[dict[str, Any]] = []
    for label in (1, 0):
        pool = [row for row in rows if row["label"] == label]
        chosen += rng.sample(pool, min(n // 2, len(pool)))
    rng.shuffle(chosen)
    return chosen


async def verify(session: JudgeSession, row: dict[str, Any]) -> dict[str, Any]:
    try:
        verdict = await session.ask(
            "faithfulness_verify.v2",
            {"contexts": row["contexts"], "claims": [row["answer"]]},
            s.ClaimVerdicts,
            case_id=row["id"],
            max_tokens=160,
            check=lambda v: s.indexed(v.verdicts, 1, "claim"),
            items=("verdicts", 1),
        )
    except JudgeFailure as exc:
        return {"label": row["label"], "raw": 0, "checked": 0, "invalid": exc.error_type}
    given = verdict.value.verdicts[0]
    found = given.verdict == 1 and quote_found(given.quote, row["contexts"])
    return {"label": row["label"], "raw": given.verdict, "checked": int(found), "invalid": None}


def agreement(pairs: list[tuple[int, int]]) -> dict[str, float]:
    n = len(pairs)
    tp = sum(1 for p, y in pairs if p and y)
    tn = sum(1 for p, y in pairs if not p and not y)
    positives = sum(y for _, y in pairs)
    negatives = n - positives
    accuracy = (tp + tn) / n
    tpr = tp / positives if positives else float("nan")
    tnr = tn / negatives if negatives else float("nan")
    predicted = sum(p for p, _ in pairs) / n
    expected = predicted * positives / n + (1 - predicted) * negatives / n
    kappa = (accuracy - expected) / (1 - expected) if expected < 1 else float("nan")
    return {"accuracy": accuracy, "balanced": (tpr + tnr) / 2, "kappa": kappa}


def report(name: str, rows: list[dict[str, Any]]) -> None:
    raw = agreement([(r["raw"], r["label"]) for r in rows])
    checked = agreement([(r["checked"], r["label"]) for r in rows])
    overturned = [r for r in rows if r["raw"] == 1 and r["checked"] == 0]
    rightly = sum(1 for r in overturned if r["label"] == 0)
    invalid = Counter(r["invalid"] for r in rows if r["invalid"])
    print(
        f"{name:<4} n={len(rows):<4} raw: acc {raw['accuracy']:.3f} AUC {raw['balanced']:.3f} "
        f"kappa {raw['kappa']:.3f} | quote-checked: acc {checked['accuracy']:.3f} AUC "
        f"{checked['balanced']:.3f} kappa {checked['kappa']:.3f} | overturned "
        f"{len(overturned)} ({rightly} labelled unsupported) | invalid {dict(invalid) or 0}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a .gguf file for the local: judge")
    parser.add_argument("--judge", help="a judge spec (default: local:MODEL)")
    parser.add_argument("--per-family", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    spec = args.judge or f"local:{Path(args.model).expanduser()}"
    judge = JudgeSettings(spec=spec).build()
    session = JudgeSession(judge, None, concurrency=1)
    print(f"judge {judge.model}; {args.per_family} claims a family, seed {args.seed}")
    results: dict[str, list[dict[str, Any]]] = {}
    started = time.perf_counter()
    try:
        for family in FAMILIES:
            rows = sample(family, args.per_family, args.seed)
            results[family] = []
            for row in rows:  # one line a verdict, so a stopped run still shows its figures
                results[family].append(await verify(session, row))
                print(json.dumps({"family": family, **results[family][-1]}), flush=True)
            report(family, results[family])
    finally:
        await judge.aclose()
    elapsed = time.perf_counter() - started
    every = [row for rows in results.values() for row in rows]
    report("all", every)
    budget = session.budget
    print(
        f"tokens a verdict: {budget.prompt_tokens / len(every):.0f} prompt + "
        f"{budget.completion_tokens / len(every):.0f} completion; {session.requests} calls "
        f"(repairs included) in {elapsed:.0f} s, load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
