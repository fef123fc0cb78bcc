"""The self-contained HTML report (Home's "Report" and ``python -m dpcore report``).

* :mod:`~dpcore.report.document` — the document and its sections (settings, ε's meaning, noise,
  re-identification, sweep results, synthetic data).
* :mod:`~dpcore.report.audit` — the section for an audit of the user's own model's scores.
* :mod:`~dpcore.report.statements` — the section that embeds and summarises signed statements.
"""
