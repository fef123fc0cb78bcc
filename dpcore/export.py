"""Reproduce it in code: a training run, a sweep, an audit, an advisor decision or a planned release as a Python
script or a Jupyter notebook that re-runs the same computation through dpcore's public functions (not the CLI),
headless, with comments in plain words. A planned release's code draws its noise and states its ε with OpenDP's own
measurements and privacy maps (:func:`for_plan`), dpcore preparing the whole numbers they are applied to.

Each ``for_*`` builds a :class:`Recipe` (text cells and code cells); :func:`render` writes it as ``py`` (one script,
the text cells as comments) or ``ipynb`` (nbformat 4). The last cell prints one JSON line, ``{"settings": …,
"result": …}``, so a reader (and the tests) can compare a re-run with the original.

What an export never holds: a path on the server (an upload is named by its owner's file name, ``DATA``, to be put
beside the script), private rows (no record, loss or score of a row), a secret seed. The noise of every DP run is
drawn fresh from a secure source when the code runs, so its numbers differ a little from the app's: the seed fixes
the data split and the starting weights only.
"""

from __future__ import annotations

import json
import pprint
import textwrap
from dataclasses import dataclass, field

from .errors import DPError
from .jobs import registry, store
from .plan import model as plan_model
from .plan import registry as deployments
from .plan.model import Plan
from .statements import plan as plan_statement
from .sweep import runs as sweep_runs
from .sweep import summary as sweep_summary
from .sweep.config import SweepConfig
from .textsafe import md
from .training.config import TrainConfig, check_upload_name, dataset_name, model_name

FORMATS = ("py", "ipynb")
HEADER = (
    "Exported from DP Explorer. Needs the dp-explorer source (the dpcore package) on the Python path, "
    "e.g. run it from the project's folder."
)


@dataclass
class Recipe:
    """``title`` and ``cells``: ("md", text) or ("code", source) in order; ``name`` the file name without suffix."""

    title: str
    name: str
    cells: list = field(default_factory=list)

    def md(self, text: str) -> Recipe:
        self.cells.append(("md", text.strip()))
        return self

    def code(self, text: str) -> Recipe:
        self.cells.append(("code", text.strip()))
        return self


