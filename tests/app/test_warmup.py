"""The server imports what the pages import in the background when it starts (pages/ui/warmup.py, issue 32 §5):
the list comes from the pages' own import lines, leaves out the heavy libraries and the pages' helpers, and a
module that cannot be imported is skipped, never an error."""

import subprocess
import sys
import threading
import time

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
    _fresh(monkeypatch)
    monkeypatch.setattr(warmup, "warm", lambda names=None: [])
    assert warmup.start() is True
    assert warmup.start() is False


def _fresh(monkeypatch):
    for name in ("_started", "_done"):
        monkeypatch.setattr(warmup, name, threading.Event())
    monkeypatch.setattr(warmup, "_lock", threading.Lock())


def test_a_script_waits_for_a_warm_up_under_way(monkeypatch):
    """A page must not run while the warm-up imports (plotly reads a half-imported pandas from sys.modules): a
    script's ensure() returns only after the warm-up's imports have finished."""
    _fresh(monkeypatch)
    inside, release, calls = threading.Event(), threading.Event(), []

    def slow_warm(names=None):
        calls.append("warm")
        inside.set()
        release.wait(10)
        calls.append("imported")
        return []

    monkeypatch.setattr(warmup, "warm", slow_warm)
    assert warmup.start()
    assert inside.wait(10)
    script = threading.Thread(target=lambda: (warmup.ensure(), calls.append("script")))
    script.start()
    script.join(0.3)
    assert script.is_alive() and calls == ["warm"]  # still waiting: the imports are not done
    release.set()
    script.join(10)
    assert calls == ["warm", "imported", "script"]
    warmup.ensure()  # done: returns at once, no second warm-up
    assert calls.count("warm") == 1


def test_a_script_before_the_warm_up_thread_runs_the_warm_up_itself_once(monkeypatch):
    _fresh(monkeypatch)
    calls = []
    monkeypatch.setattr(warmup, "warm", lambda names=None: calls.append("warm") or [])
    threads = [threading.Thread(target=warmup.ensure) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert calls == ["warm"]
    assert warmup.start()  # the thread still starts, and finds the work done
    time.sleep(0.2)
    assert calls == ["warm"]
