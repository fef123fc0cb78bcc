"""The front door for real: `python -m dpcore api` (uvicorn) on a free port, and the analyst's client —
`python -m dpcore remote` run from another folder with an empty DP_EXPLORER_HOME, and the notebook class — answers,
spends and is refused, without ever reading the server's files."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from dpcore.api.client import Client, RemoteError
from dpcore.budgets import quotas, registry
from dpcore.data import datasets
from dpcore.statements import keys
from dpcore.statements import verify as verification
from tests.budgets_helpers import admin, grant_key

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The data owner's home (a registered "clinic", cap ε = 1, ann's quota 0.5) served by a real API process."""
    home = tmp_path_factory.mktemp("server-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DP_EXPLORER_HOME", str(home))
        registry.register(admin(), "clinic", datasets.medical(400, 1), epsilon=1.0)
        key = grant_key("ann", "clinic", 0.5)
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DP_EXPLORER")}
        env["DP_EXPLORER_HOME"] = str(home)
        log = open(home / "api.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "dpcore", "api", "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=log
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(url + "/health", timeout=2) as r:
                        if json.loads(r.read())["ok"]:
                            break
                except OSError:
                    pass
                assert proc.poll() is None, (home / "api.log").read_text()
                assert time.monotonic() < deadline, "the API did not start"
                time.sleep(0.3)
            yield {"url": url, "key": key, "home": home, "mp": mp}
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


def _remote(tmp_path, url, key, *args):
    """`python -m dpcore remote ARGS --url URL` on the analyst's machine: another folder, an empty home."""
    home = tmp_path / "analyst-home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DP_EXPLORER")}
    env.update(DP_EXPLORER_HOME=str(home), DP_EXPLORER_ANALYST_KEY=key)
    p = subprocess.run(
        [sys.executable, "-m", "dpcore", "remote", *args, "--url", url, "--analyst", "ann"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert list(home.iterdir()) == []  # the client read and wrote nothing in a home
    return p


def _spent(server):
    server["mp"].setenv("DP_EXPLORER_HOME", str(server["home"]))
    return quotas.status(admin(), "clinic", analyst="ann", with_history=False)["quota"]["spent"]


@pytest.mark.slow  # a real process in another folder
def test_the_remote_client_answers_spends_and_is_refused_from_another_folder(server, tmp_path):
    url, key = server["url"], server["key"]
    p = _remote(
        tmp_path, url, key, "query", "--dataset", "clinic", "--count", "has_rare_disease=true", "--epsilon", "0.3"
    )
    assert p.returncode == 0, p.stderr
    a = json.loads(p.stdout)
    assert a["epsilon_spent"] == pytest.approx(0.3) and a["remaining"] == pytest.approx(0.2) and not a["reused"]
    assert _spent(server) == pytest.approx(0.3)  # charged on the server's ledger
    p = _remote(tmp_path, url, key, "query", "--dataset", "clinic", "--count", "age>50", "--epsilon", "0.3")
    assert p.returncode == 3 and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert _spent(server) == pytest.approx(0.3)  # refused: nothing spent
    p = _remote(tmp_path, url, "dpx_not-the-key", "datasets")
    assert p.returncode == 2 and "name or key is wrong" in p.stderr


@pytest.mark.slow
def test_the_notebook_client_repeats_for_free_and_fetches_a_statement_that_verifies(server):
    c = Client(server["url"], "ann", server["key"])
    assert server["key"] not in repr(c)
    assert [d["name"] for d in c.datasets()] == ["clinic"]
    first = c.count("clinic", "sex=F", 0.1)
    again = c.count("clinic", "sex=F", 0.1)
    assert again["reused"] and again["answer"] == first["answer"] and again["spent"] == first["spent"]
    st = c.statement("clinic")
    pub = c.public_key()
    out = verification.verify(st, public_key=keys.load_public(pub["public_key"]), home=False)
    assert out["verified"], out["problems"]
    with pytest.raises(RemoteError) as err:
        c.mean("clinic", "age", "0:120", 5.0)
    assert err.value.exit_code == 3 and err.value.status == 409
    with pytest.raises(RemoteError, match="name or key is wrong"):
        Client(server["url"], "ann", "dpx_wrong").datasets()


def test_the_client_refuses_to_send_a_key_in_clear_text_or_in_a_url():
    from dpcore.errors import DPError

    with pytest.raises(DPError, match="clear text"):
        Client("http://example.org:8502", "ann", "dpx_k")
    with pytest.raises(DPError, match="no user, password, query"):
        Client("http://127.0.0.1:8502/?key=dpx_k", "ann", "dpx_k")
    assert Client("https://dp.example.org/", "ann", "k").url == "https://dp.example.org"
    with pytest.raises(RemoteError, match="could not reach the API"):
        Client(f"http://127.0.0.1:{_free_port()}", "ann", "dpx_k").datasets()
