"""Errors raised by dpcore.

Every error a user can cause is a :class:`DPError` (a ``ValueError``) whose message says what to do
next. Pages show ``str(err)`` with ``st.error``; the CLI prints it as one line on stderr.
"""


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
