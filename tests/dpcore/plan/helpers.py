"""A plan of five statistics on the built-in visits, shared by the plan tests."""

from dpcore.plan import forms, model


def five(epsilon: float = 1.0, *, k: int = 5, split: str = "equal", person: bool = True) -> model.Plan:
    """Count, histogram over public categories, bounded sum, a mean grouped by a public key, and the median."""
    d = dict(forms.EXAMPLES["visits"])
    d["epsilon"] = epsilon
    d["split"] = split
    d["unit"] = {"person": "patient_id", "max_rows": k} if person else {"person": None, "public_max_rows": 10}
    return model.Plan.from_dict(d)
