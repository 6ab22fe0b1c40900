"""Rewrite the generated tables in README.md and docs/*.md from the declarations
(``ragmeter.reports.doc_tables``): ``python scripts/doc_tables.py``."""

from __future__ import annotations

from pathlib import Path

from ragmeter.reports.doc_tables import documents, render

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    for path in documents(ROOT):
        text = path.read_text(encoding="utf-8")
        current = render(text)
        if current != text:
            path.write_text(current, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
