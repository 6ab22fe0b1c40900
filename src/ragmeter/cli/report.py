"""``ragmeter report``: a stored run (or a comparison of two) as an HTML, Markdown, CSV or JSON
report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from rich.text import Text

from ragmeter.cli.app import console, fail, main, open_run
from ragmeter.cli.options import shared
from ragmeter.store.sqlite import RunNotFoundError, RunStore

REPORT_FORMATS = ("html", "md", "csv", "json")
COMPARISON_FORMATS = ("html", "md")


def _default_path(stem: str, fmt: str) -> Path:
    """``STEM.FMT`` in the current folder, the stem reduced to safe file-name characters."""
    return Path(re.sub(r"[^\w.-]", "_", stem).lstrip(".") or "report").with_suffix(f".{fmt}")


def _target(output: str | None, stem: str, fmt: str) -> Path:
    path = Path(output) if output else _default_path(stem, fmt)
    if path.is_dir():
        fail(f"-o {output or path} is a folder; pass a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"-o {output}: cannot create its folder ({exc.strerror or exc}); pass a file path")
    return path


def _single(run_store: RunStore, run_id: str, fmt: str, output: str | None) -> Path:
    try:
        record = run_store.get_run(run_id)
    except RunNotFoundError as exc:
        fail(exc)
    path = _target(output, record.id, fmt)
    if fmt == "md":
        from ragmeter.reports.markdown import render_markdown

        path.write_text(render_markdown(record), encoding="utf-8")
        return path
    cases = run_store.get_cases(record.id)
    results = run_store.get_results(record.id)
    scores = run_store.get_scores(record.id)
    if fmt == "html":
        from ragmeter.reports.html import render_run_html

        path.write_text(render_run_html(record, cases, results, scores), encoding="utf-8")
    elif fmt == "csv":
        from ragmeter.reports.csv_export import write_csv

        write_csv(path, "csv", record, cases, results, scores)
    else:
        from ragmeter.reports.json_report import run_document

        document = run_document(record, results, scores)
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _comparison(
    run_store: RunStore,
    baseline: str,
    candidate: str,
    fmt: str,
    output: str | None,
    alpha: float,
    margin: float,
    seed: int,
) -> Path:
    from ragmeter.scoring.compare import CaseValues, compare_runs

    try:
        base = CaseValues.from_store(run_store, baseline)
        cand = CaseValues.from_store(run_store, candidate)
    except RunNotFoundError as exc:
        fail(exc)
    comparison = compare_runs(
        base, cand, alpha=alpha, margin=margin, seed=seed, require_shared=True
    )
    path = _target(output, f"{base.record.id}_vs_{cand.record.id}", fmt)
    if fmt == "md":
        from ragmeter.reports.html.compare_md import render_comparison_markdown

        path.write_text(
            render_comparison_markdown(comparison, base.record, cand.record), encoding="utf-8"
        )
        return path
    from ragmeter.reports.html import render_comparison_html

    cases = {c.case_id: c for c in run_store.get_cases(cand.record.id)}
    cases.update({c.case_id: c for c in run_store.get_cases(base.record.id)})
    html = render_comparison_html(
        comparison,
        base.record,
        cand.record,
        list(cases.values()),
        run_store.get_results(base.record.id),
        run_store.get_results(cand.record.id),
    )
    path.write_text(html, encoding="utf-8")
    return path


@main.command("report")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN_ID [CANDIDATE_ID]")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(REPORT_FORMATS),
    default="html",
    show_default=True,
    help="'html': one self-contained page that works offline (scorecard, goals, breakdowns, "
    "latency, every case with its drill-down); 'md': Markdown; 'csv': one row a case and "
    "metric; 'json': the run file. A comparison takes html or md.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(),
    help="File to write (default: RUN_ID.FORMAT, or BASE_vs_CAND.FORMAT, in the current folder).",
)
@shared("store")
@shared("alpha")
@shared("margin")
@shared("seed")
def report_command(
    run_ids: tuple[str, ...],
    fmt: str,
    output: str | None,
    store: str,
    alpha: float,
    margin: float,
    seed: int,
) -> None:
    """Write a stored run's report; given two runs (BASELINE CANDIDATE), their comparison:
    paired differences with intervals and p values, flipped cases, Pareto chart."""
    if len(run_ids) > 2:
        fail(
            f"report takes one run id, or two (BASELINE CANDIDATE) for a comparison; "
            f"got {len(run_ids)}"
        )
    if len(run_ids) == 2 and fmt not in COMPARISON_FORMATS:
        fail(f"--format {fmt} is not available for a comparison; use html or md")
    run_store, _ = open_run(store, run_ids[0])
    try:
        if len(run_ids) == 1:
            path = _single(run_store, run_ids[0], fmt, output)
        else:
            baseline, candidate = run_ids
            path = _comparison(run_store, baseline, candidate, fmt, output, alpha, margin, seed)
    finally:
        run_store.close()
    size = path.stat().st_size
    console.print(Text(f"wrote {path} ({size / 1_000_000:.2f} MB)"))
