"""Streamlit widgets and helpers shared by the page scripts in ``pages/`` (UI only: no maths here)."""
