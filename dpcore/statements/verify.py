"""Checking a privacy statement: its signature, then every figure recomputed from the settings it records.

:func:`parse` reads a statement file's bytes (a JSON object, at most :data:`MAX_DEPTH` levels deep — an array, a
number or deeply nested JSON is a clear error, never a traceback; a key twice in one object, NaN, Infinity or a
number too large for a float are refused: readers differ on them, and the signature covers only what Python's json
keeps). :func:`verify` returns the problems, each a
sentence that names the field (``accountant.epsilon is 0.01, recomputed 0.99``):

* the signature (:func:`dpcore.statements.signing.check`): a field changed, added or removed after signing is named;
* what the statement must say for its kind: the neighbour relation with n public, the unit of privacy of its
  dataset, the dataset's name, the leaks its run warned about (reproducible noise, δ ≥ 1/n, diagnostics), the
  noise source consistent with the "not a DP release" flag;
* every figure, recomputed: a DP-SGD run's sample rate and steps from n, batch size and epochs; the run's own
  accountant ε and the PLD's ε at each δ from σ, q and steps; the worst-case trade-off curve; μ; the
  privacy-loss tail; the summary; a ledger's totals from its recorded charges (basic composition, the best rule
  at each δ, its trade-off envelope; a μ of Gaussian DP is refused: the discrete Gaussian answers have none); an
  advice's setting, risk and error (:func:`dpcore.advisor.decision.recompute`); a synthetic release's ε, δ and ρ
  from its OpenDP measurement, rebuilt from the declarations it records (:func:`dpcore.synth.statement.recompute`).

A statement passes only when all of these hold.

Past 400 lines on purpose: the one reader (:func:`parse`) and the one checker of every kind of statement stay in
one module, so that no kind can be verified without the same parse, signature and wording checks.
"""

from __future__ import annotations

import json
import math

from dpcore.errors import DPError

#: Nesting a statement may have (a real one is 4 levels deep); deeper is refused before any recursion.
MAX_DEPTH = 32
_TOL = 1e-6


def parse(raw: bytes, name: str = "the file") -> dict:
    """A statement from a file's bytes, or a DPError that says what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DPError(
            f"could not read a statement from {name}: it is not UTF-8 text (a statement is a JSON file "
            "as `statement --job/--sweep` writes it)"
        ) from None
    depth = _depth(text)
    if depth > MAX_DEPTH:
        raise DPError(
            f"could not read a statement from {name}: it is nested {depth} levels deep, and a statement "
            f"is at most {MAX_DEPTH}"
        )
    try:
        st = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite_float)
    except _Ambiguous as exc:
        raise DPError(
            f"could not read a statement from {name}: {exc}; a statement as DP Explorer writes it has "
            "neither, so this file was edited"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise DPError(
            f"could not read a statement from {name}: it is not valid JSON ({str(exc)[:120]}); a "
            "statement is a JSON object"
        ) from None
    if not isinstance(st, dict):
        raise DPError(
            f"{name} holds a JSON {type(st).__name__.replace('dict', 'object')}, not a statement (a "
            "JSON object with a kind, a subject and a signature)"
        )
    return st


class _Ambiguous(ValueError):
    """JSON that readers read differently: a key twice in one object, or a number JSON does not allow."""


def _unique_keys(pairs):
    """One object, each key once. With a key twice, Python's json keeps the last value and other readers (or a
    person reading the file) the first: the signature covers only what Python kept, so such a file could show one
    figure and verify another."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _Ambiguous(f"the field {k[:60]!r} appears twice in one object")
        out[k] = v
    return out


def _no_constant(word: str):
    """NaN, Infinity and -Infinity are not JSON; written where the signed statement has null they signed the same
    (the canonical form writes a non-finite number as null)."""
    raise _Ambiguous(f"{word} is not a number JSON allows")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e999 reads as infinity, which the canonical form writes as null
        raise _Ambiguous(f"{text[:40]} is not a finite number")
    return x


