"""`python -m dpcore export --job ID | --sweep ID --format py|ipynb [--out FILE] [--admin]`: a training run or a sweep as a
Python script or a Jupyter notebook that re-runs it through dpcore's public functions (:mod:`dpcore.export`).
Without ``--out`` the code goes to stdout; with it, the file is written and its name printed as JSON. The command line
exports its own runs and sweeps (and the shared demo sweeps), as ``jobs show`` reads them; ``--admin``, anyone's
(after the admin check, :func:`dpcore.commands._who.job_caller`)."""

from __future__ import annotations

import sys

from .. import export
from ..serialize import check_json_path
from ..storage import write_user_file
from . import _who


def register(sub) -> None:
    p = sub.add_parser("export", help="a training run or a sweep as a Python script or notebook that re-runs it")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--job", default=None, metavar="ID", help="a training job (python -m dpcore jobs list)")
    which.add_argument("--sweep", default=None, metavar="ID", help="a stored privacy–utility sweep")
    p.add_argument("--format", default="py", choices=list(export.FORMATS), help="py (a script) or ipynb (default py)")
    p.add_argument("--out", default=None, metavar="FILE", help="write here instead of stdout")
    _who.add_admin_flag(p, "everyone's runs and sweeps")
    p.set_defaults(func=run)


def run(args):
    if args.out is not None:
        check_json_path(args.out, "--out")  # a folder, a missing folder or '' fail before anything is built
    caller = _who.job_caller(args)
    recipe = export.for_job(args.job, caller=caller) if args.job else export.for_sweep(args.sweep, caller=caller)
    data = export.render(recipe, args.format)
    if args.out is None:
        sys.stdout.write(data.decode())
        sys.stdout.flush()
        return None

    write_user_file(args.out, data, option="--out")
    return {"written": args.out, "format": args.format, "title": recipe.title}
