"""Statistical properties of the scoring layer, checked by seeded simulation."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.base import Metric
from ragmeter.scoring.bootstrap import Partition, summarize
from ragmeter.scoring.stats import (
    binomial_sf,
    cohens_dz,
    mcnemar_exact,
    paired_bootstrap_interval,
    quantile_interval,
    sign_flip_test,
)
from ragmeter.scoring.table import ScoreTable


def _metrics(count: int, aggregation: str = "mean") -> list[Metric]:
    return [
        Metric(f"m{j}", "retrieval", lambda c, r: 0.0, aggregation=aggregation, kind="score")
        for j in range(count)
    ]


def _coverage(draw: np.ndarray, truth: float, seeds: int = 20) -> float:
    """Share of simulated data sets (columns) whose interval holds ``truth``."""
    hits = 0
    total = 0
    per_seed = draw.shape[1] // seeds
    for s in range(seeds):
        block = draw[:, s * per_seed : (s + 1) * per_seed]
        metrics = _metrics(per_seed)
        table = ScoreTable(
            [str(i) for i in range(block.shape[0])],
            [m.name for m in metrics],
            block,
            np.zeros(block.shape, dtype=np.int8),
        )
        (whole,) = summarize(table, metrics, [Partition.whole(block.shape[0])], 1000, seed=s)
        for summary in whole[0]:
            assert summary.ci_low is not None and summary.ci_high is not None
            hits += summary.ci_low <= truth <= summary.ci_high
            total += 1
    return hits / total


def test_bootstrap_covers_the_true_mean_at_the_nominal_rate() -> None:
    rng = np.random.default_rng(42)
    normal = rng.normal(0.5, 0.2, size=(80, 400))
    assert 0.92 <= _coverage(normal, 0.5) <= 0.98
    binary = (rng.random(size=(100, 400)) < 0.3).astype(float)
    assert 0.92 <= _coverage(binary, 0.3) <= 0.98


def test_breakdown_groups_get_their_own_intervals_and_counts() -> None:
    rng = np.random.default_rng(0)
    values = np.where(np.arange(300)[:, None] < 100, 0.9, 0.1) + rng.normal(0, 0.05, (300, 1))
    metrics = _metrics(1)
    table = ScoreTable([str(i) for i in range(300)], ["m0"], values, np.zeros((300, 1), np.int8))
    labels = [["a"] if i < 100 else ["b"] for i in range(300)]
    whole, split = summarize(
        table, metrics, [Partition.whole(300), Partition.from_labels("x", labels)], 500, 1
    )
    a, b = split[0][0], split[1][0]
    assert (a.n_scored, b.n_scored, whole[0][0].n_scored) == (100, 200, 300)
    assert a.ci_low is not None and a.ci_high is not None and a.ci_low < 0.9 < a.ci_high
    assert b.ci_low is not None and b.ci_high is not None and b.ci_low < 0.1 < b.ci_high


def test_quantile_interval_is_the_exact_bootstrap_and_covers_the_median() -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        sample = np.sort(rng.exponential(1.0, 101))
        interval = quantile_interval(sample, 0.5)
        assert interval is not None
        hits += interval[0] <= math.log(2) <= interval[1]
    assert 0.92 <= hits / 400 <= 0.985
    # against brute-force resampling of the order statistic
    sample = np.sort(rng.normal(size=41))
    low, high = quantile_interval(sample, 0.5) or (0.0, 0.0)
    k = math.ceil(0.5 * 41)
    replicates = np.sort(sample[rng.integers(0, 41, size=(40_000, 41))], axis=1)[:, k - 1]
    assert abs(np.mean(replicates < low) - 0.025) < 0.03
    assert abs(np.mean(replicates <= high) - 0.975) < 0.03


def test_binomial_sf_matches_direct_sums() -> None:
    for n, p in ((10, 0.3), (25, 0.5), (7, 0.9)):
        for k in range(n + 2):
            direct = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
            assert binomial_sf(k, n, p) == pytest.approx(direct, abs=1e-12)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),
        (0, 5, 2 * 0.5**5),  # 0.0625
        (1, 9, 2 * (1 + 10) / 2**10),  # 0.021484375
        (3, 3, 1.0),
        (2, 8, 2 * (1 + 10 + 45) / 2**10),  # 0.109375
        (12, 30, None),
    ],
)
def test_mcnemar_against_hand_computed_tables(b: int, c: int, expected: float | None) -> None:
    if expected is None:
        n = b + c
        expected = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n)
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9)
    assert mcnemar_exact(c, b) == pytest.approx(expected, rel=1e-9)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_exact(-1, 3)


def test_sign_flip_test_is_quiet_under_the_null_and_detects_a_shift() -> None:
    rng = np.random.default_rng(11)
    null = [sign_flip_test(rng.normal(0, 1, 40), 2000, seed=i) < 0.05 for i in range(300)]
    assert np.mean(null) <= 0.08
    power = [sign_flip_test(rng.normal(0.6, 1, 40), 2000, seed=i) < 0.05 for i in range(200)]
    assert np.mean(power) > 0.8


def test_sign_flip_test_is_exact_for_small_n() -> None:
    diffs = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    exact = np.mean(
        [
            abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= 15
            for signs in np.array(np.meshgrid(*[[-1, 1]] * 5)).T.reshape(-1, 5)
        ]
    )
    assert sign_flip_test(diffs, 20_000, seed=0) == pytest.approx(exact, abs=0.01)


def test_mcnemar_is_quiet_under_the_null_and_detects_a_shift() -> None:
    rng = np.random.default_rng(5)

    def p_value(base_rate: float, cand_rate: float) -> float:
        latent = rng.random(150)
        a = (latent < base_rate).astype(int)
        b = (np.clip(latent + rng.normal(0, 0.15, 150), 0, 1) < cand_rate).astype(int)
        return mcnemar_exact(int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum()))

    assert np.mean([p_value(0.6, 0.6) < 0.05 for _ in range(300)]) <= 0.08
    assert np.mean([p_value(0.6, 0.45) < 0.05 for _ in range(200)]) > 0.8


def test_paired_interval_and_effect_size() -> None:
    diffs = np.random.default_rng(2).normal(0.3, 1.0, 200)
    low, high = paired_bootstrap_interval(diffs, 2000, seed=1) or (0.0, 0.0)
    assert low < 0.3 < high and low > 0
    assert cohens_dz(diffs) == pytest.approx(diffs.mean() / diffs.std(ddof=1))
    assert cohens_dz(np.ones(5)) is None
    assert paired_bootstrap_interval(np.ones(5)) == (1.0, 1.0)


def test_every_pair_of_groups_is_disjoint_in_a_single_valued_partition() -> None:
    partition = Partition.from_labels("f", [["b"], ["a"], ["b"], ["c"]])
    groups = [
        set(partition.rows[partition.bounds[g] : partition.bounds[g + 1]].tolist())
        for g in range(3)
    ]
    assert partition.labels == ["a", "b", "c"]
    assert all(not (x & y) for x, y in combinations(groups, 2))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from([0.0, 0.1, 0.2, 1 / 3, 0.7, 1.0, 1e-9, 0.999999999]),
        min_size=1,
        max_size=40,
    )
)
def test_a_mean_and_its_interval_stay_within_the_values(values: list[float]) -> None:
    column = np.array(values)[:, None]
    table = ScoreTable(
        [str(i) for i in range(len(values))], ["m0"], column, np.zeros(column.shape, np.int8)
    )
    (whole,) = summarize(table, _metrics(1), [Partition.whole(len(values))], 200, seed=1)
    ((summary,),) = whole
    low, high = min(values), max(values)
    assert summary.value is not None and low <= summary.value <= high
    if len(set(values)) == 1:
        assert summary.value == values[0]
    if summary.ci_low is not None and summary.ci_high is not None:
        assert low <= summary.ci_low <= summary.ci_high <= high
