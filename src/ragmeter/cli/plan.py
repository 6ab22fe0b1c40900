"""``ragmeter plan``: how many cases a paired comparison needs to detect an effect."""

from __future__ import annotations

import json
import math

import click
from rich.text import Text

from ragmeter.cli.app import console, fail, main
from ragmeter.cli.options import shared


@main.command("plan")
@click.option("--metric", required=True, help="The metric whose change is to be detected.")
@click.option(
    "--effect",
    type=float,
    required=True,
    help="The mean change per case to detect, in the metric's units (0.02: two points of a "
    "0-1 metric).",
)
@click.option(
    "--from",
    "source",
    metavar="RUN[,CANDIDATE]",
    help="One run: the spread of its values (a candidate assumed uncorrelated with it); two "
    "runs (comma-separated): the spread of their paired differences.",
)
@click.option(
    "--sd",
    type=float,
    help="Standard deviation of the per-case paired differences, when no run is given.",
)
@click.option("--power", type=float, default=0.8, show_default=True, help="Power to reach.")
@click.option(
    "--gated",
    type=int,
    default=1,
    show_default=True,
    help="Metrics gated together: the level is alpha / GATED under a correction (Holm).",
)
@shared("alpha")
@shared("store")
@shared("json")
def plan_command(
    metric: str,
    effect: float,
    source: str | None,
    sd: float | None,
    power: float,
    gated: int,
    alpha: float,
    store: str,
    as_json: bool,
) -> None:
    """Cases needed to detect a mean change of EFFECT in METRIC with a paired comparison.

    n = ((z(1 - level/2) + z(power)) * sd / effect)^2, the normal approximation of the paired
    test; the level is alpha, or alpha / --gated when several metrics are corrected together.
    """
    from ragmeter.scoring.power import cases_needed

    if not effect > 0 or not math.isfinite(effect):
        fail(f"--effect must be a positive number, got {effect}")
    if not 0 < power < 1:
        fail(f"--power must be between 0 and 1, got {power}")
    if gated < 1:
        fail(f"--gated must be 1 or more, got {gated}")
    if (source is None) == (sd is None):
        fail("give the spread: --from RUN (or --from BASE,CANDIDATE) or --sd NUMBER")
    if sd is not None:
        if not sd >= 0:
            fail(f"--sd must not be negative, got {sd}")
        spread, basis, size = sd, "given (--sd)", None
    else:
        spread, basis, size = _spread_from(store, str(source), metric)
    level = alpha / gated
    needed = cases_needed(effect, spread, level, power)
    document = {
        "metric": metric,
        "effect": effect,
        "sd": spread,
        "sd_basis": basis,
        "alpha": alpha,
        "level": level,
        "power": power,
        "cases_needed": needed,
        "cases_in_run": size,
    }
    if as_json:
        click.echo(json.dumps(document, indent=2))
        return
    line = (
        f"{needed} cases detect a mean change of {effect:g} in {metric} with power {power:g} "
        f"at level {level:.3g} (paired; sd {spread:.4g}, {basis})"
    )
    console.print(Text(line))
    if size is not None:
        console.print(Text(f"the run has {size} cases scored on {metric}"))


def _spread_from(store: str, source: str, metric: str) -> tuple[float, str, int]:
    """(sd of the paired differences, where it came from, cases) from one run or two."""
    import numpy as np

    from ragmeter.cli.compare import _open_store
    from ragmeter.scoring.compare import CaseValues
    from ragmeter.scoring.power import difference_spread, has_spread

    references = [part.strip() for part in source.split(",") if part.strip()]
    if not 1 <= len(references) <= 2:
        fail(f"--from takes one run or two (BASE,CANDIDATE), got {source!r}")
    run_store = _open_store(store, references)
    try:
        runs = [CaseValues.load(run_store, reference) for reference in references]
    finally:
        run_store.close()
    from ragmeter.scoring.roc import is_roc

    summary = runs[0].summary(metric)
    if summary is not None and is_roc(summary.aggregation):
        fail(
            f"{metric} is a run-level statistic ({summary.aggregation}), not a mean of per-case "
            "values: plan the attacks and benign cases it needs instead"
        )
    values = [run.values.get(metric, {}) for run in runs]
    for run, scored in zip(runs, values, strict=True):
        if not scored:
            fail(f"run {run.record.id} has no scored case of {metric!r}")
    if len(runs) == 1:
        own = np.array(list(values[0].values()))
        if len(own) < 2:
            fail(f"run {runs[0].record.id} scored {metric!r} on fewer than 2 cases")
        # a candidate with the same spread and no correlation: sd of a difference = sqrt(2) sd
        spread = math.sqrt(2.0) * float(np.std(own, ddof=1))
        if not has_spread(spread, float(own.mean())):
            fail(f"{metric} has the same value on every case of {runs[0].record.id}: no spread")
        return spread, f"sqrt(2) x the spread of run {runs[0].record.id}", len(own)
    shared = [case for case in values[0] if case in values[1]]
    if len(shared) < 2:
        fail(f"the two runs share fewer than 2 cases scored on {metric!r}")
    first = np.array([values[0][c] for c in shared])
    second = np.array([values[1][c] for c in shared])
    found = difference_spread(first, second)  # as compare's MDE
    if found is None:
        fail(f"{metric} varies in neither run: no spread to plan with")
    spread, kind = found
    ids = f"{runs[0].record.id} and {runs[1].record.id}"
    if kind == "paired":
        return spread, f"paired differences of {ids}", len(shared)
    return spread, f"the own spreads of {ids} (no paired one)", len(shared)
