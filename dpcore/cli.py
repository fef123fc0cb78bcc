"""``python -m dpcore``: the dashboard's computations, headless, with JSON on stdout.

Each subcommand lives in ``dpcore/commands/<name>.py`` and defines ``register(subparsers)``, which
adds its parser and sets ``func`` (``args -> JSON-serialisable object``). Errors a user can cause are
:class:`~dpcore.errors.DPError`: printed as one line on stderr, exit code ``err.exit_code``. Storage
faults (full disk, read-only or corrupted store) and a closed output pipe are one line and exit 2 too.
A cancelled run (:class:`~dpcore.errors.Cancelled`) and Ctrl-C are one line and exit 130, never 2:
a user never sees a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sqlite3
import sys

from . import commands, storage
from .errors import Cancelled, DPError
from .storage.jsonio import dumps


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def one_line(text) -> str:
    """``text`` as one printable line: line breaks collapse, control characters (terminal escapes) are shown
    as ``\\xNN`` — messages quote what the user typed."""
    flat = " ".join(str(text).split())
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in flat)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2, no usage dump
        self.exit(2, f"error: {one_line(message)} (see `{self.prog} --help`)\n")


def command_modules() -> list[str]:
    """The subcommand modules of :mod:`dpcore.commands` (``synth_study`` registers ``synth-study``)."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser, or, when ``argv`` starts with a command's name, that command's only: each command
    module imports what it computes with (pandas, scipy, FastAPI, …), and one command need not wait for the
    others' imports (``--help`` and a mistyped command still list them all)."""
    parser = _Parser(prog="python -m dpcore", description="DP Explorer computations with JSON output.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    names = command_modules()
    first = str(argv[0]).replace("-", "_") if argv else None
    for name in [first] if first in names else names:
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    return parser


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return code


def main(argv=None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else list(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (2, already one line)
        return exc.code if isinstance(exc.code, int) else 2
    bad = _not_utf8_argument(parser, args) or _empty_argument(parser, args)
    if bad:
        return _fail(bad)
    try:
        result = args.func(args)
        if result is not None:
            sys.stdout.write(dumps(result) + "\n")
            sys.stdout.flush()
    except DPError as err:
        return _fail(str(err), err.exit_code)
    except BrokenPipeError:
        _quiet_stdout()
        return _fail("output closed early (broken pipe); the command's result was not fully written")
    except Cancelled as err:
        return _fail(str(err) or "cancelled", err.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except UnicodeError:  # a name typed in another encoding (Latin-1 bytes arrive as lone surrogates)
        return _fail(_not_utf8(sys.argv[1:] if argv is None else argv))
    except (sqlite3.Error, OSError) as exc:  # a storage fault the code below did not name: still one line
        return _fail(storage.fault_message(exc))
    return 0


_PATHISH = ("file", "path", "folder", "FILE", "DIR")


def _path_dests(parser) -> set[str]:
    """Destinations of options that name files (``--data``, ``--out``, ``--json``, ``--verify``, …): a file name
    in another encoding is a fine path on Linux, so those keep their bytes."""
    dests = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
            elif any(w in f"{a.help or ''} {a.metavar or ''}" for w in _PATHISH) or a.dest in (
                "data",
                "out",
                "json_out",
            ):
                dests.add(a.dest)
    return dests


def _not_utf8_argument(parser, args) -> str | None:
    """A message when a text argument (a name, a reason, a condition) is not UTF-8 — refused before anything
    runs, never stored with its bytes dropped (a Latin-1 'M\\xfcller' was registered as 'Mller')."""
    paths = _path_dests(parser)
    for dest, value in vars(args).items():
        if dest in paths or dest == "func":
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and _has_surrogates(v):
                return _not_utf8([v])
    return None


def _chosen(parser, args) -> list:
    """The actions of the parser and of each subcommand chosen (``args.command``, then nested ones)."""
    actions, p = [], parser
    while p is not None:
        actions += [a for a in p._actions if not isinstance(a, argparse._SubParsersAction)]
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        p = None if sub is None else sub.choices.get(getattr(args, sub.dest, None) or "")
    return actions


def _empty_argument(parser, args) -> str | None:
    """A message when an option was given an empty (or blank) value: refused before anything runs, never read as
    "not given" (``sweep --dataset ''`` swept digits, ``synth --columns ''`` released the default columns,
    ``statement --key ''`` verified with this home's key). An option whose own default is that text, or whose
    action says ``empty_ok`` (``sweep --size-fractions ''``: none), is left alone."""
    paths = _path_dests(parser)
    for a in _chosen(parser, args):
        value = getattr(args, a.dest, None)
        values = value if isinstance(value, (list, tuple)) else [value]
        if not a.option_strings or getattr(a, "empty_ok", False) or value == a.default:
            continue  # a positional cannot be left out: its command names what it needs
        if not any(isinstance(v, str) and not v.strip() for v in values):
            continue
        name = a.option_strings[-1]
        what = (
            "a file path"
            if a.dest in paths
            else "a column name"
            if str(a.metavar or "").upper() in ("COL", "COLUMN")
            else "a value"
        )
        return f"{name} needs {what}; got an empty one" + ("" if a.required else f" (leave {name} out for its default)")
    return None


def _not_utf8(argv) -> str:
    """The message for an argument that is not UTF-8 text (``$'M\\xfcller'`` in a Latin-1 terminal): nothing
    was stored, and the argument is named as it was typed."""
    bad = next((a for a in argv if isinstance(a, str) and _has_surrogates(a)), None)
    shown = one_line(bad.encode("utf-8", "surrogateescape").decode("latin-1")) if bad else "an argument"
    return (
        f"{shown!r} is not UTF-8 text (a name typed in another encoding, e.g. Latin-1); nothing was changed — "
        "set the terminal to UTF-8 (e.g. LANG=C.UTF-8) and type it again"
    )


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
