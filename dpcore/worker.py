"""``python -m dpcore.worker [--id ID] [--once]``: a background job worker.

Claims queued jobs from the store under ``$DP_EXPLORER_HOME`` and runs them one at a time; exits
after ``DP_EXPLORER_JOBS_IDLE_EXIT`` seconds without work (default 600). Normally started by
:func:`dpcore.jobs.ensure_workers`, not by hand.
"""

from __future__ import annotations

import argparse
import sys

from . import jobs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpcore.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--id", default=None, help="worker id (given by the executor that started it)")
    parser.add_argument("--once", action="store_true", help="run at most one job, then exit")
    args = parser.parse_args(argv)
    try:
        jobs.run_worker(args.id, once=args.once)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
