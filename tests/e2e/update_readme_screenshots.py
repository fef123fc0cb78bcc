"""Copy the latest real-browser screenshots into assets/screenshots/ (small palette PNGs) for the README tour and
the docs site (docs/assets links to assets/, so the site shows the same files).

Run after `pytest tests/e2e` (or `make screenshots`, which does both).
"""

from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "e2e" / "screenshots"
DST = ROOT / "assets" / "screenshots"
PAGES = [
    "home",
    "noise",
    "advisor",
    "reidentification",
    "differencing",
    "query_console",
    "plan",
    "training",
    "privacy_utility",
    "audit",
    "flow_sweep",
    "story_sweep",
    # your own data, step by step (tests/e2e/test_own_data.py)
    "own_upload",
    "own_sweep",
    "own_exposed",
    "own_code",
    "own_audit",
]


def main() -> None:
    DST.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        src = SRC / f"{name}.png"
        if not src.exists():
            print(f"missing {src}; run pytest tests/e2e first")
            continue
        img = Image.open(src).convert("RGB")
        img = img.resize((img.width * 3 // 4, img.height * 3 // 4), Image.LANCZOS)
        img.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(DST / f"{name}.png", optimize=True)
        print(f"{name}: {(DST / f'{name}.png').stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
