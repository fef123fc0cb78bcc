"""What every kind of statement says the same way, built and checked side by side: the neighbour relations and the
unit, the δ a statement states ε at, the leaks a run warned about, the noise source with its "not a DP release"
flag, and the public settings of a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from dpcore.statements.checks import Checker
from dpcore.training.config import N_PUBLIC_NOTE, REPRODUCIBLE_LABEL, dataset_kind, dataset_name
from dpcore.training.config import NOT_DP_NOTE as DIAGNOSTICS_NOTE

Json = dict[str, Any]

__all__ = ["DIAGNOSTICS_NOTE", "N_PUBLIC_NOTE"]

STANDARD_DELTAS = (1e-5, 1e-6)
UNIT = "one patient's record (one row of the data)"
ADD_REMOVE = "add/remove one record"
#: The relation of every training run and sweep: n and the list of classes are released exactly (they fix the
#: sample rate and the step count; a naive Bayes model's class counts sum to n), so they are treated as public.
ADD_REMOVE_N_PUBLIC = "add/remove one record; the number of training rows n and the list of classes are public"


def deltas(own: float | None = None) -> list[float]:
    """The δ a statement states ε at: 1e-5, 1e-6 and the run's own δ (never 1/n: a mechanism that publishes one
    row outright meets δ = 1/n, so an ε there guarantees nothing)."""
    out = list(STANDARD_DELTAS)
    if own and not any(math.isclose(float(own), d) for d in out):
        out.append(float(own))
    return sorted(out, reverse=True)


def noise(result: Mapping[str, Any]) -> Json:
    """The noise source of a run or a point, with the "not a DP release" flag and label."""
    if "reproducible_noise" in result:
        rep = bool(result["reproducible_noise"])
        out: Json = {
            "reproducible_noise": rep,
            "noise_source": result.get("noise_source"),
            "dp_release": bool(result.get("dp_release", not rep)),
        }
        if rep:
            out["release_label"] = result.get("release_label") or REPRODUCIBLE_LABEL
        return out
    return {
        "reproducible_noise": True,
        "dp_release": False,
        "release_label": "reproducible noise: not a DP release",
        "noise_source": "not recorded: runs made before the noise source was recorded seeded sampling and noise "
        "from the public seed (reproducible: not a DP release)",
    }


def leaks(
    *,
    preprocessing: Iterable[Any] = (),
    warnings: Iterable[Any] = (),
    reproducible: bool = False,
    diagnostics: bool = True,
    public_n: bool = True,
) -> list[Json]:
    """Everything a run warned about that ε does not cover, one entry each: preprocessing from private rows,
    δ ≥ 1/n, reproducible noise, diagnostics on private rows, and n (with the classes) treated as public."""
    out: list[Json] = [{"kind": "preprocessing", "text": str(x)} for x in preprocessing]
    out += [{"kind": "delta", "text": str(x)} for x in warnings]
    if reproducible:
        out.append(
            {
                "kind": "reproducible_noise",
                "text": REPRODUCIBLE_LABEL + ": sampling and noise were drawn "
                "from the public seed, so anyone can re-run them; no ε holds",
            }
        )
    if diagnostics:
        out.append({"kind": "diagnostics", "text": DIAGNOSTICS_NOTE + "; they are not part of the release"})
    if public_n:
        out.append({"kind": "public_n", "text": N_PUBLIC_NOTE})
    return out


def leak_kinds(st: Mapping[str, Any]) -> set[Any]:
    raw = st.get("leaks")
    return {lk.get("kind") for lk in (raw if isinstance(raw, list) else []) if isinstance(lk, dict)}


def check_noise(c: Checker, st: Mapping[str, Any], at: str = "") -> None:
    """The "not a DP release" flag and what goes with it: the flag, dp_release, the label and the noise source
    agree, and a reproducible run lists the leak."""
    rep = st.get("reproducible_noise")
    if not isinstance(rep, bool):
        c.fail(
            f"{at}reproducible_noise",
            f"{at}reproducible_noise is missing (the flag that says whether the noise was drawn "
            "from a seed: not a DP release)",
        )
        return
    c.same(f"{at}dp_release", st.get("dp_release"), not rep, 0)
    src = str(st.get("noise_source") or "")
    seeded = "seed" in src.lower() and "secret seeds" not in src.lower()
    if seeded and not rep:
        c.fail(
            f"{at}reproducible_noise",
            f"{at}reproducible_noise is false, but {at}noise_source says the noise came from a seed "
            f"({src[:80]!r}): the 'not a DP release' flag was removed",
        )
    if rep:
        if REPRODUCIBLE_LABEL not in str(st.get("release_label") or ""):
            c.fail(f"{at}release_label", f"{at}release_label must say '{REPRODUCIBLE_LABEL}' for reproducible noise")
        if "reproducible_noise" not in leak_kinds(st):
            c.fail(f"{at}leaks", f"{at}leaks does not list the reproducible noise its run warned about")


def public(n: Any, n_classes: Any) -> Json:
    return {"rows": n, "classes": n_classes, "note": N_PUBLIC_NOTE}


#: Settings of a run that are public (chosen by whoever trains; the seed fixes only the split and initial weights).
PUBLIC_SETTINGS = (
    "model",
    "target",
    "epochs",
    "batch_size",
    "lr",
    "lr_schedule",
    "clip",
    "optimizer",
    "accountant",
    "seed",
    "train_size",
    "test_size",
    "hidden",
    "epsilon",
    "delta",
    "noise_multiplier",
)


def public_settings(config: Mapping[str, Any] | None, dataset: str | None) -> Json:
    """The run's settings as released: the dataset by name (an upload's server path never leaves), the rest as
    given (target ε, δ, epochs, batch size, learning rate, clip, optimiser, seed …)."""
    cfg = dict(config or {})
    out: Json = {"dataset": dataset_name(dataset_kind(dataset if dataset is not None else cfg.get("dataset")))}
    out.update({k: cfg[k] for k in PUBLIC_SETTINGS if k in cfg})
    if "epsilon" in out:
        out["target_epsilon"] = out.pop("epsilon")
    return out
