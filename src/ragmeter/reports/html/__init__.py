"""Self-contained HTML reports: one run (:func:`render_run_html`) or a comparison of two
(:func:`render_comparison_html`); no external request, light and dark, inline SVG charts."""

from ragmeter.reports.html.compare import render_comparison_html
from ragmeter.reports.html.run import render_run_html

__all__ = ["render_comparison_html", "render_run_html"]
