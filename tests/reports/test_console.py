"""Trust at the edges of the console: text from the target, the judge or the dataset prints
inert (no live escape sequence, no rendered markup), and the report tables never cut a metric
name or a number, at 80 and 100 columns."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console, RenderableType

from ragmeter.metrics.base import MetricSettings
from ragmeter.models import Case, CaseResult, Response, Score
from ragmeter.redaction import REDACTED
from ragmeter.registry import registry
from ragmeter.reports.case_details import case_details, case_details_json
from ragmeter.reports.compare_console import comparison_table, flips_lines, methods_table
from ragmeter.reports.console import (
    breakdown_table,
    cases_table,
    metrics_table,
    print_run,
    scorecard_table,
)
from ragmeter.reports.stats import run_stats, stats_tables
from ragmeter.reports.terminal import inert, inert_text, make_console
from ragmeter.run_record import GoalResult, MetricSummary, Performance, RunRecord, Scorecard
from ragmeter.scoring.compare import Comparison, MetricComparison

# what the edge server sends in its error body (tests/integration/edge_server.py)
ESCAPES = (
    "\x1b[2J\x1b[H\x1b]0;pwned title\x07\x1b]8;;http://evil.example/x\x1b\\click me\x1b]8;;\x1b\\"
    "[link=http://evil.example/x]Click to fix your API key[/link] [red]alarm[/red]"
)
# rich's own styling: SGR sequences only (it emits no other escape for plain text)
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LONG_NAMES = [
    "judged_abstention_false_positive_rate",
    "judged_unanswerable_accuracy",
    "context_precision_ranked",
    "numeric_fabrication_count",
    "expected_citation_recall",
    "precision_at_10",
    "recall_any_at_10",
]


def render(renderable: RenderableType | str, width: int = 100, **options: Any) -> str:
    """What a colour terminal would receive, ragmeter's own styling removed."""
    file = io.StringIO()
    console = Console(
        file=file, force_terminal=True, width=width, color_system="truecolor", **options
    )
    console.print(renderable)
    return _SGR.sub("", file.getvalue())


def plain(renderable: RenderableType | str, width: int) -> str:
    file = io.StringIO()
    Console(file=file, width=width, force_terminal=False, color_system=None).print(renderable)
    return file.getvalue()


def assert_inert(output: str) -> None:
    assert "\x1b" not in output, repr(output)
    found = _FORBIDDEN.search(output)
    assert found is None, f"{found.group()!r} in {output!r}"


def assert_whole_on_a_line(output: str, names: list[str]) -> None:
    lines = output.splitlines()
    for name in names:
        assert any(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", line) for line in lines), (
            f"{name!r} not whole on one line:\n{output}"
        )


# --- the sanitiser ---------------------------------------------------------------------------

_SAFE = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"),
        blacklist_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    ),
    max_size=30,
)
_PARAMS = st.text(alphabet="0123456789;?", max_size=6)
_PAYLOAD = st.text(
    alphabet=st.characters(blacklist_characters="\x1b\x07\x9c", blacklist_categories=("Cs",)),
    max_size=20,
)
_SEQUENCES = st.one_of(
    st.builds(lambda p, f: f"\x1b[{p}{f}", _PARAMS, st.sampled_from("mHJKABCDsuhl@`~")),
    st.builds(lambda p, f: f"\x9b{p}{f}", _PARAMS, st.sampled_from("mHJK")),
    st.builds(
        lambda i, body, end: f"\x1b{i}{body}{end}",
        st.sampled_from("]P_^X"),
        _PAYLOAD,
        st.sampled_from(["\x07", "\x1b\\", "\x9c"]),
    ),
    st.builds(lambda body: f"\x9d{body}\x07", _PAYLOAD),
    st.sampled_from(["\x1bc", "\x1b7", "\x1b8", "\x1b(B", "\x1b=", "\x07", "\x08", "\x00", "\x7f"]),
    st.sampled_from(["\u202e", "\u2066", "\u2069", "\x85", "\x8d", "\x9c"]),
)
_PIECES = st.lists(
    st.one_of(_SAFE.map(lambda t: ("text", t)), _SEQUENCES.map(lambda s: ("esc", s)))
)


