"""`python -m dpcore synth-study [--epsilons 1,10] [--repetitions 10] [--generator mst|aim] [--background]`

The re-identification page's DP synthetic-data study, headless: releases of the story's patients at each ε,
attacked and measured (see :mod:`dpcore.synth.study`). Recorded as a job like the page's, so ``report --synth ID``
and the advisor read it. With every default (``--epsilons``, ``--repetitions`` and ``--generator`` left out) it is the
page's default study, which every visitor of the page then reads at once (:func:`dpcore.synth.study.is_default`);
while one is queued or running, anyone's, nothing new is queued: ``--background`` answers with its id, a run in
the foreground says so and exits 2."""

from __future__ import annotations

from .. import limits
from ..errors import DPError
from ..jobs import registry, runner, store, workers
from ..jobs.owners import CLI, SharedRunning
from ..synth import story, study
from ._args import int_arg


def register(sub) -> None:
    p = sub.add_parser("synth-study", help="release, attack and measure DP synthetic tables of the story's patients")
    p.add_argument(
        "--epsilons",
        default=",".join(f"{e:g}" for e in study.STORY_EPSILONS),
        help=f"up to {limits.SYNTH_STUDY_MAX_EPSILONS} values of ε, e.g. 1,10 (default "
        f"{','.join(f'{e:g}' for e in study.STORY_EPSILONS)})",
    )
    p.add_argument(
        "--repetitions",
        type=int_arg(1, limits.SYNTH_STUDY_MAX_REPETITIONS),
        default=3,
        help=f"releases per ε, 1 to {limits.SYNTH_STUDY_MAX_REPETITIONS} (default 3), each with its baseline",
    )
    p.add_argument(
        "--generator", default="mst", choices=["mst", "aim"], help="mst (pure ε, δ = 0; default) or aim (δ = 1e-6)"
    )
    p.add_argument("--background", action="store_true", help="queue it for the background workers and return")
    p.set_defaults(func=run)


def run(args) -> dict:
    try:
        eps = tuple(float(e) for e in str(args.epsilons).split(",") if e.strip())
    except ValueError:
        raise DPError(f"--epsilons must be numbers separated by commas, e.g. 1,10; got {args.epsilons!r}") from None
    cfg = study.StudyConfig(
        epsilons=eps,
        repetitions=args.repetitions,
        generator=args.generator,
        delta=0.0 if args.generator == "mst" else 1e-6,
    )
    if args.background:
        job_id, joined = study.submit(cfg, owner=CLI.owner)
        workers.ensure_workers(2)
        status = store.get(job_id, caller=CLI, history=False)["status"] if joined else "queued"
        return {
            "job": job_id,
            "status": str(status),
            "releases": cfg.releases,
            "label": cfg.label(),
            "shared": study.is_default(cfg),
            "joined": joined,
        }
    try:
        result = runner.run_inline(
            registry.SYNTH_STUDY, cfg.to_dict(), owner=CLI.owner, group=study.GROUP, label=cfg.label()
        )
    except SharedRunning as running:
        raise DPError(
            f"the default study is already running as job {running.ref} (everyone's to read): follow it "
            f"with `python -m dpcore jobs show {running.ref}`, then `report --synth {running.ref}`; or "
            "choose other --epsilons or --repetitions for a study of your own"
        ) from None
    done = study.finished(caller=CLI, limit=1, shared=False)
    s = study.Study(result, done[0]["id"] if done else None)
    return {
        "job": s.job_id,
        "label": cfg.label(),
        "shared": study.is_default(cfg),
        "seconds": round(result["seconds"], 1),
        "points": [
            {
                "epsilon": e,
                "headline": "{}. {}".format(*story.headline(s, e)),
                "findings": dict(zip(*story.findings(s, e).T.values)),
            }
            for e in s.epsilons
        ],
    }