def _depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings, without recursion."""
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


# --- helpers ----------------------------------------------------------------------------------------------


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _close(a, b, rel=_TOL) -> bool:
    if a is None or b is None:
        return a is b
    if not (_num(a) and _num(b)):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def _get(d, path: str):
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


class _Check:
    """Collects problems; ``same(path, recorded, recomputed)`` names the field when they differ."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.checked = 0

    def same(self, path: str, recorded, recomputed, rel: float = _TOL) -> None:
        self.checked += 1
        if not _close(recorded, recomputed, rel):
            shown = "missing" if recorded is None else f"{recorded!r}"[:80]
            self.problems.append(f"{path} is {shown}, recomputed {recomputed!r}"[:300])

    def need(self, path: str, value, what: str = "a number") -> bool:
        if value is None or (what == "a number" and not _num(value)):
            self.problems.append(f"{path} is missing or not {what}")
            return False
        return True

    def run(self, path: str, fn, *args):
        """``fn(*args)``, or None with a problem naming ``path`` when the recorded inputs are refused."""
        try:
            return fn(*args)
        except DPError as err:
            self.problems.append(f"{path}: the recorded settings are refused ({err})")
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as err:
            self.problems.append(f"{path}: the recorded settings cannot be used ({type(err).__name__})")
        return None


# --- DP-SGD blocks (a training run, each point of a sweep) ------------------------------------------------------


def _dpsgd(c: _Check, b: dict, at: str) -> None:
    from dpcore.advisor.dpsgd import dpsgd_loss_tail
    from dpcore.attacks import audit
    from dpcore.statements.build import STANDARD_DELTAS
    from dpcore.training import accounting

    mech = b.get("mechanism") if isinstance(b.get("mechanism"), dict) else {}
    s, q, t = mech.get("noise_multiplier"), mech.get("sample_rate"), mech.get("steps")
    if not (
        c.need(f"{at}mechanism.noise_multiplier", s)
        & c.need(f"{at}mechanism.sample_rate", q)
        & c.need(f"{at}mechanism.steps", t)
    ):
        return
    inputs = _get(b, "recompute.inputs") or {}
    for k, v in (("noise_multiplier", s), ("sample_rate", q), ("steps", t)):
        c.same(f"{at}recompute.inputs.{k}", inputs.get(k), v, 0)
    c.same(f"{at}sampling.sample_rate", _get(b, "sampling.sample_rate"), q, 0)
    rows = b.get("epsilon_at_delta") if isinstance(b.get("epsilon_at_delta"), list) else []
    deltas = [r.get("delta") for r in rows if isinstance(r, dict)]
    for d in STANDARD_DELTAS:
        if not any(_close(d, x) for x in deltas):
            c.problems.append(
                f"{at}epsilon_at_delta has no row at δ = {d:g} (a statement states ε at δ = 1e-5 and "
                "1e-6): a row was removed"
            )
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not c.need(f"{at}epsilon_at_delta[{i}].delta", r.get("delta")):
            continue
        d = r["delta"]
        c.same(
            f"{at}epsilon_at_delta[{i}].epsilon_pld",
            r.get("epsilon_pld"),
            c.run(f"{at}epsilon_at_delta[{i}]", accounting.pld_epsilon, s, q, t, d),
        )
        for name in accounting.ACCOUNTANTS:
            if f"epsilon_{name}" in r:
                c.same(
                    f"{at}epsilon_at_delta[{i}].epsilon_{name}",
                    r[f"epsilon_{name}"],
                    c.run(f"{at}epsilon_at_delta[{i}]", accounting.epsilon, s, q, t, d, name),
                )
    acc = b.get("accountant") if isinstance(b.get("accountant"), dict) else {}
    acc_eps = acc.get("epsilon")
    if str(acc.get("name")) in accounting.ACCOUNTANTS and acc.get("delta"):
        acc_eps = c.run(f"{at}accountant", accounting.epsilon, s, q, t, acc["delta"], acc["name"])
        c.same(f"{at}accountant.epsilon", acc.get("epsilon"), acc_eps)
    tr = b.get("tradeoff") if isinstance(b.get("tradeoff"), dict) else {}
    fpr, tpr = tr.get("fpr"), tr.get("tpr")
    if (
        isinstance(fpr, list)
        and isinstance(tpr, list)
        and fpr
        and len(fpr) == len(tpr)
        and all(_num(x) and 0 <= x <= 1 for x in fpr)
    ):
        curve = c.run(f"{at}tradeoff", accounting.dpsgd_tradeoff, s, q, t, fpr)
        if curve is not None:
            c.checked += 1
            bad = [i for i, (a, z) in enumerate(zip(tpr, curve["tpr"])) if not _close(a, z, 1e-6)]
            if bad:
                c.problems.append(
                    f"{at}tradeoff.tpr[{bad[0]}] is {tpr[bad[0]]!r}, recomputed {curve['tpr'][bad[0]]!r} "
                    f"(the worst-case TPR at FPR {fpr[bad[0]]:g}; {len(bad)} point(s) differ)"
                )
    else:
        c.problems.append(f"{at}tradeoff is missing or damaged (fpr and tpr lists of equal length)")
    mu = _get(b, "mu.value")
    if mu is not None:
        c.same(f"{at}mu.value", mu, c.run(f"{at}mu", audit.gdp_mu, s, q, t) if t else 0.0)
    lt = b.get("loss_tail")
    if isinstance(lt, dict):
        c.same(f"{at}loss_tail.epsilon", lt.get("epsilon"), acc_eps)
        if _num(lt.get("epsilon")):
            c.same(
                f"{at}loss_tail.probability",
                lt.get("probability"),
                c.run(f"{at}loss_tail", dpsgd_loss_tail, s, q, t, lt["epsilon"]),
            )


