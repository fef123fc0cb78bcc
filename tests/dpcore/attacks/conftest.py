"""Shared fixtures for the attack tests."""

import pandas as pd
import pytest


@pytest.fixture
def release():
    return pd.DataFrame(
        {
            "person_id": [0, 1, 2, 3],
            "age": [30, 30, 40, 50],
            "sex": ["F", "F", "M", "F"],
            "zip_code": [10001, 10001, 10002, 10001],
            "salary": [52_000, 58_000, 61_000, 40_000],
            "diagnosis": ["flu", "cold", "flu", "cancer"],
            "has_rare_disease": [False, False, True, True],
        }
    )
