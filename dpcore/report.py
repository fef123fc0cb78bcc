"""A self-contained HTML report: settings, ε meaning, noise, re-identification and (if any) sweep results.

The file embeds plotly.js once and every figure inline, so it opens offline. Sections are built by
small functions that reuse the same figure builders as the pages.
"""

from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from .interpret import posterior_bound, privacy_level, reading
from .validation import check_epsilon


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)  # plain text (escaped)
    figures: list[go.Figure] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
color:#1f2933;padding:0 1em;line-height:1.5}
h1{color:#264653}h2{color:#2a9d8f;border-bottom:2px solid #e9ecef;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}td,th{border:1px solid #dee2e6;padding:.3em .6em}
th{background:#f1f3f5}.meta{color:#6c757d;font-size:.9em}.fig{margin:1em 0}
"""


def render(sections: list[Section], settings: dict, title: str = "DP Explorer report") -> str:
    """Render sections into one HTML string with plotly.js embedded once (opens without network)."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class='meta'>Generated {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by DP Explorer.</p>"]
    if settings:
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in settings.items())
        parts.append(f"<h2>Settings</h2><table>{rows}</table>")
    first = True
    for sec in sections:
        parts.append(f"<h2>{html.escape(sec.title)}</h2>")
        parts.extend(f"<p>{html.escape(p)}</p>" for p in sec.paragraphs)
        for tab in sec.tables:
            parts.append(tab.to_html(index=False, border=0, float_format=lambda x: f"{x:.4g}"))
        for fig in sec.figures:
            parts.append("<div class='fig'>" + pio.to_html(fig, include_plotlyjs=first, full_html=False,
                                                           config={"displaylogo": False}) + "</div>")
            first = False
    parts.append("</body></html>")
    return "\n".join(parts)


def epsilon_section(epsilon: float, delta: float | None = None) -> Section:
    from .figures import home

    eps = check_epsilon(epsilon)
    d = f" and δ = {delta:g}" if delta else ""
    return Section(
        "What the chosen ε means",
        [
            f"Chosen ε = {eps:g}{d}: privacy level '{privacy_level(eps)}'.",
            reading(eps, 0.5),
            reading(eps, 0.01),
            f"Any output is at most e^ε = {posterior_bound(0.5, eps) / (1 - posterior_bound(0.5, eps)):.3g} "
            "times more likely with a given person's data than without it.",
        ],
        [home.deployments_chart(eps), home.posterior_chart(eps)],
    )
