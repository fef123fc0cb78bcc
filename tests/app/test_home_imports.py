"""A cold server's first chart waits for Home's imports: they load only what Home draws (no pandas, pyarrow,
scipy, torch). Checked in a fresh interpreter on the module-level imports of pages/home.py."""

import ast
import subprocess
import sys

from .pages import ROOT

HEAVY = ("pandas", "pyarrow", "scipy", "sklearn", "torch", "opacus", "dp_accounting", "diffprivlib")


def test_home_imports_nothing_heavy():
    tree = ast.parse((ROOT / "pages" / "home.py").read_text())
    lines = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert any("dpcore" in line for line in lines)
    code = "\n".join([*lines, "import sys", f"print(*[m for m in {HEAVY!r} if m in sys.modules])"])
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [], f"Home's imports load {out.stdout.split()}"
