"""Argument types the subcommands share: whole numbers in a range and seeds, each a bad value in one line, exit 2."""

from __future__ import annotations

import argparse

from .. import limits
from ..errors import DPError


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
