"""``python -m dpcore``: the dashboard's computations, headless, with JSON on stdout.

Each subcommand lives in ``dpcore/commands/<name>.py`` and defines ``register(subparsers)``, which
adds its parser and sets ``func`` (``args -> JSON-serialisable object``). Errors a user can cause are
:class:`~dpcore.errors.DPError`: printed as one line on stderr, exit code ``err.exit_code``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .errors import DPError
from .serialize import dumps


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2, no usage dump
        self.exit(2, f"error: {message} (see `python -m dpcore {self.prog.split()[-1]} --help`)\n")


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


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except DPError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    if result is not None:
        print(dumps(result))
    return 0
