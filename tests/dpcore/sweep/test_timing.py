"""How long a sweep or a DP run takes, as the pages say it: measured from this server's finished jobs (Start to
done), else the figures measured on a 2-core machine, said so (known answers; nothing trains)."""

import time

from dpcore.jobs import registry, runner
from dpcore.jobs.owners import Caller
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep import timing
from dpcore.sweep.config import SweepConfig

ANN = "session:" + "a" * 32
BOB = "session:" + "b" * 32


def _sweep(owner: str, seconds: float, *, demo: bool, executor: str = "local", dataset: str = "digits") -> None:
    now = time.time()
    sweep_runs.save(
        {
            "id": sweep_runs.job_store.new_id(),
            "name": f"{dataset} {seconds}",
            "created": now - seconds,
            "finished": now,
            "status": "done",
            "config": SweepConfig(dataset=dataset).to_dict(),
            "jobs": [],
            "executor": {"name": executor},
            "owner": owner,
            "shared": demo,
        },
        distinct=True,
    )


def test_before_anything_ran_here_the_words_are_the_two_core_measurements():
    """The pages said "about two minutes on 2 cores" and "about a minute": figures nobody had measured."""
    for kind in ("demo", "upload", "training"):
        assert timing.measured(kind, caller=Caller(ANN)) is None
    assert timing.words("demo", caller=Caller(ANN)) == "measured on a 2-core machine: about 30 s"
    assert timing.words("upload", caller=Caller(ANN)) == "measured on a 2-core machine: about 5 s for 500 rows"
    assert timing.words("training", caller=Caller(ANN)) == "measured on a 2-core machine: about 10 s"


def test_sweeps_are_timed_from_start_to_done_the_demo_apart_from_uploads():
    _sweep(BOB, 40.0, demo=True)  # a shared demo: everyone reads it
    _sweep(BOB, 20.0, demo=True)
    _sweep(ANN, 9.0, demo=False, dataset="upload:abc")
    _sweep(ANN, 500.0, demo=True, executor="inline")  # run in one process: no time of its own
    _sweep(BOB, 7.0, demo=False, dataset="upload:def")  # someone else's own sweep: not read
    each, n = timing.measured("demo", caller=Caller(ANN))
    assert n == 2 and abs(each - 30.0) < 0.5
    each, n = timing.measured("upload", caller=Caller(ANN))
    assert n == 1 and abs(each - 9.0) < 0.5
    assert timing.words("demo", caller=Caller(ANN)) == "on this server: about 30 s, the median of the last 2"
    assert timing.words("upload", caller=Caller(ANN)) == "on this server: about 9 s, measured once"


def test_dp_runs_are_timed_and_non_private_ones_left_out():
    for eps in (1.0, None):  # a DP run and a baseline, in the training page's group
        runner.run_inline(
            "demo.sleep", {"steps": 2, "seconds": 0.3, "epsilon": eps}, owner=ANN, group=registry.TRAIN_GROUP
        )
    each, n = timing.measured("training", caller=Caller(ANN))
    assert n == 1 and 0.6 <= each < 5
    assert timing.measured("training", caller=Caller(BOB)) is None
    words = timing.words("training", caller=Caller(ANN))
    assert words.startswith("on this server: about ") and words.endswith(" s, measured once")
