"""The docs' limits page (docs/operations/limits.md), .streamlit/config.toml and the Makefile agree with
dpcore/limits.py (issue 12, 11.10; the table moved from README to the docs site in issue 34)."""

import re
import tomllib

from dpcore import limits
from dpcore.attacks import differencing_dp
from dpcore.data import datasets
from dpcore.noise import mechanisms, release

from ..conftest import ROOT


def _rendered() -> str:
    rows = ["| What | Limit |", "|---|---|"] + [f"| {w} | {lim} |" for w, lim in limits.table()]
    return "\n".join(rows)


LIMITS_PAGE = ROOT / "docs" / "operations" / "limits.md"


def test_docs_limits_table_matches_limits_py():
    text = LIMITS_PAGE.read_text()
    m = re.search(r"<!-- limits:start -->\n(.*?)\n<!-- limits:end -->", text, re.S)
    assert m, "docs/operations/limits.md needs the <!-- limits:start --> ... <!-- limits:end --> section"
    assert m.group(1).strip() == _rendered(), (
        "update docs/operations/limits.md's table from dpcore.limits.table():\n" + _rendered()
    )
    for what in ("Upload size", "Rows in an uploaded CSV", "Columns in an uploaded CSV", "Model size"):
        assert what in m.group(1)


def test_docs_state_exposure_facts():
    text = LIMITS_PAGE.read_text()
    for fact in ("127.0.0.1", "HOST=0.0.0.0", "showErrorDetails", "0600", "read-only"):
        assert fact in text, fact


def test_streamlit_config_agrees_with_dpcore():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["maxUploadSize"] == limits.UPLOAD_MAX_MIB  # Streamlit's unit is MiB (megabytes of 2^20)
    assert limits.UPLOAD_MAX_BYTES == cfg["server"]["maxUploadSize"] * 1024 * 1024
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["client"]["showErrorDetails"] == "none"
    assert cfg["client"]["toolbarMode"] == "viewer"
    # a full collection after every rerun cost ~140 ms of CPU under the GIL: twenty viewers waited seconds
    assert cfg["runner"]["postScriptGC"] is False


def test_makefile_serves_localhost_by_default_and_warns_for_lan():
    mk = (ROOT / "Makefile").read_text()
    assert re.search(r"^HOST\s*\?=\s*127\.0\.0\.1\s*$", mk, re.M)
    assert "--server.address $(HOST)" in mk and "WARNING" in mk


def test_old_names_are_the_limits():
    assert datasets.MAX_UPLOAD_BYTES == limits.UPLOAD_MAX_BYTES
    assert datasets.MAX_UPLOAD_ROWS == limits.UPLOAD_MAX_ROWS
    assert datasets.MAX_UPLOAD_COLUMNS == limits.UPLOAD_MAX_COLUMNS
    assert datasets.MAX_ROWS == limits.MEDICAL_MAX_ROWS
    assert differencing_dp.MAX_TRIALS == limits.DIFFERENCING_MAX_TRIALS
    assert mechanisms.MAX_SIMULATED_DRAWS == limits.SIMULATED_DRAWS_MAX
    assert release.MAX_RELEASE_DRAWS == limits.RELEASE_DRAWS_MAX


def test_mib_in_messages():
    assert limits.mib(limits.UPLOAD_MAX_BYTES) == "50 MiB"
    assert limits.mib(3 * 2**19) == "1.5 MiB"


def test_pages_write_the_upload_limit_as_streamlits_uploader_does():
    """The uploader writes server.maxUploadSize as "50MB per file" (in the visitor's system's MB): pages say 50 MB."""
    assert limits.upload_size() == f"{limits.UPLOAD_MAX_MIB} MB" == "50 MB"


def test_model_size_mirrors_training():
    """dpcore.training.config owns the model-size checks (read as text: importing it loads torch)."""
    src = (ROOT / "dpcore" / "training" / "config.py").read_text()
    for name, value in (("MAX_PARAMS", limits.MODEL_MAX_PARAMS), ("MAX_HIDDEN", limits.MODEL_MAX_HIDDEN)):
        m = re.search(rf"^{name}\s*=\s*([\w.]+)", src, re.M)
        if m and m.group(1).replace("_", "").isdigit():
            assert int(m.group(1).replace("_", "")) == value, f"training.{name} and limits disagree"
        elif m:  # training reads it from limits
            assert "limits" in m.group(1)


def test_every_cache_is_bounded():
    """A visitor chooses what is cached (sizes, seeds): every st.cache_* and lru_cache keeps a bounded number."""
    import ast

    unbounded = []
    for path in list((ROOT / "pages").glob("*.py")) + list((ROOT / "dpcore").rglob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            for dec in getattr(node, "decorator_list", []):
                name = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
                if name.endswith(("cache_data", "cache_resource", "lru_cache", "functools.cache", "cache")):
                    kws = {k.arg: k.value for k in dec.keywords} if isinstance(dec, ast.Call) else {}
                    bound = kws.get("max_entries", kws.get("maxsize"))
                    if bound is None and isinstance(dec, ast.Call) and dec.args and name.endswith("lru_cache"):
                        bound = dec.args[0]
                    if bound is None or (isinstance(bound, ast.Constant) and bound.value is None):
                        unbounded.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not unbounded, unbounded
