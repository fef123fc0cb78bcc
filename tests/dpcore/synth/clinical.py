"""The public clinical tables of tests/data (see its README) and declarations of their columns: public, documented
ranges of each measure, never read from the rows."""

from pathlib import Path

import pandas as pd

from dpcore.synth import schema as S

DATA = Path(__file__).resolve().parents[2] / "data"
GBSG2 = DATA / "gbsg2.csv"
WHAS500 = DATA / "whas500.csv"

#: Every column of GBSG2 (686 × 10): hormonal therapy, age, menopausal status, tumour size (mm), grade, positive
#: nodes, progesterone and oestrogen receptors (fmol), recurrence-free time (days), event.
GBSG2_COLUMNS = (
    "horTh=no,yes",
    "age=20:80:5",
    "menostat=Pre,Post",
    "tsize=0:120:10",
    "tgrade=I,II,III",
    "pnodes=0:52:4",
    "progrec=0:2400:200",
    "estrec=0:1200:100",
    "time=0:2700:225",
    "cens=0,1",
)

#: Twelve of WHAS500's 16 columns (a release takes at most 12).
WHAS500_COLUMNS = (
    "afb=0,1",
    "age=30:105:5",
    "av3=0,1",
    "bmi=10:50:5",
    "chf=0,1",
    "cvd=0,1",
    "diasbp=0:200:20",
    "gender=0,1",
    "hr=30:190:20",
    "los=0:48:4",
    "sysbp=50:250:20",
    "fstat=0,1",
)


def gbsg2() -> pd.DataFrame:
    return pd.read_csv(GBSG2)


def whas500() -> pd.DataFrame:
    return pd.read_csv(WHAS500)


def gbsg2_schema(n: int | None = None) -> S.Schema:
    return S.parse_schema(GBSG2_COLUMNS[:n])


def whas500_schema(n: int | None = None) -> S.Schema:
    return S.parse_schema(WHAS500_COLUMNS[:n])
