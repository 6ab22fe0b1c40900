"""The case drill-down: question, reference, the answer with unsupported claims and leaked
spans marked, the retrieved chunks ranked (gold ones marked), the citations checked, every
score and every judge call. Every piece of text is escaped on its own; a highlight wraps
escaped text in ``<mark>``, so no stored text can open or close an element."""

from __future__ import annotations

from typing import Any

from ragmeter.reports.html.format import esc, number
from ragmeter.run_record import RunRecord
from ragmeter.web.html import (
    case_url,
    cell,
    layout,
    pretty_json,
    raw_cell,
    run_url,
    table,
)

_STATUS_CSS = {"ok": "good", "failed": "bad", "error": "bad"}


def marked_answer(answer: str, highlights: list[dict[str, Any]]) -> str:
    """The answer, escaped piece by piece, its highlighted ranges in ``<mark>``."""
    parts, at = [], 0
    for item in highlights:
        start, end = item["start"], item["end"]
        if start < at:
            continue
        parts.append(esc(answer[at:start]))
        mark = "leak" if item["mark"] == "leak" else "unsupported"
        label = "leaked" if mark == "leak" else "unsupported claim"
        parts.append(
            f'<mark class="{mark}" title="{esc(label)}: {esc(item["note"])}">'
            f"{esc(answer[start:end])}</mark>"
        )
        at = end
    parts.append(esc(answer[at:]))
    return "".join(parts)


def _text_block(label: str, text: str | None, role: str) -> str:
    if text is None or text == "":
        return f'<h2>{esc(label)}</h2><p class="muted">(none)</p>'
    return f'<h2>{esc(label)}</h2><div class="box" data-role="{esc(role)}">{esc(text)}</div>'


def _chunks(chunks: list[dict[str, Any]]) -> str:
    if not chunks:
        return '<p class="muted">No retrieved chunks reported.</p>'
    items = []
    for chunk in chunks:
        gold = '<span class="tag gold">gold</span>' if chunk["gold"] else ""
        where = " · ".join(
            f"{label} {chunk[key]}"
            for key, label in (("doc_id", "doc"), ("rel_path", "file"), ("heading_path", "section"))
            if chunk.get(key)
        )
        score = f" · score {chunk['score']:.3f}" if isinstance(chunk.get("score"), float) else ""
        items.append(
            f'<li class="chunk" data-gold="{"yes" if chunk["gold"] else "no"}">'
            f"{gold}<strong>#{esc(chunk.get('rank'))} {esc(chunk.get('id') or '(no id)')}</strong>"
            f' <span class="muted">{esc(where)}{esc(score)}</span>'
            f'<div class="box" data-role="chunk-text">{esc(chunk.get("text") or "")}</div></li>'
        )
    return f'<ol class="chunks">{"".join(items)}</ol>'


def _citations(citations: list[dict[str, Any]]) -> str:
    if not citations:
        return '<p class="muted">No citations.</p>'
    rows = [
        "<tr>"
        + cell(c.get("chunk_id") or "-")
        + cell(c.get("doc_id") or c.get("rel_path") or "-")
        + cell(c.get("quote") or "", "text")
        + cell("yes" if c["in_retrieved"] else "no", "good" if c["in_retrieved"] else "bad")
        + cell("yes" if c["gold"] else "no")
        + "</tr>"
        for c in citations
    ]
    return table(["chunk", "document", "quote", "among the retrieved", "gold"], rows)


def _scores(scores: list[dict[str, Any]]) -> str:
    rows = []
    for score in scores:
        details = (
            f"<details><summary>details</summary><pre>{pretty_json(score['details'])}</pre>"
            "</details>"
            if score["details"]
            else ""
        )
        rows.append(
            f'<tr data-metric="{esc(score["metric"])}"><th scope="row">{esc(score["metric"])}</th>'
            + cell(number(score["value"]), "num", ' data-role="value"')
            + cell(score["status"], _STATUS_CSS.get(score["status"], ""))
            + cell(score["reason"] or "", "text")
            + raw_cell(details, "text")
            + "</tr>"
        )
    return table(["metric", ("value", "num"), "status", "reason", "details"], rows)


def _judge_calls(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return '<p class="muted">No judge calls for this case.</p>'
    parts = []
    for call in calls:
        summary = (
            f"{call['purpose']} · {call['model']} · prompt {call['prompt_name']} "
            f"{call['prompt_version']} · {call['status']}" + (" · cached" if call["cached"] else "")
        )
        facts = [
            ("created", call["created_at"]),
            ("latency ms", number(call["latency_ms"], 1)),
            ("tokens", f"{call['prompt_tokens']} prompt, {call['completion_tokens']} output"),
            ("cost USD", number(call["cost_usd"], 5)),
            ("finish reason", call["finish_reason"]),
            ("error", call["error"]),
        ]
        body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts if v is not None)
        parts.append(
            f'<details><summary>{esc(summary)}</summary><dl class="facts">{body}</dl>'
            f"<h4>Prompt</h4><pre>{pretty_json(call['messages'])}</pre>"
            f"<h4>Output</h4><pre>{esc(call['output_text'] or '')}</pre>"
            f"<h4>Parameters</h4><pre>{pretty_json(call['params'])}</pre></details>"
        )
    return "".join(parts)


def case_page(record: RunRecord, document: dict[str, Any]) -> str:
    case, result = document["case"], document["result"]
    status = result["status"] if result else "not answered"
    facts = [
        ("status", status),
        ("latency ms", number(result["latency_ms"], 1) if result else None),
        ("attempts", result["attempts"] if result else None),
        ("category", case.get("category")),
        ("answerable", "yes" if case.get("answerable") else "no"),
    ]
    if result and result["status"] != "ok":
        facts.append(("error", f"{result['error_type']}: {result['error_message']}"))
    body = [
        f"<h1>Case {esc(case['case_id'])}</h1>",
        '<dl class="facts">'
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts if v is not None)
        + "</dl>",
        _text_block("Question", case["question"], "question"),
        _text_block("Reference answer", case.get("reference_answer"), "reference"),
        "<h2>Answer</h2>",
        '<p class="muted"><mark class="unsupported">unsupported claim</mark> '
        '<mark class="leak">leaked span</mark></p>',
        '<div class="box" data-role="answer">'
        + marked_answer(document["answer"], document["highlights"])
        + "</div>",
        "<h2>Retrieved chunks</h2>",
        _chunks(document["retrieved"]),
        "<h2>Citations</h2>",
        _citations(document["citations"]),
        "<h2>Scores</h2>",
        _scores(document["scores"]),
        "<h2>Judge calls</h2>",
        _judge_calls(document["judge_calls"]),
        "<h2>Case labels</h2><details><summary>as stored</summary>"
        f"<pre>{pretty_json(case)}</pre></details>",
        f'<p><a href="{esc(run_url(record.id))}#cases">Back to the cases of {esc(record.name)}</a>'
        f' · <a href="{esc(case_url(record.id, case["case_id"]))}">permalink</a></p>',
    ]
    crumbs = [("Runs", "/"), (record.name, run_url(record.id)), (case["case_id"], None)]
    return layout(f"Case {case['case_id']}", "".join(body), crumbs)
