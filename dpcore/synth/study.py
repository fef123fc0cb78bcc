"""The re-identification page's synthetic-data study, as a background job: release DP synthetic tables of the
story's patients at a few ε, several times each, attack every one with the story's linkage, and measure what
each keeps — the numbers the page, the report and the advisor read.

Per ε and repetition, two releases with the same settings:

* **A**, fitted to the story's patients (the hospital's table): the neighbour search, the many-targets
  diagnosis guess, the exact-combination check, and its utility (marginals, the console's questions, a model
  trained on it and tested on real rows it never saw);
* **B**, fitted to an independent population from the same generator, each of its 2n people put in by a coin
  flip: nobody in the story is in it, so the same attacks on B are the baseline a synthetic table reaches
  without anyone's record; and the coin flips make B a one-run membership audit.

Job target ``"synth.study"`` (:func:`run_job`); :class:`Study` reads a finished job's result.

Who sees a study: like a training run, its owner (the browser or user that started it) and the admins — except
**the default study** (:func:`is_default`: the page's default settings on the story's default patients), which
the job store shares with everyone (:func:`dpcore.jobs.registry.shared`): once anyone (a session, or ``python -m
dpcore synth-study`` with its defaults) has finished it, every visitor reads its results at once, read-only; while
one runs, pressing Start again joins it instead of queueing another (:func:`submit`). Only its owner or an admin
may cancel, rename or delete it.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .. import limits
from ..attacks import linkage
from ..attacks import reidentification as story
from ..data import datasets
from ..errors import Cancelled, DPError
from ..jobs import owners, registry, store, workers
from ..jobs.display import ran_at
from ..jobs.registry import SYNTH_GROUP as GROUP
from . import attack, utility
from .failures import plain_errors
from .release import SynthConfig, check_synth_epsilon, release
from .schema import STORY_COLUMNS, medical
from .statement import release_statement

#: The column pairs that matter in the story: what the attacks link (age, zip code, salary with the diagnosis)
#: and what the console's questions ask.
STORY_PAIRS = (("age", "diagnosis"), ("age", "salary"), ("zip_code", "salary"), ("sex", "diagnosis"))
STORY_EPSILONS = (0.3, 1.0, 3.0, 10.0)
HOLDOUT_ROWS = 2_000  # real rows no release saw: the model-utility test set
SAMPLE_ROWS = 200  # rows of one synthetic table kept in the result (the page shows them; covered by ε)
#: Summaries kept per ε: attack and utility numbers over the repetitions.
METRICS = (
    "neighbour_matches",
    "neighbour_single",
    "neighbour_right",
    "targets_right",
    "targets_matched",
    "unique_exposed",
    "baseline_neighbour_matches",
    "baseline_neighbour_right",
    "baseline_targets_right",
    "baseline_unique_exposed",
    "membership_auc",
    "membership_tpr_at_1pct_fpr",
    "membership_lower_bound",
    "one_way_mean",
    "two_way_mean",
    "two_way_max",
    "model_accuracy",
    "rows",
    "seconds",
)


@dataclass(frozen=True)
class StudyConfig:
    n: int = datasets.REID_N
    seed: int = datasets.REID_SEED
    columns: tuple[str, ...] = STORY_COLUMNS
    epsilons: tuple[float, ...] = STORY_EPSILONS
    repetitions: int = 3
    generator: str = "mst"
    delta: float = 0.0
    rows: int | None = None
    pairs: tuple[tuple[str, str], ...] = STORY_PAIRS
    facts: tuple[tuple[str, str], ...] = story.StorySettings().facts
    qis: tuple[str, ...] = story.StorySettings().qis
    sensitive: str = "diagnosis"
    n_targets: int = story.StorySettings().n_targets
    target_seed: int = story.StorySettings().sim_seed

    def __post_init__(self):
        n = limits.check_int_range(self.n, limits.REID_MIN_ROWS, limits.REID_MAX_ROWS, "patients in the release")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "seed", limits.check_seed(self.seed, "data seed"))
        eps = tuple(sorted({check_synth_epsilon(e) for e in self.epsilons}))
        if not eps or len(eps) > limits.SYNTH_STUDY_MAX_EPSILONS:
            raise DPError(f"choose 1 to {limits.SYNTH_STUDY_MAX_EPSILONS} values of ε for the study, got {len(eps)}")
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(
            self,
            "repetitions",
            limits.check_int_range(self.repetitions, 1, limits.SYNTH_STUDY_MAX_REPETITIONS, "repetitions"),
        )
        cols = tuple(dict.fromkeys(self.columns))
        for must in (*self.qis, self.sensitive):
            if must not in cols:
                raise DPError(
                    f"release the column {story.label(must)!r}: the attacks link on the quasi-identifiers "
                    f"and guess the {story.label(self.sensitive)}"
                )
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "pairs", tuple(tuple(p) for p in self.pairs if set(p) <= set(cols)))
        # the neighbour's facts as (column, text), blanks dropped: a page's six fields and the story's three agree
        object.__setattr__(self, "facts", tuple((str(c), str(t).strip()) for c, t in self.facts if str(t).strip()))
        object.__setattr__(self, "qis", tuple(self.qis))
        self.release_config(eps[0])  # the generator, δ, rows and pairs are checked once, before anything runs
        medical(cols)

    def release_config(self, epsilon: float, sample_seed=None) -> SynthConfig:
        return SynthConfig(epsilon, self.delta, self.generator, self.rows, self.pairs, sample_seed)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(
            columns=list(self.columns),
            epsilons=list(self.epsilons),
            pairs=[list(p) for p in self.pairs],
            facts=[list(f) for f in self.facts],
            qis=list(self.qis),
        )
        return d

    @classmethod
    def from_dict(cls, d: dict) -> StudyConfig:
        d = dict(d)
        for k in ("columns", "epsilons", "qis"):
            if k in d:
                d[k] = tuple(d[k])
        for k in ("pairs", "facts"):
            if k in d:
                d[k] = tuple(tuple(x) for x in d[k])
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def label(self) -> str:
        eps = ", ".join(f"{e:g}" for e in self.epsilons)
        return (
            f"{self.generator.upper()} · ε {eps} · {self.repetitions} repetition"
            f"{'' if self.repetitions == 1 else 's'} · {self.n:,} patients"
        )

    @property
    def releases(self) -> int:
        return 2 * len(self.epsilons) * self.repetitions


def _seed(cfg: StudyConfig, *words: int) -> int:
    return int(np.random.SeedSequence([cfg.seed, 0x5E7, *words]).generate_state(1)[0])


@dataclass(frozen=True)
class _Data:
    real: pd.DataFrame
    codes: pd.DataFrame
    attacker: attack.Attacker
    holdout: pd.DataFrame
    reference: dict


def _data(cfg: StudyConfig) -> _Data:
    schema = medical(cfg.columns)
    real = story.release_of(story.population(cfg.n, cfg.seed))[list(cfg.columns)]
    codes = schema.encode(real)
    targets = linkage.pick_targets(len(real), cfg.n_targets, cfg.target_seed)
    att = attack.attacker(real, codes, cfg.qis, cfg.sensitive, story.conditions(cfg.facts), targets)
    holdout = datasets.medical(HOLDOUT_ROWS, _seed(cfg, 1))[list(cfg.columns)]
    exact = attack.attack_table(att, real, codes)  # the raw release at release resolution (no DP)
    s = codes[cfg.sensitive].to_numpy()
    reference = {
        "exact": exact.to_dict(),
        "blind_right": float(np.mean(att.targets[cfg.sensitive].to_numpy() == att.prior_code)),
        "unique_patients": int(len(att.unique)),
        "neighbour_found": att.neighbour_code is not None,
        "neighbour_value": schema.column(cfg.sensitive).values[att.neighbour_code]
        if att.neighbour_code is not None
        else None,
        "blind_value": schema.column(cfg.sensitive).values[att.prior_code],
        "model_accuracy": utility.model_accuracy(real, holdout, schema) if "salary" in cfg.columns else None,
        "sampling_floor": utility.marginal_errors(
            codes, schema.encode(datasets.medical(cfg.n, _seed(cfg, 5))[list(cfg.columns)]), schema, cfg.pairs
        ),
        "prior_share": float(np.mean(s == att.prior_code)),
    }
    return _Data(real, codes, att, holdout, reference)


def _pool(cfg: StudyConfig, rep: int) -> tuple[pd.DataFrame, np.ndarray]:
    """2n people of an independent population, each put in the baseline table by a coin flip."""
    pool = datasets.medical(2 * cfg.n, _seed(cfg, 2, rep))[list(cfg.columns)]
    included = np.random.default_rng(_seed(cfg, 3, rep)).random(len(pool)) < 0.5
    return pool, included


def run(cfg: StudyConfig, *, progress=None, cancelled=None) -> dict:
    """The whole study (see the module docstring); ``progress(**fields)`` after each release."""
    t0 = time.perf_counter()
    schema = medical(cfg.columns)
    data = _data(cfg)
    points, step, sample, statements = [], 0, None, {}
    for e in cfg.epsilons:
        runs = []
        for rep in range(cfg.repetitions):
            if cancelled is not None and cancelled():
                raise Cancelled("study cancelled")
            a = release(data.real, schema, cfg.release_config(e), cancelled=cancelled)
            step += 1
            if progress:
                progress(step=step, total_steps=cfg.releases, epsilon=e)
            pool, included = _pool(cfg, rep)
            b = release(pool[included], schema, cfg.release_config(e), cancelled=cancelled)
            step += 1
            if progress:
                progress(step=step, total_steps=cfg.releases, epsilon=e)
            ra = attack.attack_table(data.attacker, a.table, a.codes, seed=_seed(cfg, 4, rep))
            rb = attack.attack_table(data.attacker, b.table, b.codes, seed=_seed(cfg, 4, rep))
            mem = attack.membership_test(b.codes, schema.encode(pool), included, schema, a.plan.delta)
            err = utility.marginal_errors(data.codes, a.codes, schema, cfg.pairs)
            acc = utility.model_accuracy(a.table, data.holdout, schema) if "salary" in cfg.columns else None
            runs.append(
                {
                    "neighbour_matches": ra.neighbour_matches,
                    "neighbour_single": ra.neighbour_matches == 1,
                    "neighbour_right": ra.neighbour_right,
                    "targets_right": ra.targets_right,
                    "targets_matched": ra.targets_matched,
                    "unique_exposed": ra.unique_exposed,
                    "baseline_neighbour_matches": rb.neighbour_matches,
                    "baseline_neighbour_right": rb.neighbour_right,
                    "baseline_targets_right": rb.targets_right,
                    "baseline_unique_exposed": rb.unique_exposed,
                    "membership_auc": mem["auc"],
                    "membership_tpr_at_1pct_fpr": mem["tpr_at_1pct_fpr"],
                    "membership_lower_bound": mem["lower_bound"],
                    "membership": mem,
                    "one_way_mean": err["one_way_mean"],
                    "two_way_mean": err["two_way_mean"],
                    "two_way_max": err["two_way_max"],
                    "two_way": err["two_way"],
                    "one_way": err["one_way"],
                    "model_accuracy": acc,
                    "questions": utility.standard_answers(data.real, a.table),
                    "rows": int(len(a.table)),
                    "seconds": a.seconds + b.seconds,
                    "notes": a.notes + b.notes,
                }
            )
            if rep == 0:
                statements[str(e)] = release_statement(a, f"synthetic medical, {cfg.n:,} patients (seed {cfg.seed})")
                if sample is None or abs(math.log(e)) < abs(math.log(sample["epsilon"])):
                    sample = {
                        "epsilon": e,
                        "rows": a.table.head(SAMPLE_ROWS)
                        .astype(object)
                        .where(a.table.head(SAMPLE_ROWS).notna(), None)
                        .to_dict("records"),
                    }
        points.append({"epsilon": e, "runs": runs, "summary": summarise(runs)})
    return {
        "config": cfg.to_dict(),
        "points": points,
        "reference": data.reference,
        "statements": statements,
        "sample": sample,
        "seconds": time.perf_counter() - t0,
        "not_covered_by_epsilon": NOT_COVERED,
    }


#: What the study shows that ε does not cover (computed on the private rows): say it beside them.
NOT_COVERED = (
    "attack results, marginal errors, question answers and model accuracy are computed on the real "
    "rows for the data owner: not covered by ε"
)


def summarise(runs: list[dict]) -> dict:
    """Mean, min and max over the repetitions of every metric (booleans as shares; None left out)."""
    out = {}
    for k in METRICS:
        vals = [float(r[k]) for r in runs if r.get(k) is not None]
        if vals:
            out[k] = {
                "mean": float(np.mean(vals)),
                "min": float(min(vals)),
                "max": float(max(vals)),
                "count": len(vals),
            }
    return out


def run_job(params: dict, ctx) -> dict:
    """Job target ``"synth.study"``: ``params`` is a :meth:`StudyConfig.to_dict`."""
    cfg = StudyConfig.from_dict(params)
    with plain_errors("a synthetic-data study", f"job {ctx.job_id}: {cfg.label()}"):
        return run(cfg, progress=ctx.progress, cancelled=ctx.cancelled)


# --- reading a finished study -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Study:
    """A finished study's result, for the page, the report and the advisor."""

    result: dict
    job_id: str | None = None

    @property
    def config(self) -> StudyConfig:
        return StudyConfig.from_dict(self.result["config"])

    @property
    def epsilons(self) -> list[float]:
        return [p["epsilon"] for p in self.result["points"]]

    def point(self, epsilon: float) -> dict:
        pts = self.result["points"]
        return min(pts, key=lambda p: abs(math.log(p["epsilon"] / float(epsilon))))

    def stat(self, epsilon: float, metric: str) -> dict | None:
        return self.point(epsilon)["summary"].get(metric)

    def statement(self, epsilon: float) -> dict | None:
        return self.result.get("statements", {}).get(str(self.point(epsilon)["epsilon"]))

    def questions(self, epsilon: float) -> pd.DataFrame:
        """The standard questions at ``epsilon`` as text: the real table's answer, the synthetic tables' mean and
        their range over the releases ("31.1% (27.0–35.2%)")."""
        rows: dict[tuple[str, str, float], list[float]] = {}
        for run_ in self.point(epsilon)["runs"]:
            for q in run_["questions"]:
                rows.setdefault((q["question"], q["unit"], q["real"]), []).append(q["synthetic"])

        def fmt(x: float, unit: str) -> str:
            return f"${x:,.0f}" if unit == "$" else f"{x:.1f}%" if unit.startswith("%") else f"{x:.1f}"

        out = []
        for (question, unit, real), v in rows.items():
            syn = fmt(float(np.mean(v)), unit)
            if fmt(min(v), unit) != fmt(max(v), unit):
                syn += f" ({fmt(min(v), unit)} to {fmt(max(v), unit)})"
            out.append({"question": question, "real table": fmt(real, unit), "synthetic tables": syn})
        return pd.DataFrame(out, columns=["question", "real table", "synthetic tables"])

    def frame(self) -> pd.DataFrame:
        """One row per ε: every metric's mean, min and max (the charts and the report read it)."""
        rows = []
        for p in self.result["points"]:
            row = {"epsilon": p["epsilon"]}
            for k, s in p["summary"].items():
                row.update({k: s["mean"], f"{k}_min": s["min"], f"{k}_max": s["max"]})
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        return {"job": self.job_id, **self.result}