def _leak_kinds(st: dict) -> set:
    return {lk.get("kind") for lk in st.get("leaks") or [] if isinstance(lk, dict)}


def _noise_flags(c: _Check, st: dict, at: str = "") -> None:
    """The "not a DP release" flag and what goes with it: the flag, dp_release, the label and the noise source
    agree, and a reproducible run lists the leak."""
    from dpcore.training.config import REPRODUCIBLE_LABEL

    rep = st.get("reproducible_noise")
    if not isinstance(rep, bool):
        c.problems.append(
            f"{at}reproducible_noise is missing (the flag that says whether the noise was drawn "
            "from a seed: not a DP release)"
        )
        return
    c.same(f"{at}dp_release", st.get("dp_release"), not rep, 0)
    src = str(st.get("noise_source") or "")
    seeded = "seed" in src.lower() and "secret seeds" not in src.lower()
    if seeded and not rep:
        c.problems.append(
            f"{at}reproducible_noise is false, but {at}noise_source says the noise came from a seed "
            f"({src[:80]!r}): the 'not a DP release' flag was removed"
        )
    if rep:
        if REPRODUCIBLE_LABEL not in str(st.get("release_label") or ""):
            c.problems.append(f"{at}release_label must say '{REPRODUCIBLE_LABEL}' for reproducible noise")
        if "reproducible_noise" not in _leak_kinds(st):
            c.problems.append(f"{at}leaks does not list the reproducible noise its run warned about")


