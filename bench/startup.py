"""Time to first render of Home vs `import torch` alone (each in a fresh interpreter).

Home must not import torch/opacus, so its first render should cost a fraction of importing torch.
Prints seconds and the ratio (median of 3 runs each).
"""

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HOME = """
import sys, time
t = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=60)
at.run()
assert not at.exception, at.exception
print(time.perf_counter() - t)
print("torch" in sys.modules)
"""
TORCH = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"


def timed(code: str) -> tuple[float, list[str]]:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    return float(lines[0]), lines[1:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one run each: a smoke test")
    runs = 1 if ap.parse_args().quick else 3
    home, torch_t, flags = [], [], set()
    for _ in range(runs):
        t, extra = timed(HOME)
        home.append(t)
        flags.update(extra)
        torch_t.append(timed(TORCH)[0])
    h, tt = statistics.median(home), statistics.median(torch_t)
    print(f"home first render (AppTest, incl. streamlit import): {h:.2f} s")
    print(f"import torch alone:                                  {tt:.2f} s")
    print(f"ratio home / import torch: {h / tt:.2f}")
    print(f"torch imported by home: {'True' in flags}")


if __name__ == "__main__":
    main()
