"""The server imports what the pages import in the background when it starts (pages/ui/warmup.py, issue 32 §5):
the list comes from the pages' own import lines, leaves out the heavy libraries and the pages' helpers, and a
module that cannot be imported is skipped, never an error."""

import subprocess
import sys

from pages.ui import warmup

from ..conftest import ROOT


def test_the_pages_imports_without_heavy_libraries_or_page_helpers():
    names = warmup.modules()
    assert {"pandas", "dpcore.figures.noise", "dpcore.noise.view"} <= set(names)
    assert not [n for n in names if n.split(".")[0] in warmup.HEAVY + warmup.SCRIPT_SIDE]


def test_warm_skips_what_is_not_a_module_and_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from pages.ui import warmup\n"
        "done = warmup.warm(warmup.modules() + ['dpcore.no_such_module', 'dpcore.errors.sentence'])\n"
        "assert 'dpcore.figures.noise' in sys.modules and 'dpcore.no_such_module' not in done\n"
        "print(sorted(m for m in ('torch', 'opacus', 'opendp', 'jax', 'sklearn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_start_runs_once_per_process(monkeypatch):
    monkeypatch.setattr(warmup, "_started", type(warmup._started)())
    monkeypatch.setattr(warmup, "warm", lambda names=None: [])
    assert warmup.start(delay=0) is True
    assert warmup.start(delay=0) is False