def _training_run(c: _Check, st: dict) -> None:
    from dpcore.statements.build import ADD_REMOVE, ADD_REMOVE_N_PUBLIC, N_PUBLIC_NOTE, _summary
    from dpcore.training import accounting
    from dpcore.training.config import dataset_name, unit_of_privacy

    kind = st.get("dataset_kind")
    c.same("dataset", st.get("dataset"), dataset_name(kind), 0)
    c.same("unit_of_privacy", st.get("unit_of_privacy"), unit_of_privacy(kind), 0)
    if st.get("private") is not True:
        c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE, 0)
        if st.get("private") is not False:
            c.problems.append("private is missing (true for a DP run, false for a baseline)")
        return
    c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE_N_PUBLIC, 0)
    c.same("public.rows", _get(st, "public.rows"), st.get("rows"), 0)
    c.same("public.note", _get(st, "public.note"), N_PUBLIC_NOTE, 0)
    _noise_flags(c, st)
    kinds = _leak_kinds(st)
    for k, what in (("diagnostics", "diagnostics on private rows"), ("public_n", "n treated as public")):
        if k not in kinds:
            c.problems.append(f"leaks does not list the {what}")
    settings = st.get("settings") if isinstance(st.get("settings"), dict) else {}
    n, d = st.get("rows"), settings.get("delta")
    if _num(n) and _num(d) and n > 0 and d >= 1 / n and "delta" not in kinds:
        c.problems.append(f"leaks does not list δ = {d:g} ≥ 1/n = 1/{n}, which its run warned about")
    if isinstance(st.get("mechanism"), dict) and st["mechanism"].get("noise_multiplier") is not None:
        b, e = settings.get("batch_size"), settings.get("epochs")
        if c.need("rows", n) and c.need("settings.batch_size", b) and c.need("settings.epochs", e):
            q = c.run("settings.batch_size", accounting.sample_rate_for, int(n), int(b))
            if q is not None:
                c.same("mechanism.sample_rate", _get(st, "mechanism.sample_rate"), q)
                c.same("mechanism.steps", _get(st, "mechanism.steps"), int(e) * accounting.steps_per_epoch(q), 0)
        c.same("accountant.delta", _get(st, "accountant.delta"), d)
        _dpsgd(c, st, "")
    else:  # diffprivlib: pure ε at δ = 0
        eps = _get(st, "accountant.epsilon")
        c.same("accountant.epsilon", eps, settings.get("target_epsilon"))
        c.same("accountant.delta", _get(st, "accountant.delta"), 0.0, 0)
        c.same("epsilon_at_delta[0].epsilon", _get(st, "epsilon_at_delta[0].epsilon"), eps)
    if not c.problems:  # the words, from figures that check out
        c.same("summary", st.get("summary"), c.run("summary", _summary, st), 0)


def _sweep(c: _Check, st: dict) -> None:
    from dpcore.statements.build import ADD_REMOVE_N_PUBLIC, N_PUBLIC_NOTE
    from dpcore.training.config import dataset_name, unit_of_privacy

    kind = st.get("dataset_kind")
    c.same("dataset", st.get("dataset"), dataset_name(kind), 0)
    c.same("unit_of_privacy", st.get("unit_of_privacy"), unit_of_privacy(kind), 0)
    c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE_N_PUBLIC, 0)
    if not any(isinstance(lk, dict) and lk.get("text") == N_PUBLIC_NOTE for lk in st.get("leaks") or []):
        c.problems.append("leaks does not say that n and the classes are treated as public")
    points = st.get("points")
    if not isinstance(points, list) or not points:
        c.problems.append("points is missing or empty (a sweep statement states each DP point)")
        return
    reps = []
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            c.problems.append(f"points[{i}] is not an object")
            continue
        _noise_flags(c, p, f"points[{i}].")
        reps.append(p.get("reproducible_noise") is True)
        if _get(p, "diagnostics.not_covered_by_epsilon") is not True:
            c.problems.append(f"points[{i}].diagnostics must be labelled not_covered_by_epsilon")
        _dpsgd(c, p, f"points[{i}].")
    c.same("reproducible_noise", st.get("reproducible_noise"), any(reps), 0)


