"""The front door (dpcore.api.app) through FastAPI's TestClient: the analyst's key in a header, the same gate and
free repeats as the console, one JSON message per error, failed keys rate-limited in bounded memory."""

import json

import pytest

from dpcore.api.app import ANALYST_HEADER, MAX_BODY_BYTES, create_app
from dpcore.api.ratelimit import FailureLimiter
from dpcore.budgets import quotas, registry
from dpcore.data import datasets
from dpcore.statements import keys
from dpcore.statements import verify as verification
from tests.budgets_helpers import admin, grant_key

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # starlette's TestClient on httpx


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def door(dp_home):
    """A registered dataset "clinic" (cap ε = 1) with ann's quota of 0.5 and bob's on nothing; a client of the API."""
    from fastapi.testclient import TestClient

    info = registry.register(admin(), "clinic", datasets.medical(400, 1), epsilon=1.0)
    key = grant_key("ann", info["fingerprint"], 0.5)
    registry.register(admin(), "other", datasets.medical(300, 2), epsilon=1.0)
    bob = grant_key("bob", "other", 0.5)
    clock = Clock()
    app = create_app(limiter=FailureLimiter(clock=clock))
    tc = TestClient(app, raise_server_exceptions=False)
    return {"tc": tc, "key": key, "bob": bob, "clock": clock, "app": app, "fp": info["fingerprint"]}


def _h(key, name="ann"):
    return {"Authorization": f"Bearer {key}", ANALYST_HEADER: name}


COUNT = {"dataset": "clinic", "kind": "count", "epsilon": 0.2, "condition": "has_rare_disease=true"}


def test_an_analyst_sees_their_datasets_and_quota_without_the_exact_n(door):
    tc, key = door["tc"], door["key"]
    r = tc.get("/v1/datasets", headers=_h(key))
    assert r.status_code == 200
    names = [d["name"] for d in r.json()]
    assert "clinic" in names and "other" not in names  # bob's dataset is not ann's
    assert all("n_rows" not in d for d in r.json())  # 1,000 against 999 would tell who is in the data
    st = tc.get("/v1/status", params={"dataset": "clinic"}, headers=_h(key)).json()
    assert st["quota"]["total"] == 0.5 and st["quota"]["spent"] == 0 and st["cap"]["epsilon"] == 1.0
    assert "n_rows" not in st and "history" not in st
    assert tc.get("/v1/me", headers=_h(key)).json()["analyst"] == "ann"


def test_the_exact_n_shows_only_where_the_owner_declared_it_public(door):
    registry.register(admin(), "open", datasets.medical(250, 3), epsilon=1.0, public_n=True)
    quotas.grant(admin(), "ann", "open", epsilon=0.5)
    rows = {d["name"]: d for d in door["tc"].get("/v1/datasets", headers=_h(door["key"])).json()}
    assert rows["open"]["n_rows"] == 250 and rows["open"]["public_n"] is True
    assert "n_rows" not in rows["clinic"] and rows["clinic"]["public_n"] is False
    assert rows["open"]["number_of_rows"] == registry.PUBLIC_N and rows["clinic"]["number_of_rows"] == registry.HIDDEN_N
    st = door["tc"].get("/v1/status", params={"dataset": "open"}, headers=_h(door["key"])).json()
    assert st["n_rows"] == 250
    # the API's list is the command line's: one set of fields, one rule for n
    ann = door["tc"].get("/v1/datasets", headers=_h(door["key"])).json()
    assert all(set(d) <= set(registry.LIST_FIELDS) for d in ann)


def test_a_question_spends_through_the_one_gate_and_a_repeat_is_free(door):
    tc, key = door["tc"], door["key"]
    r = tc.post("/v1/query", json=COUNT, headers=_h(key))
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["epsilon_spent"] == pytest.approx(0.2) and not a["reused"] and a["secure"] is True
    assert isinstance(a["answer"], (int, float)) and a["dataset"] == "clinic"
    again = tc.post("/v1/query", json=COUNT, headers=_h(key)).json()
    assert again["reused"] and again["answer"] == a["answer"] and again["spent"] == pytest.approx(0.2)
    ledger = quotas.status(admin(), "clinic", analyst="ann", with_history=False)
    assert ledger["quota"]["spent"] == pytest.approx(0.2) and ledger["cap"]["spent"] == pytest.approx(0.2)
    r = tc.post("/v1/query", json={**COUNT, "epsilon": 0.4, "condition": "age>50"}, headers=_h(key))
    assert r.status_code == 409 and r.json()["code"] == "budget_exceeded" and "nothing was spent" in r.json()["error"]
    assert quotas.status(admin(), "clinic", analyst="ann", with_history=False)["quota"]["spent"] == pytest.approx(0.2)
    r = tc.post("/v1/query", json={**COUNT, "dataset": "other"}, headers=_h(key))  # not ann's
    assert r.status_code == 400 and r.json()["code"] == "refused"
    r = tc.post("/v1/query", json={**COUNT, "kind": "sum", "column": "age"}, headers=_h(key))  # no bounds
    assert r.status_code == 400 and "needs public bounds" in r.json()["error"]


