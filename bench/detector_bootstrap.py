"""The detector metrics' bootstrap interval (``injection_auc``, ``tpr_at_fpr_*``) on large runs.

ragmeter draws each resample as a multinomial over the distinct scores of each class
(``ragmeter.scoring.roc``); the reference below draws it over the cases, as the textbook
stratified bootstrap does (and as ragmeter did before 2026-11-24). Both give the same
distribution; the bench times both on the same scores and prints the two intervals.

    python bench/detector_bootstrap.py                 # 100,000 and 1,000,000 cases
    python bench/detector_bootstrap.py --cases 20000 --distinct 1000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragmeter.scoring.roc import _class_counts, _percentiles, detector_interval, statistic_for

BLOCK_CELLS = 1_000_000


def case_bootstrap(
    aggregation: str, pos: np.ndarray, neg: np.ndarray, resamples: int, seed: int
) -> tuple[float, float] | None:
    """Multiplicities drawn per case (a multinomial over all n cases of a class)."""
    statistic = statistic_for(aggregation)
    grid = np.unique(np.concatenate([pos, neg]))
    rng = np.random.default_rng(seed)
    per_block = max(1, BLOCK_CELLS // max(len(grid), len(pos), len(neg)))
    stats = []
    for start in range(0, resamples, per_block):
        rows = min(per_block, resamples - start)
        w_pos = rng.multinomial(len(pos), np.full(len(pos), 1 / len(pos)), size=rows)
        w_neg = rng.multinomial(len(neg), np.full(len(neg), 1 / len(neg)), size=rows)
        stats.append(
            statistic(
                _class_counts(w_pos.astype(float), pos, grid),
                _class_counts(w_neg.astype(float), neg, grid),
            )
        )
    return _percentiles(np.concatenate(stats), 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--distinct", type=int, default=101, help="distinct scores")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    step = 1 / (args.distinct - 1)
    for n in args.cases:
        labels = rng.random(n) < 0.2
        raw = np.where(labels, rng.beta(4, 2, n), rng.beta(2, 4, n))
        scores = np.round(raw / step) * step
        pos, neg = scores[labels], scores[~labels]
        print(f"{n:,} cases ({labels.sum():,} positive), {len(np.unique(scores))} distinct scores")
        for aggregation in ("auc", "tpr_at_fpr_5"):
            started = time.perf_counter()
            ours = detector_interval(aggregation, pos, neg, resamples=args.resamples, seed=1)
            ours_s = time.perf_counter() - started
            started = time.perf_counter()
            theirs = case_bootstrap(aggregation, pos, neg, args.resamples, seed=1)
            theirs_s = time.perf_counter() - started
            assert ours is not None and theirs is not None
            print(
                f"  {aggregation:<13} ragmeter {ours_s:7.2f} s [{ours[0]:.4f}, {ours[1]:.4f}]   "
                f"per-case draws {theirs_s:7.2f} s [{theirs[0]:.4f}, {theirs[1]:.4f}]   "
                f"speed-up x{theirs_s / ours_s:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
