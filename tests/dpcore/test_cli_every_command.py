"""Issue 28: every CLI subcommand, every option, hostile values and special files — no traceback, no hang, no
wrong success.

The options are read from the CLI's own parser, so a subcommand or option added later is fuzzed too. Each case
starts from a small invocation that works (``BASE``) and gives one or two options a hostile value: numbers at
and past every edge (±1e308, 1e-320, nan, 2^63, 23 digits), text with markup, formulas, control characters,
bytes that are not UTF-8, and paths to what is not a regular file (a named pipe, a character device, a folder,
a symbolic-link loop, a missing folder). Each run is in-process with a 30 s alarm: a hang fails with the
arguments that caused it. A command may succeed (exit 0), refuse (2) or refuse for budget (3); a success must
print JSON with no NaN or Infinity and no ``null`` where an answer belongs (``query --sum --bounds=-1e308:1e308``
exited 0 with ``answer: null``). Training and sweeps stop right after their arguments are accepted (their runs
have their own tests); no worker process is started.
"""

import argparse
import io
import json
import os
import random
import signal
import stat
from contextlib import redirect_stderr, redirect_stdout

import pytest

from dpcore import cli

NUMBERS = [
    "-1",
    "0",
    "1e-320",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "9223372036854775808",
    "99999999999999999999999",
    "1.5",
    "",
    "abc",
    "0x10",
]
TEXTS = [
    "",
    " ",
    "[x](http://evil.example/)",
    "=1+1",
    "a\r=1+1",
    "x" * 5000,
    "\udcfcber",
    "age=34",
    "age",
    "1:2",
    "5:1",
    "-1e308:1e308",
    "a,A",
    "@fifo",
    "@null",
    "@full",
    "@dir",
    "@loop",
    "@missing",
    "@bad",
    "@m",
    "@out",
]
#: A small invocation of each subcommand that runs (paths as @tokens, made per test).
BASE = {
    "api": [],  # accepted arguments stop before serving (below)
    "remote": ["status", "--dataset", "clinic", "--url", "http://127.0.0.1:9", "--analyst", "ann"],  # no key: refused
    "advise": ["--mechanism", "gaussian", "--sensitivity", "1", "--max-tpr", "0.05", "--at-fpr", "0.01"],
    "audit": ["--scores", "@scores"],
    "budget": ["status"],
    "data": ["medical", "--n", "20", "--out", "@out"],
    "differencing": ["--n", "200", "--trials", "200"],
    "jobs": ["list"],
    "linkage": ["--data", "@m", "--known", "age=34"],
    "query": ["--dataset", "synthetic medical (n=10,000, seed=0)", "--epsilon", "0.1", "--count", "sex=F"],  # a visitor
    "noise": ["--mechanism", "laplace", "--epsilon", "1", "--sensitivity", "1", "--value", "5", "--draws", "3"],
    "report": ["--out", "@outhtml"],
    "statement": ["--verify", "@m"],
    "sweep": ["--dataset", "breast_cancer", "--model", "logreg", "--epsilons", "1", "--seeds", "1", "--epochs", "1"],
    "train": ["--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--epochs", "1"],
    "uniqueness": ["--data", "@m", "--qi", "age,sex"],
}
PAIRS = 12  # random pairs of hostile values per subcommand, beside every value of every option alone
ANSWER_KEYS = {"answer", "answers", "value", "values", "draws", "interval", "epsilon", "sigma", "scale"}


class _Ran(Exception):
    """Training or a sweep was about to start: the arguments were accepted."""


def _commands():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, sp in sorted(sub.choices.items()):
        nested = [a for a in sp._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            for sname, ssp in sorted(nested[0].choices.items()):
                out.append(([name, sname], ssp))
        else:
            out.append(([name], sp))
    return out


def _options(sp):
    opts = []
    for a in sp._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) or not a.option_strings:
            continue
        if a.nargs == 0:
            opts.append((a.option_strings[0], None))
        elif a.choices:
            opts.append((a.option_strings[0], [str(c) for c in a.choices] + ["nope"]))
        elif a.type in (int, float) or getattr(a.type, "__name__", "") in ("whole number", "_epsilon"):
            opts.append((a.option_strings[0], NUMBERS))
        else:
            opts.append((a.option_strings[0], TEXTS + NUMBERS[:4]))
    return opts


