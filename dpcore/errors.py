"""Errors raised by dpcore.

Every error a user can cause is a :class:`DPError` (a ``ValueError``) whose message says what to do
next. Pages show ``sentence(str(err))`` with ``st.error``; the CLI prints it as one line on stderr.
"""

import re


class DPError(ValueError):
    """Bad input or an impossible request; the message tells the user what to do next."""

    exit_code = 2


class BudgetExceededError(DPError):
    """A query would spend more privacy budget than is left. Nothing was spent, no noise drawn."""

    exit_code = 3


class JobError(DPError):
    """A background job could not be submitted, found or changed."""


class Cancelled(Exception):
    """Work stopped because someone cancelled it (a job's cancel flag, a page's Stop button).

    The one cancel signal across dpcore: jobs, training, sweeps and attacks raise it, the job runner
    records ``cancelled``. Not a :class:`DPError` — nothing was wrong with the input — so the CLI
    exits with :attr:`exit_code` 130 ("stopped"), never 2.
    """

    exit_code = 130


# --- how a page shows an error's message -------------------------------------------------------------

#: Words that start a message but are names spelt lower-case: they keep their case.
_LOWER_NAMES = frozenset({"diffprivlib", "numpy", "lr", "mnist", "opacus", "torch", "sklearn"})
_PLAIN_WORD = re.compile(r"[a-z]+(?:[-'’][a-z]+)*")


def sentence(message: str) -> str:
    """``message`` as a page shows it on its own (an ``st.error`` box): starting with a capital letter.

    dpcore's messages start lower-case so that they also read inside another sentence (the CLI's
    ``error: …`` line, "The run failed: …"). Only an ordinary word is capitalised: "prior belief must be …"
    becomes "Prior belief must be …", while a message that starts with a symbol or a name keeps it exactly
    — "ε must be …", "n (number of rows) …", "q must be …", "batch_size …", "diffprivlib models …",
    "'age' is …". The one rule for every page: :func:`pages.ui.common.guarded` applies it.
    """
    text = str(message)
    first = text.split(None, 1)[0].rstrip(":;,.!?") if text.strip() else ""
    if text[:1] != first[:1] or first in _LOWER_NAMES or not _PLAIN_WORD.fullmatch(first):
        return text
    if len(first) == 1 and first != "a":  # a lone letter is a symbol (n, k, q, x), never an article
        return text
    return text[0].upper() + text[1:]
