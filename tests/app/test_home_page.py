"""Home's "Start here" tour: one step per page, as it says."""

import ast

from dpcore.jobs import registry, runner
from tests.app.pages import ME, ROOT, open_page


def _titles() -> dict[str, str]:
    """Each page's title in app.py's navigation, by path."""
    out = {}
    for node in ast.walk(ast.parse((ROOT / "app.py").read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page" and node.args:
            out[node.args[0].value] = next(k.value.value for k in node.keywords if k.arg == "title")
    return out


def test_the_guided_tour_has_a_step_for_every_page():
    """The tour says "one step per page" but had seven steps for nine pages: "Choose ε from risk" and the new
    "Audit your model" had none, so a first-time visitor following it never met them. Its steps follow the
    sidebar's order (step 4 was the sidebar's sixth page)."""
    at = open_page("pages/home.py")
    assert not at.exception
    steps = [link.proto.label.strip("*") for link in at.get("page_link")]
    assert [st.split(" · ")[0] for st in steps] == [str(i) for i in range(1, len(steps) + 1)]  # numbered in order
    steps = [st.split(" · ", 1)[1] for st in steps]
    pages = {path: title for path, title in _titles().items() if path != "pages/home.py"}
    assert steps[0] == "Here, on Home" and steps[1:] == list(pages.values()), steps  # the sidebar's order
    assert any("one step per page" in m.value for m in at.markdown)


def test_the_tour_times_dp_training_from_measured_runs():
    """The training step said "about a minute", a figure nobody measured: before any DP run here it quotes the run
    measured on a 2-core machine, and after one the time this server took."""

    def line() -> str:
        at = open_page("pages/home.py", owner=ME)
        assert not at.exception
        return next(m.value for m in at.markdown if m.value.startswith("Train a model with DP"))

    assert line() == "Train a model with DP next to its non-private twin (measured on a 2-core machine: about 10 s)."
    runner.run_inline("demo.sleep", {"steps": 1, "seconds": 0.1, "epsilon": 1.0}, owner=ME, group=registry.TRAIN_GROUP)
    after = line()
    assert after.startswith("Train a model with DP next to its non-private twin (on this server: about ")
    assert after.endswith(" s, measured once).")