class _Expr:
    """A value written as a Python expression in generated code (``"csv:" + DATA``), not as a literal."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _md(text: str) -> str:
    """User text (an upload's name) in a notebook's markdown: shown as text, never as a link, image or HTML."""
    return md(text)


def _literal(value) -> str:
    return pprint.pformat(value, indent=1, width=100, sort_dicts=False)


def _data_name(params: dict) -> str | None:
    """The owner's own file name of an upload (never the stored path or reference); None for the built-in data."""
    ds = str(params.get("dataset") or "")
    if ds.startswith("upload:"):
        return params.get("upload_name") or "your_data.csv"
    if not ds.startswith("csv:"):
        return None
    return params.get("upload_name") or ds[4:].replace("\\", "/").rsplit("/", 1)[-1]


def _portable(params: dict) -> tuple[dict, str | None]:
    """Settings with an upload's path replaced by ``"csv:" + DATA`` (the owner supplies the file)."""
    out, name = dict(params), _data_name(params)
    if name is not None:
        out["dataset"] = _Expr('"csv:" + DATA')
    return out, name


def _data_cell(r: Recipe, name: str | None) -> None:
    if name is None:
        return
    r.md(
        "**Your data.** The app read the file you uploaded; this code reads it from your own disk. Put the file "
        "beside this script (or write its full path below). Nothing of its rows is in this file."
    )
    r.code(f"DATA = {name!r}  # your CSV: the same columns as the one you uploaded")


def _settings_json(name: str | None, var: str = "settings") -> str:
    """Code for the settings as the result line reports them (the upload as csv:<file name>)."""
    return f"{{**{var}, 'dataset': 'csv:' + DATA}}" if name else var


# --- a training run ------------------------------------------------------------------------------------


def for_job(job_id: str, *, caller) -> Recipe:
    """A training job ``caller`` may read: train the same model with the same settings, and its non-private twin."""
    job = store.get(job_id, caller=caller, history=False)
    registry.check_kind(job, registry.TRAIN)
    cfg = TrainConfig.from_dict(job["params"])  # checks the stored settings (a foreign job is refused here)
    params, name = _portable(cfg.to_dict())
    r = Recipe(
        f"Training run {job_id}: {model_name(cfg.model)} on {name or dataset_name(cfg.dataset)}", f"train-{job_id}"
    )
    r.md(
        f"# {_md(r.title)}\n\n{HEADER} It trains the model again with DP-SGD (or without DP for a baseline) and "
        "prints test accuracy and the privacy bill: ε from the accountant with its δ, for datasets that differ by "
        "adding or removing one record."
    )
    r.code("import json\n\nfrom dpcore.training.config import TrainConfig\nfrom dpcore.training.loop import train")
    _data_cell(r, name)
    r.md(
        "**The settings of the run**, as the app stored them. The seed fixes the data split and the starting "
        "weights only; sampling and noise come from a secure source each time, so your numbers will differ a "
        "little from the app's."
    )
    r.code(f"settings = {_literal(params)}\nconfig = TrainConfig.from_dict(settings)")
    r.md("**Train.** On a laptop this takes seconds for tables and digits.")
    r.code(
        "result = train(config)\nm = result.metrics\n"
        "print(f'test accuracy {m.test_accuracy:.1%}')\n"
        "if m.private:\n"
        "    print(f'ε = {m.epsilon:.3f} at δ = {m.delta:g} (add/remove one record, {m.accountant} accountant)')"
    )
    if cfg.private:
        r.md("**The non-private twin**: the same model, split and epochs without DP, to see what privacy costs.")
        r.code(
            "twin = train(config.baseline()).metrics\n"
            "print(f'without DP: {twin.test_accuracy:.1%}; DP costs "
            "{(twin.test_accuracy - m.test_accuracy) * 100:.1f} points')"
        )
    else:
        r.code("twin = None")
    r.md(
        "**What ε does not cover**: the training loss and accuracy are measured on the private rows (diagnostics), "
        "and any bound read from the rows is listed here."
    )
    r.code("for leak in m.leaks:\n    print('not covered by ε:', leak)")
    r.code(
        "print(json.dumps({'settings': " + _settings_json(name, "config.to_dict()") + ", 'result': {\n"
        "    'test_accuracy': m.test_accuracy, 'epsilon': m.epsilon, 'delta': m.delta,\n"
        "    'noise_multiplier': m.noise_multiplier, 'steps': m.steps,\n"
        "    'baseline_accuracy': None if twin is None else twin.test_accuracy}}))"
    )
    return r


# --- a sweep --------------------------------------------------------------------------------------------


def for_sweep(sweep_id: str, *, caller) -> Recipe:
    """A stored privacy–utility sweep ``caller`` may read: the same grid, attacks and audits, one model after
    another."""
    rec = sweep_runs.load(sweep_id, caller=caller)
    cfg = SweepConfig.from_stored(rec.get("config") or {})
    params, name = _portable(cfg.to_dict())
    title = sweep_summary.sweep_title({"config": cfg.to_dict(), "created": rec.get("created")})
    r = Recipe(f"Privacy–utility sweep: {title}", f"sweep-{sweep_id}")
    r.md(
        f"# {_md(r.title)}\n\n{HEADER} It trains one model per ε and seed plus the non-private baselines, attacks "
        "each with membership inference, audits what the attacks prove, and prints the curve: test accuracy per ε "
        "and the ε the audits prove, beside the ε the accountant claims (δ and add/remove one record)."
    )
    r.code("import json\n\nfrom dpcore.sweep import runs, summary\nfrom dpcore.sweep.config import SweepConfig")
    _data_cell(r, name)
    r.md(
        "**The sweep's settings**, as the app stored them. Models run one after another here (the app runs them "
        f"in parallel): {len(cfg.point_params()) if name is None else 'one per ε and seed, plus baselines'}."
    )
    r.code(f"settings = {_literal(params)}\nconfig = SweepConfig.from_dict(settings)")
    r.md(
        "**Run it.** Progress is printed per model; sampling, noise and the canaries' coins are drawn fresh and "
        "secretly each time."
    )
    r.code(
        "from dpcore.jobs.owners import CLI_OWNER  # run as the command line would; nothing is stored\n\n"
        "result = runs.run_sweep_inline(config, owner=CLI_OWNER, store=False,\n"
        "                               progress=lambda i, n, eps, seed: print(f'model {i + 1} of {n}', flush=True))"
    )
    r.md(
        "**The curve.** Accuracy per ε (over its seeds) and the ε the audits prove — a lower bound at 95% — next "
        "to the ε the accountant claims — an upper bound."
    )
    r.code(
        "rows = summary.by_epsilon(result)\nbase = summary.baseline_summary(result)\n"
        "print('without DP:', summary.accuracy_text(base and base['accuracy']))\n"
        "for row in rows:\n"
        "    print(f\"ε = {row['epsilon']:g}: accuracy {summary.accuracy_text(row['accuracy'])}, proved ε ≥ "
        "{row['empirical_epsilon'] or 0:.3f} of a claimed {row['epsilon_spent']:.3f}\")"
    )
    r.code(
        "print(json.dumps({'settings': " + _settings_json(name, "config.to_dict()") + ", 'result': {\n"
        "    'epsilons': [row['epsilon'] for row in rows], 'accuracy': [row['accuracy'] for row in rows],\n"
        "    'proved': [row['empirical_epsilon'] for row in rows],\n"
        "    'baseline_accuracy': None if base is None else base['accuracy']}}))"
    )
    return r


# --- an audit of your own model -------------------------------------------------------------------------


def for_audit(
    file_name: str, *, delta: float, confidence: float, split_seed: int = 0, mechanism: dict | None = None
) -> Recipe:
    """An "Audit your model" run: the same scores file (by its owner's name), δ, confidence and stated mechanism."""
    name = check_upload_name(file_name)
    mech = {k: v for k, v in (mechanism or {}).items() if k != "kind"}
    if mechanism and mechanism.get("kind") == "epsilon":
        mech.pop("delta", None)  # the audit's δ is the stated δ
    r = Recipe(f"Audit of your model's scores ({name})", "audit")
    r.md(
        f"# {_md(r.title)}\n\n{HEADER} It reads your scores file (member 1/0, score, optionally canary 1/0) and prints "
        "what the scores prove about ε: a lower bound at the stated confidence"
        + (", the worst case the stated mechanism allows and whether the audit contradicts it." if mech else ".")
    )
    r.code("import json\n\nfrom dpcore.attacks import model_audit")
    r.md("**Your scores file**, by the name you uploaded it under: put it beside this script.")
    r.code(f"SCORES = {name!r}")
    r.md(
        "**The settings**: δ at which ε is bounded, the confidence of every bound, the seed of the half/half "
        "split (fixed before looking: the confidence holds for one seed, not for the best of several)"
        + (", and the mechanism you stated." if mech else ".")
    )
    r.code(
        f"delta, confidence, split_seed = {delta!r}, {confidence!r}, {split_seed!r}\n"
        + (f"mechanism = model_audit.mechanism(delta=delta, **{_literal(mech)})" if mech else "mechanism = None")
    )
    r.code(
        "table = model_audit.read_scores(SCORES)\n"
        "result = model_audit.audit_model(table['member'], table['score'], table['canary'], delta=delta,\n"
        "                                 confidence=confidence, split_seed=split_seed, mech=mechanism)\n"
        "if result['split_audit']:\n"
        "    print(f\"split audit: ε ≥ {result['split_audit']['lower_bound']:.3f} ({confidence:.0%})\")\n"
        "if result['one_run']:\n"
        "    print(f\"one-run canary audit: ε ≥ {result['one_run']['lower_bound']:.3f} ({confidence:.0%})\")\n"
        "if result['verdict']:\n"
        "    print(result['verdict']['words'])"
    )
    r.code(
        "print(json.dumps({'settings': {'scores': SCORES, 'delta': delta, 'confidence': confidence,\n"
        "                               'split_seed': split_seed, 'mechanism': mechanism},\n"
        "                  'result': {'split': result['split_audit'] and result['split_audit']['lower_bound'],\n"
        "                             'one_run': result['one_run'] and result['one_run']['lower_bound'],\n"
        "                             'verdict': result['verdict'] and result['verdict']['contradicts']}}))"
    )
    return r


# --- an advisor decision ---------------------------------------------------------------------------------


def for_advice(
    mechanism: str, risk: dict, utility: dict | None = None, *, delta=None, sample_rate=None, steps=None
) -> Recipe:
    """An advisor decision: the same risk limit, utility target and mechanism solved again. ``risk`` and
    ``utility``: the fields of :class:`dpcore.advisor.targets.RiskLimit` and :class:`~dpcore.advisor.targets.UtilityTarget`. A target
    read from a stored sweep (accuracy) is left out: that sweep lives on the app's server (export it too)."""
    note = ""
    if utility and utility.get("kind") == "accuracy":
        note = (
            " The accuracy target read a stored sweep on the app's server, which this code cannot see: it solves "
            "the risk limit alone (export that sweep to re-run it)."
        )
        utility = None
    r = Recipe(f"Advice: ε for {mechanism} under a risk limit", "advice")
    r.md(
        f"# {_md(r.title)}\n\n{HEADER} It solves your risk limit (what an attacker may learn about one record) and "
        f"utility target for the ε range that meets both, from the mechanism's exact worst-case trade-off curve "
        f"(add/remove one record).{note}"
    )
    r.code("import json\n\nfrom dpcore.advisor import solve, targets")
    r.md("**Your limits**, as you set them on the page.")
    r.code(
        f"risk = targets.RiskLimit(**{_literal(risk)})\n"
        + (f"utility = targets.UtilityTarget(**{_literal(utility)})" if utility else "utility = None")
        + f"\nresult = solve.advise({mechanism!r}, risk, utility, delta={delta!r}, sample_rate={sample_rate!r}, "
        f"steps={steps!r})"
    )
    r.code(
        "low, high = result['epsilon_range']\n"
        "print(f\"recommended ε = {result['epsilon']:.4g} at δ = {result['delta']:g}; the risk limit allows ε ≤ "
        '{high:.4g}")'
    )
    r.code(
        "print(json.dumps({'settings': {'mechanism': "
        + repr(mechanism)
        + ", 'risk': "
        + _literal(risk)
        + ", 'utility': "
        + _literal(utility)
        + ", 'delta': "
        + repr(delta)
        + "},\n"
        "                  'result': {'epsilon': result['epsilon'], 'epsilon_range': result['epsilon_range'],\n"
        "                             'feasible': result['feasible']}}, default=float))"
    )
    return r


# --- a planned release ----------------------------------------------------------------------------------------


def for_plan(
    plan_dict: dict, *, source: str, n: int | None = None, seed: int | None = None, data_name: str | None = None
) -> Recipe:
    """A planned release: the same plan on the same data, every statistic's noise drawn and its ε stated by OpenDP's
    own measurement (``make_laplace`` on 64-bit integers; quantiles: ``make_quantile_score_candidates`` then
    ``make_noisy_max``), the total the sum of OpenDP's privacy maps. ``source``: "builtin:patients",
    "builtin:visits" (with ``n`` and ``seed``), or "file" (an upload or a registered dataset, read from the owner's
    own copy named ``data_name``)."""
    plan = Plan.from_dict(plan_dict)  # the stored plan, checked again
    name = None if source.startswith("builtin:") else check_upload_name(data_name or "your_data.csv")
    r = Recipe(f"Planned release: {plan.title}", "plan")
    r.md(
        f"# {_md(r.title)}\n\n{HEADER} It releases the plan's {len(plan.statistics)} statistics once, as the app did: "
        "each person's rows bounded, values clamped to their public bounds, then noise from OpenDP's exact samplers "
        "(a secure source: your numbers differ from the app's). It prints the table and the total ε from OpenDP's own "
        "privacy maps, which is the ε the app's statement gives."
    )
    r.code(
        "import json\n\nimport opendp.prelude as dp\nimport pandas as pd\n\n"
        "from dpcore.noise import release\nfrom dpcore.plan import compute, design, model\n\n"
        "# make_laplace and the quantile's score-and-select are behind OpenDP 0.16's 'contrib' flag: their proofs are\n"
        "# written, not yet through OpenDP's vetting (DP Explorer tests them too). Integer noise only: no float flag.\n"
        "dp.enable_features('contrib')"
    )
    if name is None:
        kind = source.split(":", 1)[1]
        loader = "medical_visits" if kind == "visits" else "medical"
        r.md(f"**The data**: the app's built-in synthetic {kind} ({n:,} patients, seed {seed}): nobody real.")
        r.code(f"from dpcore.data import datasets\n\ndf = datasets.{loader}({int(n or 0)!r}, {int(seed or 0)!r})")
    else:
        _data_cell(r, name)
        r.code("from dpcore.data import datasets\n\ndf = datasets.read_csv(DATA)")
    r.md(
        "**The plan**, as the app stored it: the statistics, their public bounds and categories, the unit of privacy "
        "and how ε is split. Its design — each statistic's ε, sensitivity and noise scale — follows from these "
        "public numbers alone."
    )
    r.code(
        f"settings = {_literal(plan.to_dict())}\nplan = model.Plan.from_dict(settings)\nlaid_out = design.design(plan)"
    )
    r.md(
        "**The private inputs**: each person's first rows kept (at most the plan's number), values clamped and put on "
        "the public grid, counted or summed per cell. Nothing here is released."
    )
    r.code("prepared = compute.prepare(df, plan, laid_out)")
    r.md(
        "**Each statistic through OpenDP.** A count, a histogram's bins or a sum on the grid: discrete Laplace noise "
        "(`make_laplace` on 64-bit integers) at the scale the design gives; its ε is OpenDP's privacy map at the "
        "sensitivity one unit of privacy has. A quantile: OpenDP scores the public candidates and picks one with "
        "`make_noisy_max`."
    )
    r.code(
        "space = dp.vector_domain(dp.atom_domain(T='i64')), dp.l1_distance(T='i64')\n"
        "total, rows = 0.0, []\n"
        "for d, truth in zip(laid_out.designs, prepared.truths):\n"
        "    eps = 0.0\n"
        "    noisy = []\n"
        "    for part, inputs in zip(d.parts, (truth.units, truth.counts)):\n"
        "        if part.role == 'quantile':\n"
        "            q = d.quantile\n"
        "            score = dp.t.make_quantile_score_candidates(\n"
        "                dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),\n"
        "                candidates=list(q.candidates), alpha=q.alpha)\n"
        "            pick = score >> dp.m.then_noisy_max(dp.max_divergence(), scale=q.scale, negate=True)\n"
        "            eps += pick.map(q.contributions)\n"
        "            noisy.append([q.candidates[pick(list(v))] for v in truth.values])\n"
        "            break\n"
        "        laplace = dp.m.make_laplace(*space, scale=release.opendp_scale(part.noise()))\n"
        "        eps += laplace.map(part.sensitivity)\n"
        "        noisy.append(laplace(list(inputs)))\n"
        "    total += eps\n"
        "    rows += compute.from_noisy(d, noisy)\n"
        "    print(f'{d.statistic.label()}: ε = {eps:.6g} (OpenDP privacy map)')"
    )
    r.md("**The table**: each released cell with its 95% interval (a quantile's bound is on its rank, in rows).")
    r.code(
        "table = pd.DataFrame([row.to_dict() for row in rows])\nprint(table.to_string(index=False))\n"
        'print(f\'total ε = {total:.6g} per {"person" if plan.unit.person_level else "row"}, δ = 0\')'
    )
    r.code(
        "print(json.dumps({'settings': settings, 'result': {\n"
        "    'epsilon': total, 'epsilon_design': laid_out.epsilon, 'delta': 0.0,\n"
        "    'epsilon_per_person': laid_out.epsilon_per_person, 'cells': len(rows),\n"
        "    'statistics': [d.statistic.label() for d in laid_out.designs]}}))"
    )
    return r


def plan_files(outcome, *, n: int | None = None, seed: int | None = None, data_name: str | None = None) -> dict:
    """Everything a planned release hands out, by file name: the table (CSV, formula cells neutralised), the plan
    (JSON), a notebook and a script that reproduce it with OpenDP, a registry-schema draft (YAML) and the signed
    statement, which covers each of the others by SHA-256 (the draft is made from the statement's fields)."""
    import yaml  # lazy: only a plan's files need it

    source = outcome.source if outcome.source.startswith("builtin:") else "file"
    recipe = for_plan(outcome.release.design.plan.to_dict(), source=source, n=n, seed=seed, data_name=data_name)
    draft = deployments.draft(plan_statement.body(outcome))
    also = {
        "plan.json": plan_model.dumps(outcome.release.design.plan).encode(),
        "plan.ipynb": render(recipe, "ipynb"),
        "plan.py": render(recipe, "py"),
        "registry-draft.yaml": yaml.safe_dump(draft, sort_keys=False, allow_unicode=True).encode(),
    }
    st = plan_statement.for_plan(outcome, plan_statement.CSV_NAME, also=also)
    return {
        plan_statement.CSV_NAME: plan_statement.csv_bytes(outcome),
        **also,
        "release.statement.json": json.dumps(st, indent=2, ensure_ascii=False).encode(),
    }


# --- writing it ----------------------------------------------------------------------------------------------


def script(recipe: Recipe) -> str:
    """The recipe as one Python script: every text cell (the title too) as comments, in order — a comment ends at
    its line, so no text (an upload's name) can become code."""
    parts = []
    for kind, text in recipe.cells:
        if kind == "md":
            words = text.replace("**", "").replace("\\", "")
            words = words[2:] if words.startswith("# ") else words
            parts.append(
                "\n".join(
                    textwrap.fill(line, 110, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
                    if line
                    else "#"
                    for line in words.splitlines()
                )
            )
        else:
            parts.append(text)
    return "\n\n".join(parts) + "\n"


def notebook(recipe: Recipe) -> bytes:
    """The recipe as a Jupyter notebook (nbformat 4), outputs empty."""
    # lazy: nbformat, only for a notebook export
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(t) if k == "md" else nbformat.v4.new_code_cell(t) for k, t in recipe.cells
    ]
    return nbformat.writes(nb).encode()


def render(recipe: Recipe, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise DPError(f"export format must be py or ipynb, got {fmt!r}")
    return script(recipe).encode() if fmt == "py" else notebook(recipe)


def file_name(recipe: Recipe, fmt: str) -> str:
    return f"{recipe.name}.{fmt}"


def result_line(output: str) -> dict:
    """The ``{"settings", "result"}`` JSON an exported script or notebook printed last."""
    for line in reversed(str(output).strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise DPError("no result line in the output: the exported code did not finish")
