"""The checker every kind of statement is verified with: each check recorded, passed or failed, naming its field.

A kind's check (``check(c, st)`` beside its builder: :mod:`~dpcore.statements.training`,
:mod:`~dpcore.statements.sweep`, :mod:`~dpcore.statements.ledger`) calls :meth:`Checker.same` for each figure it
recomputes, :meth:`Checker.fail` for what a statement must say and does not, and :meth:`Checker.run` around a
recomputation whose recorded inputs may be refused. The findings are what the advisor page's "Verify a statement"
box lists and what ``statement --verify`` counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dpcore.errors import DPError

TOL = 1e-6
T = TypeVar("T")


@dataclass(frozen=True)
class Finding:
    """One check: ``check`` names it (a field path, "signature", "files"), ``ok`` whether it passed, ``detail``
    what was compared or what is wrong."""

    check: str
    ok: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail}


def num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def close(a: Any, b: Any, rel: float = TOL) -> bool:
    if a is None or b is None:
        return a is b
    if not (num(a) and num(b)):
        return bool(a == b)
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def get(d: Any, path: str) -> Any:
    """``d`` at a dotted path with [i] indices; None when any step is missing."""
    cur = d
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            i = int(part[1:-1])
            if not isinstance(cur, list) or i >= len(cur):
                return None
            cur = cur[i]
        else:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(part)
    return cur


def obj(x: Any) -> dict[str, Any]:
    """``x`` when it is a JSON object, else an empty one (a damaged field reads as missing)."""
    return x if isinstance(x, dict) else {}


def _short(x: Any) -> str:
    return f"{x!r}"[:80]


@dataclass
class Checker:
    """Collects findings; ``problems`` are the failed ones' details."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [f.detail for f in self.findings if not f.ok]

    @property
    def checked(self) -> int:
        return len(self.findings)

    def passed(self, path: str, detail: str) -> None:
        self.findings.append(Finding(path, True, detail[:300]))

    def fail(self, path: str, detail: str) -> None:
        self.findings.append(Finding(path, False, detail[:300]))

    def same(self, path: str, recorded: Any, recomputed: Any, rel: float = TOL) -> None:
        if close(recorded, recomputed, rel):
            self.passed(path, f"{path} is {_short(recorded)}, as recomputed")
        else:
            shown = "missing" if recorded is None else _short(recorded)
            self.fail(path, f"{path} is {shown}, recomputed {recomputed!r}")

    def need(self, path: str, value: Any, what: str = "a number") -> bool:
        if value is None or (what == "a number" and not num(value)):
            self.fail(path, f"{path} is missing or not {what}")
            return False
        return True

    def run(self, path: str, fn: Callable[..., T], *args: Any) -> T | None:
        """``fn(*args)``, or None with a failed finding naming ``path`` when the recorded inputs are refused."""
        try:
            return fn(*args)
        except DPError as err:
            self.fail(path, f"{path}: the recorded settings are refused ({err})")
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as err:
            self.fail(path, f"{path}: the recorded settings cannot be used ({type(err).__name__})")
        return None

    def extend(self, path: str, problems: list[str], what: str) -> None:
        """The problems of a recomputation done elsewhere (an advice, a synthetic release): one finding each, or
        one passed finding naming ``what`` was recomputed."""
        if not problems:
            self.passed(path, f"{what}: recomputed, as stated")
        for p in problems:
            self.fail(path, str(p))