def from_job(job) -> Study:
    if job["status"] != "done" or not job.get("result"):
        raise DPError(f"study {job['id']} is {job['status']}: its numbers come when it has finished")
    return Study(job["result"], job["id"])


@functools.lru_cache(maxsize=1)
def _default() -> dict:
    return StudyConfig().to_dict()


def is_default(params) -> bool:
    """Whether a study's parameters (a :meth:`StudyConfig.to_dict`, or a config) are the default study's: the
    re-identification page's default settings on the story's default patients — the one study the job store
    shares with every visitor (the rule :mod:`dpcore.jobs.registry` names). Anything else is its owner's."""
    if isinstance(params, StudyConfig):
        params = params.to_dict()
    return isinstance(params, dict) and params == _default()


def submit(cfg: StudyConfig, *, owner: str, key: str | None = None) -> tuple[str, bool]:
    """Queue a study for ``owner`` (``key``: the click's idempotency key). Returns ``(job id, joined)``: for the
    default study, while an identical one is queued or running (anyone's), nothing is queued and its id comes back
    with ``joined`` True — twenty visitors pressing Start at once make one run that all of them watch."""
    try:
        return store.submit(
            registry.SYNTH_STUDY, cfg.to_dict(), owner=owner, group=GROUP, label=cfg.label(), key=key
        ), False
    except owners.SharedRunning as running:
        return running.ref, True


