"""The public-bounds editor of an upload (issue 34.4), on the training page (the privacy–utility page draws the same
editor): a pre-filled range says "check this", the data owner sees how many of their own rows fall outside each
declared bound (labelled: their rows, not covered by ε, shown to them only), 0/1 and few-valued number columns are
offered as codes, and a bounds file fills the fields. On a real public table too: WHAS500, ages up to 104."""

import json
from pathlib import Path

from dpcore.training import bounds

from .pages import open_page

PAGE = "pages/training.py"
WHAS500 = Path(__file__).resolve().parents[1] / "data" / "whas500.csv"


def _open(data: bytes, target: str | None = None, name: str = "clinic.csv"):
    at = open_page(PAGE)
    at.selectbox(key="tr_dataset").set_value("csv").run()
    at.file_uploader(key="tr_csv").set_value((name, data, "text/csv")).run()
    if target:
        at.selectbox(key="tr_csv_target").set_value(target).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _md(at) -> str:
    return " ".join(m.value for m in at.markdown)


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def _box(at, label):
    return next(n for n in [*at.number_input, *at.text_input] if n.label == label)


def test_a_real_table_prefill_says_check_this_and_the_owner_sees_the_rows_it_would_clip():
    """WHAS500's ages run to 104: the editor's public pre-fill (18–90) is marked "check this", and the owner is told
    how many of their rows it would lower to 90 — counted on their rows, labelled so."""
    data = WHAS500.read_bytes()
    at = _open(data, "fstat", "whas500.csv")
    assert "**age** · number :orange-badge[pre-filled: check this]" in _md(at)
    over = sum(1 for line in data.decode().splitlines()[1:] if int(line.split(",")[1]) > 90)
    assert over > 0
    said = [c for c in _captions(at) if c.startswith(":orange-badge[your rows only]")]
    assert any(f"{over:,} of 500 rows above 90: lowered to 90" in c for c in said), said
    assert any(bounds.OWNER_ONLY in c for c in _captions(at))
    _box(at, "age: upper").set_value(110.0).run()  # checked against the data: the badge and the count go
    assert "check this" not in _md(at).split("**age**")[1].split("**")[0]
    assert not any("rows above" in c and "age" in c for c in _captions(at) if "90" in c)
    assert not any(c.startswith(":orange-badge[your rows only]") and "above 90" in c for c in _captions(at))


def test_zero_one_columns_are_codes_first_and_train_as_categories():
    """WHAS500 has 14 columns of 0/1 codes: each is offered as codes (one text box, not two number boxes), and the
    declared codes become categories in the run's bounds."""
    at = _open(WHAS500.read_bytes(), "fstat", "whas500.csv")
    codes = {c.label: c.value for c in at.checkbox if c.label == "as codes (categories)"}
    assert codes  # one per number column
    flags = [k for k in ("afb", "av3", "chf", "cvd", "gender", "miord", "mitype", "sho")]
    for f in flags:
        assert f"**{f}** · codes" in _md(at), f
        assert any(t.label == f"{f}: categories" for t in at.text_input), f
        assert not any(n.label == f"{f}: lower" for n in at.number_input), f
    assert "**age** · number" in _md(at) and "**bmi** · number" in _md(at)  # many values: a range
    _box(at, "afb: categories").set_value("0, 1").run()
    assert not any("afb" in c and "your rows only" in c for c in _captions(at))  # every row is a declared code
    _box(at, "gender: categories").set_value("0").run()  # a code left out: the owner sees how many rows
    assert any("of 500 rows match none of these categories" in c for c in _captions(at))


def test_a_bounds_file_fills_the_fields_and_names_columns_the_table_lacks():
    rows = ["age,flag,city,label"] + [
        f"{20 + i % 60},{i % 2},{'ab'[i % 2]},{'yes' if i % 3 else 'no'}" for i in range(90)
    ]
    at = _open(("\n".join(rows) + "\n").encode(), "label")
    spec = {"age": [0, 120], "flag": ["0", "1"], "city": ["a", "b"], "label": ["no", "yes"], "height": [0, 250]}
    key = next(u.key for u in at.get("file_uploader") if "bfile" in (u.key or ""))
    at.file_uploader(key=key).set_value(("bounds.json", json.dumps(spec).encode(), "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert _box(at, "age: lower").value == 0 and _box(at, "age: upper").value == 120
    assert _box(at, "flag: categories").value == "0, 1" and _box(at, "city: categories").value == "a, b"
    assert any("does not have: 'height'" in w.value for w in at.warning)
    assert any("4 of 4 columns declared public" in c for c in _captions(at))
    _box(at, "age: upper").set_value(100.0).run()  # the file fills once; the owner's edits stay
    assert _box(at, "age: upper").value == 100


def test_a_bad_bounds_file_is_one_message():
    rows = ["age,label"] + [f"{20 + i},{'yes' if i % 2 else 'no'}" for i in range(40)]
    at = _open(("\n".join(rows) + "\n").encode(), "label")
    key = next(u.key for u in at.get("file_uploader") if "bfile" in (u.key or ""))
    at.file_uploader(key=key).set_value(("b.json", b"{not json", "application/json")).run()
    assert not at.exception
    assert len(at.error) == 1 and "is not valid JSON" in at.error[0].value


def test_outside_counts_each_side_and_the_codes():
    csv = b"age,flag,sex,y\n17,0,F,1\n104,1,M,0\n50,2,X,1\n60,,F,0\n"
    got = bounds.outside(
        csv,
        {
            "age": {"lower": 18, "upper": 90},
            "flag": {"categories": ["0", "1"]},
            "sex": {"categories": ["F", "M"]},
            "y": {"from_data": True},
        },
    )
    assert got == {
        "age": {"rows": 4, "below": 1, "above": 1},
        "flag": {"rows": 3, "other": 1},  # an empty cell is not a value outside the codes
        "sex": {"rows": 4, "other": 1},
    }
    assert bounds.outside_words({"lower": 18, "upper": 90}, got["age"]) == (
        "1 of 4 rows below 18: raised to 18; 1 of 4 rows above 90: lowered to 90"
    )
    assert bounds.outside_words({"lower": 0, "upper": 120}, {"rows": 4, "below": 0, "above": 0}) is None