def _visible(text: str) -> str:
    """The printable characters, spaces left out (rich expands tabs and wraps lines)."""
    return "".join(c for c in text if c.isprintable() and not c.isspace())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_prints_without_a_control_character_from_the_input(text: str) -> None:
    for options in ({"emoji": False}, {}):  # the CLI console has emoji codes off
        assert_inert(render(inert(text), **options))
    assert_inert(render(inert_text(text)))
    assert_inert(
        render(
            cases_table(
                [
                    CaseResult(
                        case_id=text or "x", status="error", error_type=text, error_message=text
                    )
                ]
            )
        )
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PIECES)
def test_the_printable_text_around_escape_sequences_survives_literally(
    pieces: list[tuple[str, str]],
) -> None:
    text = "".join(piece for _, piece in pieces)
    clean = "".join(piece for kind, piece in pieces if kind == "text")
    assert inert(text, markup=False) == clean
    # rich.markup.escape doubles a single trailing backslash, so that markup appended after
    # it stays markup; printed on its own, that backslash shows twice
    doubled = clean.endswith("\\") and not clean.endswith("\\\\")
    shown = render(inert(text), width=10_000, emoji=False, soft_wrap=True)
    assert_inert(shown)
    assert _visible(shown) == _visible(clean + ("\\" if doubled else ""))
    assert _visible(render(inert_text(text), width=10_000, soft_wrap=True)) == _visible(clean)


def test_the_edge_servers_error_body_is_shown_literally() -> None:
    shown = render("upstream failed: " + inert(ESCAPES), width=200)
    assert_inert(shown)
    assert "\x1b]8" not in shown and "pwned" not in shown  # no hyperlink, no window title
    assert "[link=http://evil.example/x]Click to fix your API key[/link]" in shown
    assert "[red]alarm[/red]" in shown and "click me" in shown
    # inert text combines safely with ragmeter's own markup
    trailing = inert("a\\")
    mixed = render(f"[bold]{inert('x')}[/bold] {trailing}[italic]y[/italic]", width=80)
    assert mixed.strip() == "x a\\y"


def test_carriage_returns_and_bidi_overrides_cannot_hide_text() -> None:
    shown = render(inert("rm -rf /\r ls -l\r\nnext \u202eevil\u202c"), width=80)
    assert "rm -rf /" in shown and " ls -l" in shown and "\r" not in shown
    assert "\u202e" not in shown and "evil" in shown and "next" in shown


def test_unterminated_sequences_leave_their_text_and_truncation_counts_what_shows() -> None:
    assert inert("\x1b]0;half a title") == "0;half a title"
    assert inert("ok\x1b[31") == "ok"  # a CSI cut short is dropped, not left to run
    assert inert("abcdef", 4) == "abc…"
    assert inert("\x1b[1mabcdef\x1b[0m", 4) == "abc…"
    assert inert("[red]x[/red]", 100) == "\\[red]x\\[/red]"
    assert inert("[red]x[/red]", markup=False) == "[red]x[/red]"
    assert inert_text("a\x1b[2Jb").plain == "ab"


def test_a_long_run_of_unterminated_introducers_is_linear() -> None:
    assert inert("\x1b]" * 200_000 + "tail").endswith("tail")


# --- the console -----------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_output_honours_columns_and_never_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "77")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    file = io.StringIO()
    console = make_console(file=file)
    assert console.width == 77 and not console.is_terminal
    console.print("[red]error[/red] :warning:")
    assert file.getvalue() == "error :warning:\n"
    monkeypatch.delenv("COLUMNS")
    assert make_console(file=io.StringIO()).width == 120
    assert make_console(stderr=True).file is not None


