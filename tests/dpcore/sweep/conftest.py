"""The tiny sweep (real training) run once for every test of this package that needs it."""

import pytest

from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig
from tests.dpcore.sweep.helpers import TINY


@pytest.fixture(scope="package")
def tiny_result():
    import os
    import tempfile

    old = os.environ.get("DP_EXPLORER_HOME")
    os.environ["DP_EXPLORER_HOME"] = tempfile.mkdtemp()
    try:
        return sweep_runs.run_sweep_inline(SweepConfig(**TINY), owner=OWNER)
    finally:
        if old is None:
            os.environ.pop("DP_EXPLORER_HOME", None)
        else:
            os.environ["DP_EXPLORER_HOME"] = old
