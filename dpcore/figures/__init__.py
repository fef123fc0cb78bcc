"""Plotly figure builders (no Streamlit): pages show them, the HTML report embeds the same figures."""
