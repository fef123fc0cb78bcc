"""Noise-scale searches of a synthetic release, bracketed before they bisect.

OpenDP's generators find each noise scale with ``binary_search_chain`` / ``binary_search_param`` and no bounds: for
a predicate that holds above the answer (a larger scale always fits a budget) OpenDP 0.16 then evaluates it ~1,100
times, building the whole measurement each time (22 ms each for the one-way marginals) — a third of a release's time
in a profile. Bracketed around the scale the measurement's own map suggests (its loss at scale 1 divided by the
budget, for ε ∝ 1/scale, and its square root, for ρ ∝ 1/scale²; within 1e-6 of it, else a factor 4), the same
search takes ~35 evaluations and returns the same boundary (the predicate is monotone). A bracket that does not hold the boundary falls back to OpenDP's
unbounded search, so nothing here decides a scale: OpenDP's search and its check of the privacy map do.

:func:`install` points OpenDP's MST, AIM, Fixed and contingency-table modules at these (once per process, from
:func:`dpcore.synth.release._opendp`); :mod:`dpcore.synth.split`'s MST calls them directly.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

_INSTALLED = False
_NARROW = 1e-6  # a bracket this close around the exact scale: ~33 halvings to a float's precision
_LOCK = threading.Lock()


def bracket(make_chain: Callable[[float], Any], d_in: Any, d_out: Any) -> tuple[float, float] | None:
    """Bounds ``(lo, hi)`` on the scale at which ``make_chain(scale)`` spends ``d_out``, checked (fails at ``lo``,
    fits at ``hi``), or None when no bracket is found (then the caller's search is unbounded)."""
    try:
        if not isinstance(d_out, float) or not d_out > 0:
            return None
        at_one = make_chain(1.0).map(d_in)
        if not isinstance(at_one, float) or not at_one > 0 or not math.isfinite(at_one):
            return None
        guesses = (at_one / d_out, math.sqrt(at_one / d_out))  # ε ∝ 1/scale (Laplace), ρ ∝ 1/scale² (Gaussian)
        tries = [(g * (1 - _NARROW), g * (1 + _NARROW)) for g in guesses]
        tries.append((min(*guesses, 1.0) / 4, max(*guesses, 1.0) * 4))
        for lo, hi in tries:
            if make_chain(hi).check(d_in, d_out) and not make_chain(lo).check(d_in, d_out):
                return lo, hi
    except Exception:  # any failure here only means no bracket: OpenDP's own search decides
        return None
    return None


def binary_search_chain(make_chain, d_in, d_out, bounds=(None, None), T=None):
    """OpenDP's ``binary_search_chain``, bracketed first when no bounds are given (see the module docstring)."""
    from opendp import mod  # OpenDP: loaded with a release, not with dpcore

    if bounds is None or tuple(bounds) == (None, None):
        found = bracket(make_chain, d_in, d_out)
        if found is not None:
            try:
                return mod.binary_search_chain(make_chain, d_in, d_out, bounds=found)
            except (ValueError, mod.OpenDPException):
                pass  # the boundary was not inside after all: the unbounded search below
    return mod.binary_search_chain(make_chain, d_in, d_out, bounds=bounds, T=T)


def binary_search_param(make_chain, d_in, d_out, bounds=(None, None), T=None):
    """OpenDP's ``binary_search_param``, bracketed first when no bounds are given."""
    from opendp import mod  # OpenDP: loaded with a release, not with dpcore

    if bounds is None or tuple(bounds) == (None, None):
        found = bracket(make_chain, d_in, d_out)
        if found is not None:
            try:
                return mod.binary_search_param(make_chain, d_in, d_out, bounds=found)
            except (ValueError, mod.OpenDPException):
                pass
    return mod.binary_search_param(make_chain, d_in, d_out, bounds=bounds, T=T)


def install() -> None:
    """Point OpenDP 0.16's mbi modules (MST, AIM, Fixed, the contingency table) at the bracketed searches."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        # lazy: OpenDP loads a native library (~1 s)
        from opendp.extras.mbi import _aim, _fixed, _mst, _table

        for module in (_aim, _fixed, _mst, _table):
            if hasattr(module, "binary_search_chain"):
                module.binary_search_chain = binary_search_chain  # type: ignore[attr-defined]  # checked by hasattr
            if hasattr(module, "binary_search_param"):
                module.binary_search_param = binary_search_param  # type: ignore[attr-defined]
        _INSTALLED = True
