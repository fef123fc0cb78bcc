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

from . import commands, limits, storage
from .errors import Cancelled, DPError
from .storage.jsonio import dumps


def int_arg(lo: int, hi: int, hint: str = ""):
    """argparse ``type`` for a whole number in [lo, hi]: a bad value is one line and exit 2.

    argparse puts the option's name in front: ``error: argument --seed: must be from 0 to ...``.
    """

    def parse(text: str) -> int:
        try:
            return limits.check_int_range(text.strip(), lo, hi, "value", hint)
        except DPError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix("value ")) from None

    parse.__name__ = "whole number"
    return parse


#: ``type=`` for every seed option: 0 .. 2³²−1, as on the pages.
seed_arg = int_arg(limits.SEED_MIN, limits.SEED_MAX, "seeds are whole numbers like 0, 1, 42")


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dpcore", description="DP Explorer computations with JSON output.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return code


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (2, already one line)
        return exc.code if isinstance(exc.code, int) else 2
    bad = _not_utf8_argument(parser, args)
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