def test_history_released_answers_and_a_signed_statement_anyone_can_check(door):
    tc, key = door["tc"], door["key"]
    a = tc.post("/v1/query", json=COUNT, headers=_h(key)).json()
    h = tc.get("/v1/history", params={"dataset": "clinic"}, headers=_h(key)).json()
    spends = [e for e in h["history"] if e["kind"] == "spend"]
    assert len(spends) == 1 and spends[0]["answer"]["answer"] == a["answer"] and "canonical" not in spends[0]
    st = tc.get("/v1/statement", params={"dataset": "clinic"}, headers=_h(key)).json()
    assert st["kind"] == "ledger" and st["quota_share"]["answers"] == 1
    pub = tc.get("/public-key").json()
    assert pub["fingerprint"] == st["signature"]["key_fingerprint"] == keys.published()["fingerprint"]
    out = verification.verify(st, public_key=keys.load_public(pub["public_key"]), home=False)
    assert out["verified"], out["problems"]


def test_no_key_a_wrong_key_or_a_key_in_the_url_is_one_json_message(door):
    tc, key = door["tc"], door["key"]
    for headers in ({}, {"Authorization": f"Basic {key}"}, {"Authorization": f"Bearer {key}"}):
        r = tc.get("/v1/datasets", headers=headers)
        assert r.status_code == 401 and set(r.json()) == {"error", "code"} and r.headers["www-authenticate"]
    r = tc.get("/v1/datasets", headers=_h("dpx_wrong"))
    assert r.status_code == 401 and "name or key is wrong" in r.json()["error"]
    r = tc.get("/v1/datasets", headers=_h(key, "bob"))  # ann's key under bob's name
    assert r.status_code == 401
    for query in (f"?key={key}", f"?dataset=clinic&token={key}", f"?x={key}"):
        r = tc.get("/v1/status" + query, headers=_h(key))
        assert r.status_code == 400 and r.json()["code"] == "key_in_url"


def test_request_size_validation_and_internal_errors_never_show_a_traceback(door, monkeypatch):
    tc, key = door["tc"], door["key"]
    r = tc.post(
        "/v1/query",
        content=b"{" + b" " * MAX_BODY_BYTES + b"}",
        headers={**_h(key), "content-type": "application/json"},
    )
    assert r.status_code == 413 and r.json()["code"] == "too_large"

    def chunks():  # no Content-Length: counted as it streams in
        for _ in range(MAX_BODY_BYTES // 1000 + 2):
            yield b" " * 1000

    r = tc.post("/v1/query", content=chunks(), headers={**_h(key), "content-type": "application/json"})
    assert r.status_code == 413
    r = tc.post("/v1/query", content=b"{not json", headers={**_h(key), "content-type": "application/json"})
    assert r.status_code == 422 and set(r.json()) == {"error", "code"}
    r = tc.post("/v1/query", json={**COUNT, "epsilon": "lots"}, headers=_h(key))
    assert r.status_code == 422 and r.json()["error"].startswith("epsilon:")
    r = tc.post("/v1/query", json={**COUNT, "extra": 1}, headers=_h(key))
    assert r.status_code == 422 and r.json()["error"].startswith("extra:")
    r = tc.get("/v1/status", params={"dataset": "x" * 500}, headers=_h(key))
    assert r.status_code == 422
    from dpcore.api import service

    def boom(who):
        raise RuntimeError("/srv/secret/path/ledger.sqlite exploded")

    monkeypatch.setattr(service, "datasets", boom)
    r = tc.get("/v1/datasets", headers=_h(key))
    assert (
        r.status_code == 500 and "secret" not in r.text and "Traceback" not in r.text and r.json()["code"] == "internal"
    )
    assert tc.get("/nowhere").json()["code"] == "not_found"


def test_failed_keys_are_rate_limited_per_key_id_and_per_address(door):
    from fastapi.testclient import TestClient

    tc, key, clock = door["tc"], door["key"], door["clock"]
    for _ in range(5):
        assert tc.get("/v1/datasets", headers=_h("dpx_guess")).status_code == 401
    r = tc.get("/v1/datasets", headers=_h(key))  # even the right key waits: the name is being guessed
    assert r.status_code == 429 and r.json()["code"] == "rate_limited" and int(r.headers["retry-after"]) > 0
    assert tc.get("/v1/datasets", headers=_h(door["bob"], "bob")).status_code == 200  # another key id is fine
    clock.t += 301
    assert tc.get("/v1/datasets", headers=_h(key)).status_code == 200
    # per address: guesses spread over many names from one address
    for i in range(20):
        assert tc.get("/v1/datasets", headers=_h("dpx_guess", f"name{i}")).status_code == 401
    assert tc.get("/v1/datasets", headers=_h(key)).status_code == 429
    elsewhere = TestClient(door["app"], raise_server_exceptions=False, client=("10.0.0.7", 4000))
    assert elsewhere.get("/v1/datasets", headers=_h(key)).status_code == 200


def test_the_limiter_remembers_a_bounded_number_of_addresses_and_keys():
    clock = Clock()
    lim = FailureLimiter(max_keys=50, key_failures=3, address_failures=3, window=60, clock=clock)
    for i in range(5000):
        lim.failed(f"10.0.{i // 256}.{i % 256}", f"name{i}")
    assert lim.tracked() <= 100
    for _ in range(3):
        lim.failed("1.1.1.1", "ann")
    assert 0 < lim.retry_after("1.1.1.1", "someone") <= 60 and 0 < lim.retry_after("2.2.2.2", "ann") <= 60
    clock.t += 61
    assert lim.retry_after("1.1.1.1", "ann") == 0


def test_the_api_writes_json_as_dpcore_does():
    from dpcore.api.app import DPJSONResponse

    assert json.loads(DPJSONResponse({"x": float("nan")}).body) == {"x": None}