def _ledger(c: _Check, st: dict) -> None:
    import numpy as np

    from dpcore.attacks import audit
    from dpcore.noise import composition
    from dpcore.statements.build import _best_at
    from dpcore.training.accounting import TRADEOFF_FPR

    q = st.get("queries")
    if not isinstance(q, list):
        c.problems.append("queries is missing (a ledger statement lists every answer it covers)")
        return
    for i, x in enumerate(q):
        if not (isinstance(x, dict) and _num(x.get("epsilon")) and _num(x.get("delta"))):
            c.problems.append(f"queries[{i}] needs its epsilon and delta")
            return
    if not q:
        return
    e, d = composition.basic([x["epsilon"] for x in q], [x["delta"] for x in q])
    c.same("accountant.epsilon", _get(st, "accountant.epsilon"), e)
    c.same("accountant.delta", _get(st, "accountant.delta"), d)
    rows = st.get("epsilon_at_delta") if isinstance(st.get("epsilon_at_delta"), list) else []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not c.need(f"epsilon_at_delta[{i}].delta_prime", r.get("delta_prime")):
            continue
        best = c.run(f"epsilon_at_delta[{i}]", _best_at, q, r["delta_prime"])
        if best is not None:
            c.same(f"epsilon_at_delta[{i}].epsilon", r.get("epsilon"), best["epsilon"])
            c.same(f"epsilon_at_delta[{i}].delta", r.get("delta"), best["delta"])
    tr = st.get("tradeoff")
    if isinstance(tr, dict) and isinstance(tr.get("tpr"), list):
        profile = [(e, d)] + [
            (r["epsilon"], r["delta"])
            for r in rows
            if isinstance(r, dict) and _num(r.get("epsilon")) and _num(r.get("delta"))
        ]
        fpr = np.asarray(tr.get("fpr") or TRADEOFF_FPR, float)
        want = audit.roc_from_privacy_profile([p[0] for p in profile], [p[1] for p in profile], fpr)
        c.checked += 1
        bad = [i for i, (a, z) in enumerate(zip(tr["tpr"], want)) if not _close(a, float(z), 1e-6)]
        if bad or len(tr["tpr"]) != len(want):
            i = bad[0] if bad else 0
            c.problems.append(
                f"tradeoff.tpr[{i}] is {tr['tpr'][i] if i < len(tr['tpr']) else None!r}, recomputed "
                f"{float(want[i])!r} from the (ε, δ) totals"
            )
    share, own = st.get("quota_share"), [x for x in q if x.get("by_this_quota")]
    if share:  # the quota's share: its own answers, composed the same way
        e_own, d_own = composition.basic([x["epsilon"] for x in own], [x["delta"] for x in own]) if own else (0.0, 0.0)
        c.same("quota_share.answers", share.get("answers"), len(own), 0)
        c.same("quota_share.epsilon", share.get("epsilon"), e_own)
        c.same("quota_share.delta", share.get("delta"), d_own)
    if "mu" in st:  # answers are drawn from the discrete Gaussian: ρ-zCDP, but no μ-GDP follows from ρ
        c.problems.append(
            "mu: a ledger's Gaussian answers are drawn from the discrete Gaussian, which is not "
            "μ-Gaussian-DP with μ = √(2ρ) (its trade-off curve rises above that μ's): the claim does not "
            "hold; the zCDP and RDP rows of epsilon_at_delta are what ρ gives"
        )


def _advice(c: _Check, st: dict) -> None:
    from dpcore.advisor import decision

    c.checked += 1
    c.problems.extend(decision.recompute(st))


def _synthetic(c: _Check, st: dict) -> None:
    from dpcore.synth import statement as synth_statement

    c.checked += 1
    c.problems.extend(synth_statement.recompute(st))


CHECKS = {
    "training_run": _training_run,
    "sweep": _sweep,
    "ledger": _ledger,
    "advice": _advice,
    "synthetic_release": _synthetic,
}


def verify(st: dict, *, key: bytes | None = None) -> dict:
    """The signature and every figure of ``st``: ``{"verified", "problems", "kind", "subject", "checked",
    "signature"}``. ``key``: the signing key to check with (default: this home's)."""
    from dpcore.statements import signing

    c = _Check()
    kind = st.get("kind")
    if kind not in CHECKS:
        c.problems.append(
            "kind is missing: not a DP Explorer statement (training_run, sweep, ledger or advice)"
            if kind is None
            else f"kind {str(kind)[:40]!r} is not a statement kind ({', '.join(CHECKS)})"
        )
    else:
        try:
            CHECKS[kind](c, st)
        except (AttributeError, KeyError, TypeError, IndexError, ValueError) as exc:  # a damaged structure
            c.problems.append(
                f"the statement's structure is damaged ({type(exc).__name__}: {str(exc)[:80]}); it cannot be recomputed"
            )
    sig = signing.check(st, key)
    block = st.get("signature") if isinstance(st.get("signature"), dict) else {}
    return {
        "verified": not c.problems and not sig,
        "problems": c.problems + sig,
        "kind": kind,
        "subject": st.get("subject"),
        "checked": c.checked,
        "signature": {"valid": not sig, "key_id": block.get("key_id"), "signed_at": block.get("signed_at")},
    }