#: Set to 1, the server queues the default study when it starts, unless one is finished, queued or running: a
#: visitor of a demo finds its numbers at once (``make run`` with ``DP_EXPLORER_DEMO_STUDY=1``).
PREPARE_ENV = "DP_EXPLORER_DEMO_STUDY"


def prepare_default() -> str | None:
    """Queue the default study for everyone (owner: the server's command line) unless the store already has a
    finished, queued or running one, and start the workers; its job id, or None when nothing was queued."""
    cfg = StudyConfig()
    if find_shared(cfg, caller=owners.CLI) is not None:
        return None
    job_id, joined = submit(cfg, owner=owners.CLI.owner)
    workers.ensure_workers(2)
    return None if joined else job_id


def find(cfg: StudyConfig, *, caller, statuses=("queued", "running", "done")):
    """The caller's newest study with exactly these settings in one of ``statuses`` (a second click reuses it)."""
    want = cfg.to_dict()
    for j in store.list_jobs(caller=caller, group=GROUP, limit=200):
        if j["status"] in statuses and j.get("params") == want:
            return j
    return None


def find_shared(cfg: StudyConfig, *, caller):
    """For the default study only: the newest finished shared run (anyone's), else the one queued or running —
    what a visitor without a study of their own is shown at once. None for any other settings."""
    if not is_default(cfg):
        return None
    want = cfg.to_dict()
    runs = [
        j
        for j in store.list_jobs(caller=caller, group=GROUP, limit=200, shared=True)
        if j.shared and j.get("params") == want
    ]
    return next((j for j in runs if j["status"] == "done"), None) or next(
        (j for j in runs if j["status"] in ("queued", "running")), None
    )


