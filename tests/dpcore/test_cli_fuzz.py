"""Property test over the CLI's argument lists (issue 12): whatever a user types, `python -m dpcore` ends with
exit 0, 2 or 3 and at most one line on stderr: never a traceback, never an unhandled exception.

In-process through dpcore.cli.main (no subprocesses) with bounded examples, so it runs in CI in seconds.
Commands that do real work (train, sweep, report) or start processes (jobs workers --start) are left out;
their argument checks have their own tests.
"""

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.cli import main

#: Numbers a user might type, clumsy or hostile: negative, zero, tiny, huge, above 2^53, not a number.
NUMBERS = ["-1", "0", "1", "2", "1.5", "1e-320", "1e308", "nan", "inf", "4294967296", "9007199254740993", "", "abc"]
#: Text a user might type: conditions, names, markdown, formulas, paths (@m: a small CSV, @bad: not UTF-8...).
TEXTS = [
    "",
    " ",
    "age",
    "age=34",
    "age=nan",
    "age=",
    "=",
    "salary=1:2",
    "salary=5:1",
    "sex=F",
    "zip_code=10001,sex=M",
    "Jan Kees",
    "[x](http://evil/)",
    "=HYPERLINK(1)",
    "laplace",
    "gaussian",
    "gaussian-classic",
    "medical",
    "x" * 300,
    "@m",
    "@bad",
    "@out",
    "@missing",
    "@dir",
]

NUM, TXT, FLAG = "num", "txt", "flag"
OPTIONS = {
    "data": {"medical": FLAG, "--n": NUM, "--seed": NUM, "--out": TXT},
    "noise": {
        "--mechanism": TXT,
        "--epsilon": NUM,
        "--delta": NUM,
        "--sensitivity": NUM,
        "--value": NUM,
        "--draws": NUM,
        "--seed": NUM,
        "--secure": FLAG,
    },
    "differencing": {
        "--n": NUM,
        "--seed": NUM,
        "--min-group": NUM,
        "--target": TXT,
        "--target-id": NUM,
        "--group": TXT,
        "--epsilon": NUM,
        "--trials": NUM,
        "--within": NUM,
        "--sim-seed": NUM,
    },
    "jobs": {
        "list": FLAG,
        "show": TXT,
        "cancel": TXT,
        "rename": TXT,
        "delete": TXT,
        "workers": FLAG,
        "--group": TXT,
        "--limit": NUM,
        "--no-history": FLAG,
        "--stop": FLAG,
        "--sweep": FLAG,
        "--admin": FLAG,
    },
    "linkage": {"--data": TXT, "--known": TXT, "--range": TXT, "--sensitive": TXT, "--max-records": NUM},
    "uniqueness": {"--data": TXT, "--qi": TXT, "--sensitive": TXT},
}
#: Enough to make a command run (so that the values above reach the code, not only argparse).
BASE = {
    "data": ["medical", "--out", "@out"],
    "noise": ["--mechanism", "laplace", "--epsilon", "1", "--sensitivity", "1", "--value", "0", "--draws", "3"],
    "differencing": [],
    "jobs": ["list"],
    "linkage": ["--data", "@m"],
    "uniqueness": ["--data", "@m", "--qi", "age,sex"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "m.csv").write_text(
        "age,sex,zip_code,salary,diagnosis\n34,F,10001,50000,none\n35,M,10002,=1+1,asthma\n34,F,10001,52000,cancer\n"
    )
    (d / "bad.csv").write_bytes(b"\xff\xfe,,\n\x00")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(d)  # relative --out paths the fuzzer types land here, not in the repository
        yield d


def _token(files, tok):
    return {
        "@m": str(files / "m.csv"),
        "@bad": str(files / "bad.csv"),
        "@out": str(files / "out.csv"),
        "@dir": str(files),
        "@missing": str(files / "nope" / "x.csv"),
    }.get(tok, tok)


@st.composite
def argv(draw):
    cmd = draw(st.sampled_from(sorted(OPTIONS)))
    opts = OPTIONS[cmd]

    def part(opt):
        kind = opts[opt]
        if kind == FLAG:
            return st.just([opt])
        return st.sampled_from(NUMBERS if kind == NUM else TEXTS).map(lambda v: [opt, v])

    parts = draw(st.lists(st.sampled_from(sorted(opts)).flatmap(part), max_size=4))
    extra = draw(st.lists(st.text(max_size=6), max_size=1))  # now and then a stray token
    base = BASE[cmd] if draw(st.booleans()) or not parts else []
    return [cmd, *base, *[t for p in parts for t in p], *extra]


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=argv())
def test_cli_never_tracebacks(files, args):
    args = [_token(files, a) for a in args]
    if args[:2] == ["jobs", "workers"] and "--start" in args:  # would start worker processes
        return
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(args)
    text = err.getvalue()
    assert rc in (0, 2, 3), (args, rc, text)
    assert "Traceback" not in text, (args, text)
    if rc != 0:
        assert len(text.strip().splitlines()) == 1, (args, text)


def _text_options():
    """(command, option string, dest, append) for every option of every command that takes free text."""
    import argparse

    from dpcore.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    out = []
    for cmd, sp in sorted(sub.choices.items()):
        for a in sp._actions:
            text = a.type is None and not a.choices and isinstance(a, (argparse._StoreAction, argparse._AppendAction))
            if a.option_strings and text and a.default != "" and not getattr(a, "empty_ok", False):
                out.append((cmd, a.option_strings[-1], a.dest, isinstance(a, argparse._AppendAction), sp))
    return parser, out


def test_no_text_option_reads_an_empty_value_as_left_out():
    """Issue 32: ``sweep --dataset ''`` swept digits, ``synth --columns ''`` released the default columns,
    ``statement --key ''`` used this home's key. Every text option of every command is refused when empty, before
    its command runs (dpcore.cli's one check), unless '' is a value it documents (``sweep --size-fractions ''``)."""
    import argparse

    from dpcore.cli import _empty_argument

    parser, options = _text_options()
    assert len(options) > 40  # the check reaches every command's options, not a few
    for cmd, opt, dest, append, sp in options:
        for blank in ("", "  "):
            ns = argparse.Namespace(command=cmd, **{a.dest: a.default for a in sp._actions if a.dest != "help"})
            setattr(ns, dest, [blank] if append else blank)
            message = _empty_argument(parser, ns)
            assert message and message.startswith(f"{opt} needs "), (cmd, opt, message)


@pytest.mark.parametrize(
    "args",
    [
        ["data", "medical", "--n", "10", "--out", "/dev/full"],
        ["report", "--out", "/dev/full"],
        ["synth", "--builtin", "--epsilon", "1", "--out", "/dev/full"],
        ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--json", "/dev/full"],
        ["advise", "--mechanism", "laplace", "--max-advantage", "0.3", "--statement", "/dev/full"],
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_the_work(capsys, args):
    """The class of `sweep --json /dev/full` (issue 32): every output a user names is checked writable first."""
    from dpcore.jobs import store
    from dpcore.jobs.owners import SYSTEM

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(args)
    text = err.getvalue()
    assert rc == 2 and len(text.strip().splitlines()) == 1, (args, text)
    assert "could not write /dev/full" in text or "character device" in text, text
    assert store.list_jobs(caller=SYSTEM) == []
