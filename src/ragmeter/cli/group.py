"""The ``ragmeter`` group: every command declared once, its module imported only when the
command runs (``ragmeter --help`` imports click alone, not the whole command line)."""

from __future__ import annotations

import importlib
from typing import Any

import click

from ragmeter import __version__

# name: (module, attribute, the first sentence of its help, which ``ragmeter --help`` lists;
# tests/cli/test_group.py checks it against the command's own)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": (
        "ragmeter.cli.compare",
        "compare_command",
        "Compare CANDIDATE runs with BASELINE case by case (run ids or run JSON files).",
    ),
    "config": (
        "ragmeter.cli.configure",
        "config_group",
        "The eval configuration: the effective settings (show) and the file's JSON Schema.",
    ),
    "datasets": (
        "ragmeter.cli.datasets",
        "datasets_group",
        "Datasets: what is available (the default: list), stats, show, validate, import.",
    ),
    "eval": (
        "ragmeter.cli.eval",
        "eval_command",
        "Ask every case, score, store the run and print the scorecard.",
    ),
    "export": (
        "ragmeter.cli.runs",
        "export_command",
        "Export a stored run: its responses as replayable JSONL, the run file, TREC files or "
        "CSV (docs/reports.md).",
    ),
    "generate": (
        "ragmeter.cli.generate",
        "generate_command",
        "Write a dataset of COUNT cases from CORPUS with an LLM judge.",
    ),
    "index": (
        "ragmeter.cli.index",
        "index_command",
        "Index CORPUS for the reference pipeline, so `ragmeter eval --dataset CORPUS` answers "
        "over it.",
    ),
    "metrics": (
        "ragmeter.cli.plugins",
        "metrics_command",
        "List the metric families and the metrics each produces (group, kind, inputs).",
    ),
    "plan": (
        "ragmeter.cli.plan",
        "plan_command",
        "Cases needed to detect a mean change of EFFECT in METRIC with a paired comparison.",
    ),
    "plugins": (
        "ragmeter.cli.plugins",
        "plugins_command",
        "List what the registry holds for each extension point (metric families, target types, "
        "judge providers, ...) with each entry's origin; metric families with each metric's "
        "group and kind.",
    ),
    "reference-server": (
        "ragmeter.cli.server",
        "reference_server_command",
        "Serve the reference RAG pipeline over HTTP: POST /query, GET /health, GET /models/info.",
    ),
    "report": (
        "ragmeter.cli.report",
        "report_command",
        "Write a stored run's report; given two runs (BASELINE CANDIDATE), their comparison: "
        "paired differences with intervals and p values, flipped cases, Pareto chart.",
    ),
    "rescore": (
        "ragmeter.cli.eval",
        "rescore_command",
        "Score a stored run again without asking its target again.",
    ),
    "runs": ("ragmeter.cli.runs", "runs_command", "List stored runs, newest first."),
    "serve": (
        "ragmeter.cli.serve",
        "serve_command",
        "Browse the store in a web browser: runs, scorecards, cases, comparisons (read-only).",
    ),
    "show": (
        "ragmeter.cli.runs",
        "show_command",
        "Print one run's scorecard (a unique id prefix is enough).",
    ),
    "stats": (
        "ragmeter.cli.runs",
        "stats_command",
        "Summarise datasets (counts, gold passages, question length) and, given RUN_ID, a run "
        "(errors by type, latency percentiles, metric coverage).",
    ),
    "trec": (
        "ragmeter.cli.trec",
        "trec_command",
        "Evaluate a TREC run file against TREC qrels, printing trec_eval's lines.",
    ),
    "validity": (
        "ragmeter.cli.validity",
        "validity_command",
        "Measure a stored run's metrics against human labels of its cases: AUC, balanced "
        "accuracy and Cohen's kappa (binary labels) or Spearman's rho and Kendall's tau-b "
        "(graded), with bootstrap intervals.",
    ),
}


def short_help(text: str, limit: int) -> str:
    """``text`` cut at a word to at most ``limit`` characters, ``...`` marking the cut."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 3, 1)]
    if text[len(head)] != " ":  # a word cut in two: drop it
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:.") + "..."


class RagmeterGroup(click.Group):
    """The commands of :data:`COMMANDS`, each imported when used; the project's errors mapped
    to their exit code and a one-line message (``cli.app.fail``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        declared = COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and declared is not None:
            command = getattr(importlib.import_module(declared[0]), declared[1])
            self.commands.setdefault(cmd_name, command)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            declared = COMMANDS.get(name)
            if declared is not None:
                rows.append((name, short_help(declared[2], limit)))
            else:  # added at run time (a test's own command)
                command = self.commands[name]
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        from ragmeter.errors import RagmeterError

        try:
            return super().invoke(ctx)
        except RagmeterError as exc:
            from ragmeter.cli.app import fail
            from ragmeter.targets.base import TargetError

            if isinstance(exc, TargetError):
                fail(f"target not ready ({exc.error_type}): {exc.message}", exc.exit_code)
            fail(exc, exc.exit_code)


@click.group(cls=RagmeterGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragmeter")
def main() -> None:
    """Evaluate retrieval-augmented generation systems."""