def test_a_terminal_gets_colour_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    file = _Tty()
    make_console(file=file).print("[red]error[/red]")
    assert "\x1b[" in file.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    file = _Tty()
    make_console(file=file).print("[red]error[/red]")
    assert "\x1b[31" not in file.getvalue() and "\x1b[91" not in file.getvalue()


# --- the tables ------------------------------------------------------------------------------


def _summary(name: str, value: float, **extra: Any) -> MetricSummary:
    fields: dict[str, Any] = {
        "name": name,
        "group": "retrieval",
        "value": value,
        "n_scored": 120,
        "n_skipped": 13,
        "n_failed": 2,
        "ci_low": value - 0.05,
        "ci_high": value + 0.04,
    }
    return MetricSummary(**(fields | extra))


def _record(run_id: str, name: str, names: list[str], shift: float = 0.0) -> RunRecord:
    summaries = [_summary(n, 0.5 + shift + i / 100) for i, n in enumerate(names)]
    summaries.append(_summary("latency_p50", 1234.5, unit="ms", higher_is_better=False))
    return RunRecord(
        id=run_id,
        name=name,
        created_at="2026-01-01T00:00:00+00:00",
        config={},
        datasets=["demo", "[red]data[/red]\x1b[2J"],
        scorecard=Scorecard(metrics=summaries, by_group={"retrieval": [*names, "latency_p50"]}),
        question_count=133,
        error_count=2,
    )