@pytest.fixture
def files(tmp_path, monkeypatch):
    d = tmp_path
    (d / "m.csv").write_text(
        "age,sex,zip_code,salary,diagnosis\n34,F,10001,50000,none\n35,M,10002,=1+1,asthma\n34,F,10001,52000,cancer\n"
    )
    (d / "scores.csv").write_text("member,score\n" + "".join(f"{i % 2},{(i * 7) % 11}\n" for i in range(40)))
    (d / "bad.csv").write_bytes(b"\xff\xfe,,\n\x00")
    os.mkfifo(d / "fifo")
    (d / "loop").symlink_to(d / "loop")
    full = d / "full"
    if os.geteuid() == 0:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # never the real /dev/full: an old bug replaced it
    else:
        full.write_text("")
    monkeypatch.chdir(d)
    from dpcore.jobs import runner, workers
    from dpcore.sweep import runs

    monkeypatch.setattr(workers, "ensure_workers", lambda *a, **k: 0)

    def ran(*a, **k):
        raise _Ran()

    monkeypatch.setattr(runner, "run_inline", ran)
    monkeypatch.setattr(runs, "run_sweep_inline", ran)
    monkeypatch.setattr(runs, "run_sweep_parallel", ran)
    from dpcore.api import server

    monkeypatch.setattr(server, "serve", ran)  # the API would serve until stopped
    monkeypatch.delenv("DP_EXPLORER_ANALYST_KEY", raising=False)
    monkeypatch.delenv("DP_EXPLORER_API_URL", raising=False)
    tokens = {
        "@m": d / "m.csv",
        "@scores": d / "scores.csv",
        "@bad": d / "bad.csv",
        "@fifo": d / "fifo",
        "@null": os.devnull,
        "@full": full,
        "@dir": d,
        "@loop": d / "loop",
        "@missing": d / "no" / "x.csv",
        "@out": d / "out.csv",
        "@outhtml": d / "out.html",
    }
    return {k: str(v) for k, v in tokens.items()}


def _alarm(signum, frame):
    raise TimeoutError("the command did not finish in 30 s (a hang)")


def _nulls(obj, key=None):
    if obj is None:
        return [key] if key in ANSWER_KEYS else []
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in _nulls(v, k)]
    if isinstance(obj, list):
        return [x for v in obj for x in _nulls(v, key)]
    return []


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(30)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(argv)
    except _Ran:
        return "ran", "", ""
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c, _ in _commands()], ids=lambda c: " ".join(c))
def test_every_subcommand_with_hostile_arguments(files, command, monkeypatch):
    sp = dict((tuple(c), s) for c, s in _commands())[tuple(command)]
    opts = _options(sp)
    base = (
        BASE.get(command[0], [])
        if len(command) == 1
        else (BASE.get(command[0]) if command[1:] == BASE.get(command[0], [])[:1] else [])
    )
    base = [a for a in (base if len(command) == 1 else base[1:])]
    rng = random.Random(" ".join(command))

    rivals = {}  # an option -> the options it excludes (argparse's mutually exclusive groups)
    for g in sp._mutually_exclusive_groups:
        names = [a.option_strings[0] for a in g._group_actions if a.option_strings]
        for n in names:
            rivals[n] = [m for m in names if m != n]
    arity = {o: (1 if vs is None else 2) for o, vs in opts}

    def with_values(pairs):
        argv = list(base)
        for opt, values, value in pairs:
            for drop in [opt, *rivals.get(opt, [])]:  # --sum replaces the base's --count
                if drop in argv:
                    i = argv.index(drop)
                    del argv[i : i + arity.get(drop, 2)]
            argv += [opt] if values is None else [opt, value]
        return argv

    cases = [base]  # every option alone with every hostile value, then random pairs
    cases += [with_values([(opt, values, v)]) for opt, values in opts for v in (values or [None])]
    for _ in range(PAIRS if len(opts) > 1 else 0):
        cases.append(with_values([(o, vs, rng.choice(vs or [None])) for o, vs in rng.sample(opts, 2)]))
    for argv in cases:
        full = [*command, *[files.get(a, a) for a in argv]]
        rc, out, err = _run(full)
        assert "Traceback" not in err, (full, err[-1500:])
        if rc == "ran":
            continue
        assert rc in (0, 2, 3), (full, rc, err[-500:])
        if rc != 0:
            assert len(err.strip().splitlines()) == 1, (full, err)
            continue
        if not out.strip():
            continue
        try:
            result = json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as exc:
            pytest.fail(f"{full}: success printed {exc} (not a number) in its JSON: {out[:300]}")
        assert not _nulls(result), f"{full}: success with null where an answer belongs: {_nulls(result)}: {out[:300]}"


