"""A plan as typed, frozen values and as a file (JSON, or YAML where PyYAML is installed).

A :class:`Plan` lists :class:`Statistic` s — a count, a histogram over public categories or bins, a bounded sum or
mean, a quantile — each optionally grouped by public keys (:class:`Key`: a column and its public categories; rows
with any other value fall in "(other)"). Its :class:`Unit` says whose privacy ε protects: one row, or one person
whose rows share a person-id column, at most ``max_rows`` of them kept. The split says how the total ε is shared:
``hand`` (each statistic's weight), ``equal`` (the same relative error for all, at the public guess
``expected_rows``) or ``accuracy`` (each statistic's target 95% half-width; ε is what they need).

Everything here is public: column names, bounds, categories, weights and targets are chosen without looking at the
rows. Built from untrusted input (a file, a form, the CLI) through :func:`from_dict`, which says what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import limits
from ..errors import DPError

KINDS = ("count", "histogram", "sum", "mean", "quantile")
SPLITS = ("hand", "equal", "accuracy")
SPLIT_WORDS = {
    "hand": "by hand (each statistic's weight)",
    "equal": "the same relative error for every statistic",
    "accuracy": "from target accuracies (accuracy in, ε out)",
}
OTHER = "(other)"
#: Candidates of a quantile between its bounds when the plan does not say (its grid of public values).
QUANTILE_STEPS = 100
Json = dict[str, Any]


def _text(x: Any, what: str) -> str:
    if not isinstance(x, str) or not x.strip():
        raise DPError(f"{what} must be a non-empty name")
    if len(x) > limits.UPLOAD_MAX_NAME_CHARS:
        raise DPError(f"{what} is longer than {limits.UPLOAD_MAX_NAME_CHARS} characters")
    return x.strip()


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool):
        raise DPError(f"{what} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise DPError(f"{what} must be a number, got {x!r}") from None
    if not math.isfinite(v):
        raise DPError(f"{what} must be a finite number, got {x!r}")
    return v


def _categories(raw: Any, what: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [c for c in raw.split(",")]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise DPError(f"{what} needs a list of public categories, e.g. F,M")
    out = tuple(str(c).strip() for c in raw)
    if any(not c for c in out):
        raise DPError(f"{what}: a category is empty; list each public category once, separated by commas")
    if len(out) > limits.QUERY_MAX_BINS:
        raise DPError(f"{what}: at most {limits.QUERY_MAX_BINS} public categories, got {len(out)}")
    if len({c.lower() for c in out}) != len(out):
        raise DPError(f"{what}: a category is listed twice (categories ignore case); list each once")
    if OTHER in out:
        raise DPError(f"{what}: {OTHER!r} is the bin of every other value; leave it out")
    return out


@dataclass(frozen=True)
class Key:
    """A public grouping key: a column and its public categories (declared, never read from the rows)."""

    column: str
    categories: tuple[str, ...]

    def to_dict(self) -> Json:
        return {"column": self.column, "categories": list(self.categories)}

    @classmethod
    def from_dict(cls, d: Any) -> Key:
        if not isinstance(d, Mapping):
            raise DPError("a key is {column, categories}")
        col = _text(d.get("column"), "a key's column")
        return cls(col, _categories(d.get("categories"), f"key {col!r}"))


@dataclass(frozen=True)
class Statistic:
    """One statistic of a plan. ``bounds``: public [lo, hi] (a sum, mean or quantile; a numeric histogram);
    ``categories`` or ``bins``: a histogram's; ``alpha``: a quantile's (0.5, the median); ``by``: key columns;
    ``weight``: its share of ε when split by hand; ``target``: the 95% half-width wanted (accuracy split; a
    quantile's in rows of rank)."""

    kind: str
    column: str | None = None
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    bins: int | None = None
    alpha: float | None = None
    by: tuple[str, ...] = ()
    weight: float = 1.0
    target: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DPError(f"unknown statistic {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.kind == "count":
            if self.column is not None or self.bounds is not None or self.categories is not None:
                raise DPError("a count counts rows (or people's kept rows): it takes no column, bounds or categories")
        elif self.column is None:
            raise DPError(f"a {self.kind} needs a column")
        if self.kind in ("sum", "mean", "quantile") and self.bounds is None:
            raise DPError(
                f"a {self.kind} of {self.column!r} needs public bounds lo:hi (known without looking at the rows: "
                "values outside are clamped to them)"
            )
        if self.bounds is not None:
            lo, hi = self.bounds
            if not hi > lo:
                raise DPError(f"bounds of {self.column!r} must have lo < hi, got {lo:g}:{hi:g}")
            if max(abs(lo), abs(hi)) > limits.RELEASE_MAGNITUDE_MAX:
                raise DPError(f"bounds of {self.column!r} must be within ±{limits.RELEASE_MAGNITUDE_MAX:g}")
        if self.kind == "histogram":
            if (self.categories is None) == (self.bounds is None):
                raise DPError(
                    f"a histogram of {self.column!r} needs either its public categories or public bounds and bins"
                )
            if self.bounds is not None and not (self.bins and 1 <= self.bins <= limits.QUERY_MAX_BINS):
                raise DPError(f"a histogram with bounds needs 1 to {limits.QUERY_MAX_BINS} bins")
        elif self.categories is not None:
            raise DPError(f"categories belong to a histogram (or a key), not to a {self.kind}")
        if self.kind == "quantile":
            a = self.alpha if self.alpha is not None else 0.5
            if not 0 < a < 1:
                raise DPError(f"a quantile's α must be between 0 and 1 (0.5 is the median), got {a!r}")
            steps = self.bins or QUANTILE_STEPS
            if not 1 <= steps < limits.QUANTILE_MAX_CANDIDATES:
                raise DPError(
                    f"a quantile's steps between its bounds must be 1 to {limits.QUANTILE_MAX_CANDIDATES - 1:,}"
                )
        elif self.alpha is not None:
            raise DPError("α belongs to a quantile")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise DPError(f"a statistic's weight must be a number > 0, got {self.weight!r}")
        if self.target is not None and not (self.target > 0 and math.isfinite(self.target)):
            raise DPError(f"a target accuracy must be a number > 0, got {self.target!r}")
        if len(set(self.by)) != len(self.by):
            raise DPError("a statistic is grouped by each key once")

    @property
    def quantile_alpha(self) -> float:
        return self.alpha if self.alpha is not None else 0.5

    def candidates(self) -> tuple[float, ...]:
        """A quantile's public candidates: its bounds in ``bins`` (default 100) equal steps."""
        assert self.bounds is not None
        lo, hi = self.bounds
        steps = self.bins or QUANTILE_STEPS
        return tuple(lo + (hi - lo) * i / steps for i in range(steps + 1))

    def label(self) -> str:
        """The statistic in words: "count", "histogram of sex", "mean of cost in [0, 50,000]", "median of age"."""
        b = f" in [{self.bounds[0]:,g}, {self.bounds[1]:,g}]" if self.bounds is not None else ""
        if self.kind == "count":
            text = "count of rows"
        elif self.kind == "histogram":
            text = f"histogram of {self.column}" + (f"{b} ({self.bins} bins)" if self.bounds else "")
        elif self.kind == "quantile":
            a = self.quantile_alpha
            name = "median" if a == 0.5 else f"{a:g} quantile"
            text = f"{name} of {self.column}{b}"
        else:
            text = f"{self.kind} of {self.column}{b}"
        return text + (f" by {', '.join(self.by)}" if self.by else "")

    def to_dict(self) -> Json:
        out: Json = {"kind": self.kind}
        if self.column is not None:
            out["column"] = self.column
        if self.bounds is not None:
            out["bounds"] = [self.bounds[0], self.bounds[1]]
        if self.categories is not None:
            out["categories"] = list(self.categories)
        if self.bins is not None:
            out["bins"] = self.bins
        if self.alpha is not None:
            out["alpha"] = self.alpha
        if self.by:
            out["by"] = list(self.by)
        if self.weight != 1.0:
            out["weight"] = self.weight
        if self.target is not None:
            out["target"] = self.target
        return out

    @classmethod
    def from_dict(cls, d: Any) -> Statistic:
        if not isinstance(d, Mapping):
            raise DPError("each statistic is an object with at least a kind")
        unknown = set(d) - {"kind", "column", "bounds", "categories", "bins", "alpha", "by", "weight", "target"}
        if unknown:
            raise DPError(f"unknown field(s) of a statistic: {', '.join(sorted(map(str, unknown)))}")
        kind = str(d.get("kind", "")).strip().lower()
        col = None if d.get("column") in (None, "") else _text(d.get("column"), "a statistic's column")
        bounds = None
        if d.get("bounds") is not None:
            raw = d["bounds"]
            if isinstance(raw, str):
                raw = raw.split(":")
            if not isinstance(raw, (list, tuple)) or len(raw) != 2:
                raise DPError(f"bounds of {col!r} are lo:hi, e.g. 18:90")
            bounds = (_number(raw[0], "a lower bound"), _number(raw[1], "an upper bound"))
        cats = None if d.get("categories") is None else _categories(d["categories"], f"histogram of {col!r}")
        bins = None
        if d.get("bins") is not None:
            b = _number(d["bins"], "bins")
            if b != int(b):
                raise DPError("bins must be a whole number")
            bins = int(b)
        alpha = None if d.get("alpha") is None else _number(d["alpha"], "a quantile's α")
        by_raw = d.get("by") or ()
        if isinstance(by_raw, str):
            by_raw = [b for b in by_raw.split(",") if b.strip()]
        if not isinstance(by_raw, (list, tuple)):
            raise DPError("by lists key columns")
        by = tuple(_text(b, "a key column") for b in by_raw)
        weight = _number(d.get("weight", 1.0), "a weight")
        target = None if d.get("target") is None else _number(d["target"], "a target accuracy")
        return cls(kind, col, bounds, cats, bins, alpha, by, weight, target)


@dataclass(frozen=True)
class Unit:
    """Whose privacy ε protects. ``person``: the column that marks one person's rows (None: every row is its own
    unit); ``max_rows``: rows of one person kept (k, the first k in the data's order); ``public_max_rows``: for a
    row-level plan, the public most rows one person can have (the built-in visits: 10), so that ε per person can
    be stated (None: not known)."""

    person: str | None = None
    max_rows: int = 1
    public_max_rows: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.max_rows <= limits.PLAN_MAX_ROWS_PER_PERSON:
            raise DPError(f"rows kept per person must be 1 to {limits.PLAN_MAX_ROWS_PER_PERSON}, got {self.max_rows!r}")
        if self.person is None and self.max_rows != 1:
            raise DPError("rows kept per person needs the column that marks a person's rows")
        if self.public_max_rows is not None and not 1 <= self.public_max_rows <= limits.PLAN_MAX_ROWS_PER_PERSON:
            raise DPError(f"the public most rows per person must be 1 to {limits.PLAN_MAX_ROWS_PER_PERSON}")

    @property
    def person_level(self) -> bool:
        return self.person is not None

    @property
    def contributions(self) -> int:
        """Rows one unit can add or remove: k for a person, 1 for a row."""
        return self.max_rows if self.person_level else 1

    def to_dict(self) -> Json:
        out: Json = {"person": self.person, "max_rows": self.max_rows}
        if self.public_max_rows is not None:
            out["public_max_rows"] = self.public_max_rows
        return out

    @classmethod
    def from_dict(cls, d: Any) -> Unit:
        if d is None:
            return cls()
        if not isinstance(d, Mapping):
            raise DPError("unit is {person, max_rows}")
        person = None if d.get("person") in (None, "") else _text(d.get("person"), "the person-id column")
        k = _number(d.get("max_rows", 1), "rows kept per person")
        pm = d.get("public_max_rows")
        if k != int(k) or (pm is not None and _number(pm, "the public most rows per person") != int(pm)):
            raise DPError("rows per person are whole numbers")
        return cls(person, int(k), None if pm is None else int(pm))


@dataclass(frozen=True)
class Plan:
    """Several statistics released once on one budget (see the module)."""

    statistics: tuple[Statistic, ...]
    epsilon: float | None = 1.0
    split: str = "hand"
    unit: Unit = field(default_factory=Unit)
    keys: tuple[Key, ...] = ()
    expected_rows: int = 1_000
    title: str = "Planned release"

    def __post_init__(self) -> None:
        if not self.statistics:
            raise DPError("a plan needs at least one statistic")
        if len(self.statistics) > limits.PLAN_MAX_STATISTICS:
            raise DPError(f"a plan holds at most {limits.PLAN_MAX_STATISTICS} statistics")
        if self.split not in SPLITS:
            raise DPError(f"unknown split {self.split!r}; choose {', '.join(SPLITS)}")
        if self.split == "accuracy":
            missing = [s.label() for s in self.statistics if s.target is None]
            if missing:
                raise DPError(f"splitting ε from target accuracies needs a target for every statistic: {missing[0]}")
        else:
            e = self.epsilon
            if e is None or not (limits.EPSILON_MIN <= e <= limits.PLAN_EPSILON_MAX):
                raise DPError(
                    f"the plan's total ε must be from {limits.EPSILON_MIN:g} to {limits.PLAN_EPSILON_MAX:g}, got {e!r}"
                )
        if not 1 <= self.expected_rows <= limits.UPLOAD_MAX_ROWS:
            raise DPError(f"the expected number of rows (a public guess) must be 1 to {limits.UPLOAD_MAX_ROWS:,}")
        names = [k.column for k in self.keys]
        if len(set(names)) != len(names):
            raise DPError("each key column is declared once")
        for s in self.statistics:
            for b in s.by:
                if b not in names:
                    raise DPError(f"{s.label()}: group key {b!r} needs its public categories (declare it in keys)")
        if self.unit.person is not None and any(
            s.column == self.unit.person or self.unit.person in s.by for s in self.statistics
        ):
            raise DPError("the person-id column marks whose rows are whose: it is not released or grouped by")
        if not self.title.strip() or len(self.title) > 200:
            raise DPError("a plan's title is 1 to 200 characters")

    def key(self, column: str) -> Key:
        return next(k for k in self.keys if k.column == column)

    def to_dict(self) -> Json:
        return {
            "title": self.title,
            "epsilon": self.epsilon,
            "split": self.split,
            "unit": self.unit.to_dict(),
            "keys": [k.to_dict() for k in self.keys],
            "expected_rows": self.expected_rows,
            "statistics": [s.to_dict() for s in self.statistics],
        }

    def canonical(self) -> str:
        """One text per plan (sorted keys, no spaces): the ledger recognises the same plan asked again."""
        return "PLAN " + json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Any) -> Plan:
        if not isinstance(d, Mapping):
            raise DPError("a plan is an object with statistics (a JSON or YAML file as `plan --template` writes it)")
        unknown = set(d) - {"title", "epsilon", "split", "unit", "keys", "expected_rows", "statistics"}
        if unknown:
            raise DPError(f"unknown field(s) of a plan: {', '.join(sorted(map(str, unknown)))}")
        stats = d.get("statistics")
        if not isinstance(stats, Sequence) or isinstance(stats, str):
            raise DPError("a plan's statistics are a list")
        if len(stats) > limits.PLAN_MAX_STATISTICS:
            raise DPError(f"a plan holds at most {limits.PLAN_MAX_STATISTICS} statistics")
        keys = d.get("keys") or []
        if not isinstance(keys, Sequence) or isinstance(keys, str):
            raise DPError("a plan's keys are a list of {column, categories}")
        eps = d.get("epsilon", 1.0)
        rows = _number(d.get("expected_rows", 1_000), "the expected number of rows")
        if rows != int(rows):
            raise DPError("the expected number of rows is a whole number")
        return cls(
            tuple(Statistic.from_dict(s) for s in stats),
            None if eps is None else _number(eps, "the plan's ε"),
            str(d.get("split", "hand")),
            Unit.from_dict(d.get("unit")),
            tuple(Key.from_dict(k) for k in keys),
            int(rows),
            str(d.get("title") or "Planned release"),
        )


def loads(text: str | bytes, name: str = "the plan") -> Plan:
    """A plan from a file's text: JSON, or YAML (safe loading) when it is not JSON."""
    raw = text.decode("utf-8", errors="strict") if isinstance(text, bytes) else text
    if len(raw) > limits.PLAN_FILE_MAX_BYTES:
        raise DPError(f"{name} is larger than a plan can be ({limits.PLAN_FILE_MAX_BYTES:,} bytes)")
    try:
        data = json.loads(raw)
    except ValueError:
        try:
            import yaml  # lazy: only a YAML plan needs it
        except ImportError:  # pragma: no cover - PyYAML is in requirements.txt
            raise DPError(f"{name} is not JSON, and reading YAML needs PyYAML") from None
        try:
            data = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
            raise DPError(f"{name} is neither JSON nor YAML ({first[:100]})") from None
    return Plan.from_dict(data)


def dumps(plan: Plan, fmt: str = "json") -> str:
    """The plan as JSON (``fmt`` "json") or YAML ("yaml")."""
    if fmt == "json":
        return json.dumps(plan.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        import yaml  # lazy: only a YAML plan needs it

        return str(yaml.safe_dump(plan.to_dict(), sort_keys=False, allow_unicode=True))
    raise DPError(f"a plan is written as json or yaml, got {fmt!r}")
