"""What a page's first screen holds, measured in the browser (tests/e2e/test_first_screen.py).

A page marks its headline with a container keyed ``headline`` and its main chart with one keyed ``main_chart``
(:mod:`pages.ui.first_screen`); Streamlit gives a keyed container the class ``st-key-<key>``.

Prose is the text of markdown, captions and alerts in the main area: not widget labels, buttons, metrics, tab
and page-link labels, or a closed expander's or popover's body (a reader does not see those without a click).
A text block (paragraph, list item, heading, table cell) counts whole when its top is above the fold.
"""

FIRST_SCREEN_JS = r"""() => {
  const fold = window.innerHeight;
  const main = document.querySelector('[data-testid=stMain]');
  const box = (sel) => {
    for (const el of main.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.height > 0 && el.checkVisibility()) return r;
    }
    return null;
  };
  const chart = box('.st-key-main_chart .js-plotly-plot') || null;
  const anyChart = box('.js-plotly-plot');
  const head = box('.st-key-headline');
  const SKIP = 'button, summary, label, [data-testid=stWidgetLabel], [data-testid=stMetric], [role=tab], '
    + '[data-testid=stPageLink], [data-testid=stTooltipContent], .st-key-main_chart, [data-testid=stPopover], '
    + '[data-testid=stSlider], [data-testid=stSidebar]';
  let words = 0;
  const blocks = [];
  for (const md of main.querySelectorAll('[data-testid=stMarkdownContainer], [data-testid=stCaptionContainer]')) {
    if (md.closest(SKIP) || !md.checkVisibility()) continue;
    for (const blk of md.querySelectorAll('p, li, h1, h2, h3, h4, h5, h6, td, th')) {
      if (blk.querySelector('p, li, td') || blk.closest('[data-testid=stMarkdownContainer], [data-testid=stCaptionContainer]') !== md) continue;  // only the innermost blocks: a list item's paragraph once
      const r = blk.getBoundingClientRect();
      if (!r.height || r.top >= fold) continue;
      const n = blk.innerText.split(/\s+/).filter(w => /[\p{L}\p{N}]/u.test(w)).length;
      if (!n) continue;
      words += n;
      blocks.push([n, blk.innerText.slice(0, 50)]);
    }
  }
  return {
    fold, words, blocks,
    chart_top: chart ? Math.round(chart.top) : null,
    chart_bottom: chart ? Math.round(chart.bottom) : null,
    any_chart_top: anyChart ? Math.round(anyChart.top) : null,
    headline_top: head ? Math.round(head.top) : null,
    headline_bottom: head ? Math.round(head.bottom) : null,
    exceptions: main.querySelectorAll('[data-testid=stException]').length,
  };
}"""
