"""`python -m dpcore noise`: JSON output, seeded simulation vs secure release path, one-line errors."""

import json
import math
import subprocess
import sys

import pytest

from ..conftest import ROOT
from .cli_helpers import run

BASE = ["noise", "--sensitivity", "1", "--value", "10", "--draws", "5"]


def test_laplace_json_fields(capsys):
    rc, out, _ = run(capsys, *BASE, "--mechanism", "laplace", "--epsilon", "0.5", "--seed", "1")
    assert rc == 0
    d = json.loads(out)
    for key in ("mechanism", "epsilon", "delta", "sensitivity", "scale", "expected_abs_error", "ci95", "draws"):
        assert key in d
    assert d["mechanism"] == "laplace" and d["scale"] == pytest.approx(2.0) and d["delta"] == 0.0
    assert d["expected_abs_error"] == pytest.approx(2.0)
    assert d["ci95"] == pytest.approx([10 - 2 * math.log(20), 10 + 2 * math.log(20)])
    assert len(d["draws"]) == 5 and d["seed"] == 1 and d["source"].startswith("simulation")
    rc, out2, _ = run(capsys, *BASE, "--mechanism", "laplace", "--epsilon", "0.5", "--seed", "1")
    assert json.loads(out2)["draws"] == d["draws"]  # seeded: reproducible


def test_gaussian_default_delta_and_classic(capsys):
    rc, out, _ = run(capsys, *BASE, "--mechanism", "gaussian", "--epsilon", "1", "--seed", "0")
    d = json.loads(out)
    assert rc == 0 and d["delta"] == 1e-5 and d["scale"] == pytest.approx(3.7306, abs=1e-4)
    assert d["delta_at_epsilon"] == pytest.approx(1e-5, rel=1e-6)
    rc, out, _ = run(capsys, *BASE, "--mechanism", "gaussian-classic", "--epsilon", "0.5", "--delta", "1e-5")
    assert rc == 0 and json.loads(out)["scale"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)


def test_secure_goes_through_release_path(capsys):
    rc, out, _ = run(capsys, *BASE, "--mechanism", "laplace", "--epsilon", "1", "--secure")
    d = json.loads(out)
    assert rc == 0 and d["seed"] is None and d["source"].startswith("release path") and "OpenDP" in d["source"]
    assert d["total_epsilon"] == pytest.approx(5.0) and len(d["draws"]) == 5
    # the grid and the rounding are stated; every draw lies on the grid (whole-number noise, issue 25)
    assert d["grid"] == "0.000001" and "rounded to a multiple of 0.000001" in d["rounding"]
    assert all(abs(x * 1e6 - round(x * 1e6)) < 1e-6 for x in d["draws"])


@pytest.mark.parametrize(
    "args,msg",
    [
        # issue 28: a traceback (the σ solver) and a wrong success (null draws, exit 0) before
        (
            ["--mechanism", "gaussian", "--epsilon", "1e308", "--sensitivity", "1", "--value", "1", "--draws", "1"],
            "epsilon must be at most 1000",
        ),
        (
            ["--mechanism", "laplace", "--epsilon", "1e-6", "--sensitivity", "1e308", "--value", "1", "--draws", "2"],
            "sensitivity Δ must be a number from 0 to 1e15",
        ),
        (
            ["--mechanism", "laplace", "--epsilon", "1", "--sensitivity", "1", "--value", "1e30", "--draws", "2"],
            "must lie between −1e15 and 1e15",
        ),
        (
            [
                "--mechanism",
                "laplace",
                "--epsilon",
                "1",
                "--sensitivity",
                "1e-300",
                "--value",
                "1",
                "--draws",
                "2",
                "--secure",
            ],
            "at least 1e-12",
        ),
    ],
)
def test_numbers_a_release_cannot_represent_exit_2(capsys, args, msg):
    rc, out, err = run(capsys, "noise", *args)
    assert rc == 2 and out == "" and msg in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--mechanism", "laplace", "--epsilon", "0"], "epsilon must be > 0"),
        (["--mechanism", "laplace", "--epsilon", "-1"], "epsilon must be > 0"),
        (["--mechanism", "laplace", "--epsilon", "nan"], "epsilon must be a number"),
        (["--mechanism", "laplace", "--epsilon", "inf"], "epsilon must be finite"),
        (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "0"], "delta must be in (0, 1)"),
        (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "1"], "delta must be in (0, 1)"),
        (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "nan"], "delta must be a number"),
        (["--mechanism", "gaussian-classic", "--epsilon", "2"], "only valid for ε < 1"),
        (["--mechanism", "laplace", "--epsilon", "1", "--secure", "--seed", "3"], "cannot be seeded"),
    ],
)
def test_bad_input_one_line(capsys, args, msg):
    rc, out, err = run(capsys, *BASE, *args)
    assert rc == 2 and out == ""
    assert msg in err and len(err.strip().splitlines()) == 1


def test_bad_sensitivity_and_draws(capsys):
    rc, _, err = run(
        capsys,
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--sensitivity",
        "-1",
        "--value",
        "0",
        "--draws",
        "3",
    )
    assert rc == 2 and "sensitivity must be a finite number >= 0" in err
    rc, _, err = run(
        capsys,
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--sensitivity",
        "1",
        "--value",
        "0",
        "--draws",
        "0",
    )
    assert rc == 2 and "argument --draws: must be from 1 to" in err
    rc, _, err = run(
        capsys,
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--sensitivity",
        "1",
        "--value",
        "nan",
        "--draws",
        "3",
    )
    assert rc == 2 and "true value" in err


def test_subprocess_no_traceback():
    r = subprocess.run(
        [sys.executable, "-m", "dpcore", *BASE, "--mechanism", "laplace", "--epsilon", "nan"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
