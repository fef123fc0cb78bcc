"""dpcore.errors.sentence: how a page shows a dpcore message (one rule, applied in pages/_ui.guarded)."""

import pytest

from dpcore.errors import sentence


@pytest.mark.parametrize(
    "message, shown",
    [
        ("prior belief must be in (0, 1)", "Prior belief must be in (0, 1)"),
        ("a CSV file is required", "A CSV file is required"),
        ("quasi-identifier 'age' is chosen twice", "Quasi-identifier 'age' is chosen twice"),
        ("budget exceeded: only ε = 0.4 of 1 is left", "Budget exceeded: only ε = 0.4 of 1 is left"),
        ("the disk holding $DP_EXPLORER_HOME is full", "The disk holding $DP_EXPLORER_HOME is full"),
        ("CSV is empty", "CSV is empty"),  # already a sentence
        # symbols, identifiers and names keep their case: capitalised they would mean something else
        ("ε must be > 0", "ε must be > 0"),
        ("δ must be in (0, 1)", "δ must be in (0, 1)"),
        ("n (number of rows) must be > 0", "n (number of rows) must be > 0"),
        ("k (number of queries) must be > 0", "k (number of queries) must be > 0"),
        ("q must be in (0, 1]", "q must be in (0, 1]"),
        ("batch_size must be > 0", "batch_size must be > 0"),
        ("diffprivlib models take a target epsilon", "diffprivlib models take a target epsilon"),
        ("mnist.npz lacks arrays x_train", "mnist.npz lacks arrays x_train"),
        ("'age' is not a column", "'age' is not a column"),
        ("--out must be a file path", "--out must be a file path"),
        ("3 sweep point(s) failed", "3 sweep point(s) failed"),
        ("", ""),
    ],
)
def test_sentence_capitalises_an_ordinary_first_word_only(message, shown):
    assert sentence(message) == shown


def test_sentence_changes_nothing_but_the_first_letter():
    msg = "prior belief must be in (0, 1), got 1.5; try 0.01–0.5"
    assert sentence(msg)[1:] == msg[1:] and sentence(sentence(msg)) == sentence(msg)