def find_similar(cfg: StudyConfig, *, caller, limit: int = 200):
    """The caller's newest finished study of the same patients, neighbour and attack (other ε, releases or
    generator)."""
    same = ("n", "seed", "facts", "qis", "sensitive", "n_targets", "target_seed")
    want = {k: v for k, v in cfg.to_dict().items() if k in same}
    for j in store.list_jobs(caller=caller, group=GROUP, limit=limit):
        p = j.get("params") or {}
        if j["status"] == "done" and all(p.get(k) == v for k, v in want.items()):
            return j
    return None


def shared_note(job, *, caller) -> str | None:
    """One markdown sentence for a shared study that is not the caller's to change (None otherwise): whose it is
    in words (never its owner's id), when it ran, that it is read-only, and what Start does."""
    if not job.get("shared") or caller.may_change(job.get("owner")):
        return None
    who = "the server's command line" if job.get("owner") == "cli" else "another visitor"
    if job["status"] == "done":
        return (
            f"**Shared study, finished {ran_at(job)}** — the default settings on the default patients, run by {who}. "
            "Everyone sees it at once; only whoever started it (or an admin) can rename or delete it. "
            "**Start the study** runs a fresh one of your own."
        )
    if job["status"] in ("queued", "running"):
        return (
            f"**Shared study in progress, queued {ran_at(job, 'created')}**"
            f" — the default settings on the default patients, started by {who}: everyone sees its progress "
            "and its results when it ends; only whoever started it (or an admin) can cancel it."
        )
    return None


def finished(*, caller, limit: int = 200, shared: bool = True) -> list:
    """The caller's finished studies, newest first, with the shared default study (anyone's) unless ``shared`` is
    False (the report's and the advisor's choices)."""
    return [j for j in store.list_jobs(caller=caller, group=GROUP, limit=limit, shared=shared) if j["status"] == "done"]
