"""How privacy numbers are written for people: a bound shown rounded is still a bound.

An accountant's ε is an upper bound; printed with ``:.2f`` it rounds to nearest, and 1.004 would read "1.00" —
a smaller ε than the one proved. Here upper bounds (an accountant's ε, a claimed ε, δ) round *up* at the digits
shown and lower bounds (an audit's "ε ≥") round *down*, so every number on a page, in a statement or a report
is as true as the one computed. Digits are significant digits; trailing zeros go, as with ``:g``.

The decimal rounded is the float's shortest representation (``repr``), so ε = 0.1 reads "0.1", not "0.101".
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from .safe_math import EXP_MAX

_EXP = re.compile(r"e([+-])0*(\d)")


def _decimal(x: float, sig: int, rounding: str) -> Decimal:
    d = Decimal(repr(float(x)))
    return d.quantize(Decimal(1).scaleb(d.adjusted() - sig + 1), rounding=rounding)


def rounded(x: float, sig: int = 3, *, up: bool) -> float:
    """``x`` to ``sig`` significant digits, rounded up or down, as a number (a link carries a readable ε that
    keeps the side of the bound it must)."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    return float(_decimal(x, sig, ROUND_CEILING if up else ROUND_FLOOR))


def _written(x: Any, sig: int, rounding: str) -> str:
    if x is None:
        return "—"
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    r = _decimal(x, sig, rounding)
    if abs(r) >= 10**sig:  # a whole number: "12,400", not "1.24e+04"
        return f"{int(r):,}"
    return _EXP.sub(r"e\1\2", format(float(r), f",.{sig}g")).replace("e+", "e")  # "1,235" as elsewhere


def up(x: Any, sig: int = 3) -> str:
    """An upper bound (an ε or δ that is proved, claimed or charged) with ``sig`` digits, never below ``x``."""
    return _written(x, sig, ROUND_CEILING)


def exp_up(x: float, sig: int = 3) -> str:
    """e^x written as an upper bound ("e^ε times more likely"), for any ε the app takes: past e^709 a float
    overflows, so a larger power is written as the power of ten above it ("10^348" for e^800)."""
    if x <= EXP_MAX:
        return up(math.exp(x), sig)
    return f"10^{math.ceil(x / math.log(10))}"


def down(x: Any, sig: int = 3) -> str:
    """A lower bound (what an audit proves: "ε ≥ …") with ``sig`` digits, never above ``x``."""
    return _written(x, sig, ROUND_FLOOR)


def percent(x: Any, decimals: int = 1, *, up: bool) -> str:
    """A share written as a percentage with ``decimals`` decimals, rounded up (a ceiling: "at most 73.2%",
    since e/(1 + e) = 73.106%) or down (what must not be exceeded, or what was proved at least)."""
    if x is None or math.isnan(float(x)):
        return "—"
    d = (Decimal(repr(float(x))) * 100).quantize(
        Decimal(1).scaleb(-decimals), rounding=ROUND_CEILING if up else ROUND_FLOOR
    )
    return f"{d:.{decimals}f}%"


def delta(x: Any, sig: int = 2) -> str:
    """δ as people read it: rounded up, "1e-5" rather than Python's "1e-05"."""
    return up(x, sig)


def diagnostic(x: Any, sig: int = 3) -> Any:
    """A diagnostic computed on private rows (a loss, an accuracy, a count share) as it is stored, shown and
    downloaded: ``sig`` significant digits, what a chart needs, and no more — at full precision a test loss gave
    away a test patient's diagnosis to whoever knew every other row. Rounded to nearest (it is not a bound);
    None, NaN and ±∞ stay as they are. Rounding does not make it private: it stays labelled "not covered by ε"."""
    if x is None or isinstance(x, bool):
        return x
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{sig}g}")
