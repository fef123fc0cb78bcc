"""DP Explorer core library.

Everything the dashboard computes lives here, free of Streamlit, so it can be used from a
notebook, from the CLI (``python -m dpcore``) and from the pages alike.
"""

__version__ = "0.1.0"