@pytest.mark.parametrize("width", [80, 100])
def test_metrics_table_never_cuts_a_metric_or_family_name(width: int) -> None:
    rows = [
        (family, metric)
        for family in registry.names("metrics")
        for metric in registry.get("metrics", family)(MetricSettings())
    ]
    shown = plain(metrics_table(rows), width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert_whole_on_a_line(shown, sorted({m.name for _, m in rows} | {f for f, _ in rows}))


def _comparison(names: list[str]) -> Comparison:
    rows = [
        MetricComparison(
            metric=name,
            group="retrieval",
            higher_is_better=i % 2 == 0,
            baseline=0.812,
            candidate=0.745,
            delta=-0.067,
            n_paired=133,
            kind="continuous",
            test="sign_flip_permutation",
            mean_diff=-0.0671,
            ci_low=-0.1032,
            ci_high=-0.0311,
            effect_size=-0.42,
            p_value=0.00021,
            verdict="regression" if i == 0 else "worse",
        )
        for i, name in enumerate(names)
    ]
    return Comparison(
        baseline="base-run",
        candidate="cand-run",
        n_shared_cases=133,
        alpha=0.05,
        margin=0.02,
        rows=rows,
    )


@pytest.mark.parametrize("width", [80, 100])
def test_compare_never_wraps_or_cuts_a_metric_name_or_number(width: int) -> None:
    shown = plain(comparison_table(_comparison(LONG_NAMES)), width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "…" not in shown
    assert_whole_on_a_line(shown, LONG_NAMES)
    for number in ("0.812", "0.745", "-0.067", "-0.103..-0.031", "-0.42", "0.0002"):
        assert number in shown, (number, shown)
    assert "REGRESSED" in shown
    wide = plain(comparison_table(_comparison(LONG_NAMES)), 160)
    assert_whole_on_a_line(wide, LONG_NAMES)
    assert any("REGRESSED" in line and LONG_NAMES[0] in line for line in wide.splitlines())


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("runs", [2, 3, 6])
def test_methods_table_never_cuts_a_name_or_a_number(width: int, runs: int) -> None:
    names = LONG_NAMES[:6]
    records = [
        _record(f"r{i}0123456789", f"run number {i}", names, shift=i / 10) for i in range(runs)
    ]
    shown = plain(methods_table(records, [*names, "latency_p50"]), width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "…" not in shown
    assert_whole_on_a_line(shown, [*names, "latency_p50", "weighted"])
    for i in range(runs):
        assert f"r{i}0123456789" in shown
        assert f"{0.5 + i / 10:.3f}" in shown
    assert "1234.5 ms" in shown and "±0.045" in shown


@pytest.mark.parametrize("width", [80, 100])
def test_scorecard_and_breakdown_keep_names_and_counts_at_narrow_widths(width: int) -> None:
    record = _record("abc123", "nightly", LONG_NAMES)
    shown = plain(scorecard_table(record), width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "…" not in shown and "1234.5 ms" in shown
    assert_whole_on_a_line(shown, LONG_NAMES)
    assert all("120" in line and "13" in line for line in shown.splitlines() if "_" in line)
    groups = {"a very long category label that wraps": [_summary(n, 0.5) for n in LONG_NAMES]}
    shown = plain(breakdown_table("category", groups), width)
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "…" not in shown
    assert_whole_on_a_line(shown, LONG_NAMES)


def test_labels_from_the_dataset_and_run_print_literally() -> None:
    record = _record("abc123", "[link=http://evil.example]night\x1b]0;t\x07ly[/link]", ["m1"])
    record.goals = [
        GoalResult(metric="[red]m1\x1b[5m", op=">", threshold=0.5, value=0.7, status="pass")
    ]
    record.performance = Performance(
        latency_ms={
            "retrieve\x1b[2J": {"n": 1, "mean": 1.0, "p50": 1.0, "p95": 1.0, "p99": 1.0},
            "generate": {"n": 1, "mean": 1.0, "p50": 1.0, "p95": 1.0, "p99": 1.0},
        }
    )
    file = io.StringIO()
    console = Console(file=file, force_terminal=True, width=120, color_system="truecolor")
    print_run(record, console)
    shown = _SGR.sub("", file.getvalue())
    assert_inert(shown)
    assert "[link=http://evil.example]nightly[/link]" in shown
    assert "[red]m1" in shown and "[red]data[/red]" in shown and "retrieve" in shown
    groups = {"[bold]x[/bold]\x1b]0;t\x07": [_summary("m1", 0.5)]}
    shown = render(breakdown_table("cat[red]", groups))
    assert_inert(shown)
    assert "[bold]x[/bold]" in shown and "cat[red]" in shown


def test_cases_table_shows_errors_inert_and_cut() -> None:
    results = [
        CaseResult(case_id="ok-1", status="ok", latency_ms=12.25),
        CaseResult(
            case_id="[red]esc\x1b[2J",
            status="error",
            error_type="http_5xx",
            error_message="upstream failed: " + ESCAPES + " tail" * 200,
            latency_ms=3.0,
        ),
    ]
    shown = render(cases_table(results), width=100)
    assert_inert(shown)
    assert "[red]esc" in shown and "http_5xx" in shown and "12.2" in shown
    assert "[link=http://evil.example/x]" in "".join(shown.split())  # wrapped, not rendered
    assert "…" in shown and shown.count("tail") < 100


def test_stats_labels_and_error_types_are_inert() -> None:
    record = _record("abc123", "run [bold]x[/bold]\x1b]0;t\x07", ["m1"])
    results = [
        CaseResult(case_id="a", status="error", error_type="[red]boom\x1b[2J", latency_ms=1.0),
        CaseResult(case_id="b", status="ok", latency_ms=2.0),
    ]
    scores = [Score("b", "m1", 1.0)]
    document = {
        "run": run_stats(record, results, scores),
        "dataset": {"by_category": {"\x1b]8;;http://x\x07[link=http://x]cat[/link]": 2}},
    }
    shown = "".join(render(t, width=100) for t in stats_tables(document))
    assert_inert(shown)
    assert "[red]boom" in shown and "[link=http://x]cat[/link]" in shown
    assert "run [bold]x[/bold]" in shown


def test_flipped_case_ids_are_inert() -> None:
    row = _comparison(["hit"]).rows[0]
    row.pass_to_fail = ["[red]c1\x1b[2J", "c2"]
    (line,) = flips_lines([row])
    assert_inert(render(line))
    assert "[red]c1" in str(line) and "[red]c1" in render(line)


# --- show --details ----------------------------------------------------------------------------


def _details_run() -> tuple[list[Case], list[CaseResult], list[Score], Scorecard]:
    cases = [
        Case(
            case_id="good",
            question="What is the leave policy?",
            reference_answer="25 days of leave.",
            gold_passages=[{"doc_id": "handbook"}],
        ),
        Case(
            case_id="esc[red]\x1b[2J",
            question="Question \x1b]0;pwned\x07with [link=http://evil.example]markup[/link]?",
            reference_answer="It is in the handbook.",
        ),
        Case(case_id="broken", question="Is the target up?"),
        Case(case_id="unasked", question="Never asked?"),
    ]
    answer = "The answer \x1b[31mis\x1b[0m " + "very long " * 200
    results = [
        CaseResult(
            case_id="good",
            status="ok",
            response=Response(answer="You get 25 days.", retrieved=[{"id": "handbook#1"}]),
            latency_ms=10.0,
        ),
        CaseResult(
            case_id="esc[red]\x1b[2J",
            status="ok",
            response=Response(answer=answer, citations=["c1"]),
            latency_ms=20.0,
            attempts=2,
        ),
        CaseResult(
            case_id="broken",
            status="error",
            error_type="http_5xx",
            error_message="upstream failed: " + ESCAPES,
        ),
    ]
    judge = {"judge_model": "m", "judge_calls": [1, 2], "prompt_versions": {"a": "v1"}}
    scores = [
        Score("good", "token_f1", 0.9, details={"missing": []}),
        Score("good", "faithfulness", 1.0, details={"claims": [], "no_claims": True, **judge}),
        Score(
            "esc[red]\x1b[2J",
            "token_f1",
            0.1,
            details={"missing": ["handbook", "[blue]kw\x1b[5m", *(f"k{i}" for i in range(9))]},
        ),
        Score(
            "esc[red]\x1b[2J",
            "faithfulness",
            0.5,
            details={
                "claims": [
                    {
                        "claim": "The sky is green",
                        "supported": False,
                        "reason": "no context \x1b]0;x\x07says [i]so[/i]",
                    },
                    {"claim": "Leave exists", "supported": True, "reason": "ok"},
                ],
                **judge,
            },
        ),
        Score(
            "esc[red]\x1b[2J",
            "correctness",
            1.0,
            details={"reasoning": "Wrong: \x1b[2Jsays 30 [b]days[/b]", **judge},
        ),
        Score(
            "esc[red]\x1b[2J",
            "grounding_score",
            0.4,
            details={
                "unsupported_claims": ["sky is green"],
                "fabricated_numbers": ["30"],
                "claims": [{"claim": "sky is green", "verdict": "unsupported"}],
                "answer_signals": {"x": 1.0},
                "mean_support": 0.41,
            },
        ),
        Score(
            "esc[red]\x1b[2J",
            "context_precision",
            None,
            "failed",
            reason="JudgeFailure: bad json \x1b[2J[red]raw[/red]",
        ),
        Score("broken", "token_f1", None, "failed", reason="target error: http_5xx"),
        Score("good", "context_precision", None, "skipped", reason="no judge configured"),
    ]
    scorecard = Scorecard(
        metrics=[
            _summary("token_f1", 0.5, group="lexical"),
            _summary("faithfulness", 0.7, group="grounding"),
            _summary("correctness", 3.0, group="generation", unit="0-5"),
            _summary("grounding_score", 0.6, group="grounding"),
            _summary("context_precision", 0.6, group="context_quality"),
        ],
        by_group={},
    )
    return cases, results, scores, scorecard


def test_case_details_show_the_case_and_why_each_metric_scored_as_it_did() -> None:
    cases, results, scores, _ = _details_run()
    shown = "".join(render(block, width=120) for block in case_details(cases, results, scores))
    assert_inert(shown)
    flat = " ".join(shown.split())
    for expected in (
        "What is the leave policy?",
        "You get 25 days.",
        "25 days of leave.",
        "handbook#1",
        "[link=http://evil.example]markup[/link]",
        "The answer is very long",
        "upstream failed:",
        "[link=http://evil.example/x]Click to fix your API key[/link]",
        "esc[red]",
        "2 attempts",
        "not answered",
        "missing: handbook; [blue]kw; k0; k1; k2 (+6 more)",
        "unsupported claims (1 of 2): The sky is green (no context says [i]so[/i])",
        "judge reasoning: Wrong: says 30 [b]days[/b]",
        "unsupported claims: sky is green",
        "fabricated numbers: 30",
        "mean support 0.41",
        "failed JudgeFailure: bad json [red]raw[/red]",
        "skipped no judge configured",
        "target error: http_5xx",
        "4 case(s) of 4",
    ):
        assert expected in flat, (expected, flat)
    assert "judge_calls" not in flat and "answer_signals" not in flat and "pwned" not in flat
    assert flat.count("very long") < 100  # the answer is cut
    assert "more characters; --max-chars 0 shows them)" in flat


def test_case_details_cut_each_text_at_max_chars_and_say_how_much_is_left() -> None:
    # issue 30: the note says how many characters are hidden and how to see them
    cases, results, scores, _ = _details_run()
    answer = next(r.response.answer for r in results if r.response and len(r.response.answer) > 600)

    def shown(max_chars: int) -> str:
        blocks = case_details(cases, results, scores, max_chars=max_chars)
        return " ".join("".join(render(b, width=200) for b in blocks).split())

    cut = shown(100)
    assert f"({len(answer) - 100:,} more characters; --max-chars 0 shows them)" in cut
    whole = shown(0)
    assert "more characters" not in whole
    assert len(whole) > len(shown(600)) > len(cut)


def test_case_details_filter_failing_cases_and_metrics() -> None:
    cases, results, scores, scorecard = _details_run()
    failing = case_details_json(cases, results, scores, only_failing=True)
    # the query failed, or a score failed
    assert [d["case_id"] for d in failing] == ["esc[red]\x1b[2J", "broken"]
    low = case_details_json(
        cases, results, scores, only_failing=True, metrics=["faithfulness"], scorecard=scorecard
    )
    # faithfulness 0.5 is not below half its scale; the failed context_precision is not named
    assert [d["case_id"] for d in low] == ["broken"]
    assert low[0]["scores"] == {}
    low = case_details_json(
        cases, results, scores, only_failing=True, metrics=["token_f1"], scorecard=scorecard
    )
    assert low[0]["case_id"] == "esc[red]\x1b[2J" and low[0]["scores"]["token_f1"]["low"]
    assert list(low[0]["scores"]) == ["token_f1"]
    assert low[0]["scores"]["token_f1"]["details"]["missing"][0] == "handbook"
    everything = case_details_json(cases, results, scores)
    assert len(everything) == 4 and everything[3]["status"] == "not answered"
    faithfulness = everything[0]["scores"]["faithfulness"]["details"]
    assert "judge_calls" not in faithfulness and faithfulness["no_claims"] is True
    # the registered metrics give the direction when no scorecard is passed
    blocks = case_details(cases, results, scores, only_failing=True, metrics=["token_f1"])
    shown = "".join(render(block) for block in blocks)
    assert_inert(shown)
    assert "2 failing case(s) of 4" in " ".join(shown.split())
    with pytest.raises(ValueError, match="'nope'"):
        case_details(cases, results, scores, metrics=["nope"])


def test_show_by_a_field_gives_each_group_its_coverage(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from ragmeter.cli.main import main

    cases, replies = [], []
    for i in range(4):
        cases.append({"case_id": f"f{i}", "question": "q?", "reference_answer": "yes",
                      "category": "factual"})  # fmt: skip
        cases.append({"case_id": f"h{i}", "question": "q?", "reference_answer": "yes",
                      "category": "howto"})  # fmt: skip
        # half the factual cases fail; every howto case is answered
        failed = {"case_id": f"f{i}", "error_type": "timeout", "error_message": "slow"}
        replies.append(failed if i % 2 else {"case_id": f"f{i}", "answer": "yes"})
        replies.append({"case_id": f"h{i}", "answer": "yes"})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    store = str(tmp_path / "runs.db")
    made = CliRunner().invoke(main, [
        "eval", "-d", str(tmp_path / "cases.jsonl"), "--target",
        f"replay:{tmp_path / 'replay.jsonl'}", "--metrics", "lexical", "--store", store,
        "--no-progress", "--output-dir", str(tmp_path / "runs"), "--output", "run",
    ])  # fmt: skip
    assert made.exit_code == 0, made.output
    run_id = json.loads((tmp_path / "runs" / "run.json").read_text())["id"]
    shown = CliRunner().invoke(
        main, ["show", run_id, "--store", store, "--by", "category", "--metric", "token_f1"],
        env={"COLUMNS": "160"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    rows = [line for line in shown.output.splitlines() if "token_f1" in line]
    assert len(rows) == 2, shown.output
    factual, howto = (re.sub(r"[│┃]", " ", row).split() for row in rows)
    assert factual[-4:] == ["2", "0", "2", "50%"]  # n, skip, fail, cov
    assert howto[-4:] == ["4", "0", "0", "100%"]


def test_stats_and_the_scorecard_read_the_same_latencies(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from ragmeter.cli.main import main

    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"case_id": f"c{i}", "question": f"q{i}?"}) + "\n" for i in range(6))
    )
    # answered cases report their latency; a failing call spends 50 ms before it raises
    (tmp_path / "sometimes.py").write_text(
        "import time\n"
        "def answer(question):\n"
        "    n = int(question[1:-1])\n"
        "    if n % 3 == 0:\n"
        "        time.sleep(0.05)\n"
        "        raise RuntimeError('down')\n"
        "    return {'answer': 'a', 'latency_ms': {'total': float(n)}}\n"
    )
    store = str(tmp_path / "runs.db")
    made = CliRunner().invoke(main, [
        "eval", "-d", str(tmp_path / "cases.jsonl"), "--target",
        f"{tmp_path / 'sometimes.py'}:answer", "--metrics", "performance", "--store", store,
        "--no-progress", "--output-dir", str(tmp_path / "runs"), "--output", "run",
    ])  # fmt: skip
    assert made.exit_code == 0, made.output
    document = json.loads((tmp_path / "runs" / "run.json").read_text())
    card = {m["name"]: m for m in document["scorecard"]["metrics"]}
    stats = CliRunner().invoke(main, ["stats", document["id"], "--store", store, "--json"])
    assert stats.exit_code == 0, stats.output
    latency = json.loads(stats.output)["run"]["latency_ms"]
    # cases 1, 2, 4, 5 answered (latencies 1, 2, 4, 5 ms); 0 and 3 failed after 50 ms
    assert (latency["min"], latency["max"], latency["mean"]) == (1.0, 5.0, 3.0)
    assert card["latency_p50"]["value"] == latency["p50"] == 3.0


def test_a_secret_in_an_answer_is_masked_in_the_console_and_the_json_alike() -> None:
    # issue 30: masked in reports and the console, but shown by show --details --json
    secret = "sk-live0123456789abcdef"
    case = Case(case_id="c", question="What is the key?", reference_answer="None.")
    result = CaseResult(
        case_id="c",
        status="ok",
        response=Response(answer=f"The key is {secret}.", retrieved=[]),
    )
    score = Score(case_id="c", metric="token_f1", value=0.0, status="ok",
                  details={"missing": [secret]})  # fmt: skip
    shown = "".join(render(block, width=120) for block in case_details([case], [result], [score]))
    as_json = json.dumps(case_details_json([case], [result], [score]))
    for text in (shown, as_json):
        assert secret not in text and REDACTED in text