VISITOR = ["--dataset", "synthetic medical (n=10,000, seed=0)"]
#: Issue 28's reproductions, each of which was a traceback, a hang or a wrong success.
REPORTED = [
    ["statement", "--verify", "@array"],
    ["statement", "--verify", "@nested"],
    ["statement", "--verify", "@fifo"],
    [
        "noise",
        "--mechanism",
        "gaussian",
        "--epsilon",
        "1e308",
        "--delta",
        "1e-5",
        "--sensitivity",
        "1",
        "--value",
        "1",
        "--draws",
        "3",
    ],
    ["noise", "--mechanism", "laplace", "--epsilon", "1e-6", "--sensitivity", "1e308", "--value", "1", "--draws", "3"],
    [
        "advise",
        "--mechanism",
        "laplace",
        "--max-posterior",
        "0.5",
        "--prior",
        "0.1",
        "--within",
        "1e-320",
        "--query",
        "count",
    ],
    [
        "advise",
        "--mechanism",
        "dpsgd",
        "--max-tpr",
        "0.05",
        "--at-fpr",
        "0.01",
        "--sample-rate",
        "1e-320",
        "--steps",
        "1000",
    ],
    ["advise", "--mechanism", "gaussian", "--max-advantage", "1e-300"],
    ["audit", "--scores", "@scores", "--split-seed", "-5"],
    ["report", "--out", "@outhtml", "--epsilon", "1e308"],
    ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--lr", "1e308"],
    ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--seed", "99999999999999999999999"],
    ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--json", ""],
    ["sweep", "--json", ""],
    ["query", *VISITOR, "--epsilon", "0.1", "--histogram", "age", "--bounds=-1e308:1e308"],
    ["query", *VISITOR, "--epsilon", "0.1", "--sum", "age", "--bounds=-1e308:1e308"],
    ["query", *VISITOR, "--epsilon", "0.1", "--histogram", "sex", "--categories", "a,A"],
    ["linkage", "--data", "@fifo", "--known", "age=34"],
    ["uniqueness", "--data", "@fifo", "--qi", "age"],
    ["query", "--data", "@fifo", "--epsilon", "0.1", "--count", "sex=F"],
    ["data", "medical", "--n", "5", "--out", "@full"],
]


@pytest.mark.parametrize("argv", REPORTED, ids=lambda a: " ".join(a)[:70])
def test_each_reported_case_is_refused_in_one_line(files, argv, tmp_path):
    (tmp_path / "array.json").write_text("[1, 2, 3]")
    (tmp_path / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    tokens = {**files, "@array": str(tmp_path / "array.json"), "@nested": str(tmp_path / "nested.json")}
    full = [tokens.get(a, a) for a in argv]
    rc, out, err = _run(full)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (full, rc, out[:300], err)
