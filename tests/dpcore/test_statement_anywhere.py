"""Statements anyone can verify and nobody else can sign (issue 33 §4): a release's statement checks out on a machine
without the home, with only the statement (or the release zip) and the owner's public key; an edited statement, a
swapped model file and a statement signed by another key each fail."""

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dpcore.cli import main
from dpcore.jobs import registry, runner, store
from dpcore.jobs.owners import CLI, CLI_OWNER
from dpcore.statements import keys, release, signing
from dpcore.statements import verify as verification


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """One small DP run and what its page hands out: the release zip (statement, weights, README) and the owner's
    published public key; plus other weights to swap in (the model with every weight zeroed: a stand-in for the
    non-private twin's file)."""
    import torch

    home = tmp_path_factory.mktemp("owner-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DP_EXPLORER_HOME", str(home))
        params = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 1.0, "delta": 1e-5, "epochs": 1}
        runner.run_inline(registry.TRAIN, {**params, "batch_size": 64, "seed": 0}, owner=CLI_OWNER, group="train")
        job = store.list_jobs(caller=CLI, limit=1)[0]
        zipped = release.release_zip(job["id"], caller=CLI)
        owner = keys.published(create=False)
    weights = torch.load(io.BytesIO(_unzipped(zipped)["model.pt"]), weights_only=True)
    buf = io.BytesIO()
    torch.save({k: torch.zeros_like(v) for k, v in weights.items()}, buf)
    return {"zip": zipped, "twin": buf.getvalue(), "owner": owner, "home": home}


def _unzipped(data: bytes) -> dict:
    zf = zipfile.ZipFile(io.BytesIO(data))
    return {n: zf.read(n) for n in zf.namelist()}


def _zip(files: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, b in files.items():
            zf.writestr(n, b)
    return buf.getvalue()


def _verify_here(capsys, dp_home, *args):
    """``statement --verify ARGS`` in this process, whose home (the test's own) is empty: nothing is made in it."""
    code = main(["statement", "--verify", *map(str, args)])
    assert not dp_home.exists()
    out = capsys.readouterr()
    return code, out.out, out.err


def _verify_elsewhere(tmp_path, *args):
    """``python -m dpcore statement --verify ARGS`` in a fresh process, from another folder, with an empty home."""
    home = tmp_path / "empty-home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DP_EXPLORER")}
    env["DP_EXPLORER_HOME"] = str(home)
    p = subprocess.run(
        [sys.executable, "-m", "dpcore", "statement", "--verify", *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert list(home.iterdir()) == []  # verifying read and wrote nothing in a home
    return p


def test_the_release_statement_covers_every_file_it_ships_with(released):
    files = _unzipped(released["zip"])
    st = json.loads(files["statement.json"])
    covered = {f["name"]: f["sha256"] for f in st["files"]}
    assert set(covered) == {"model.pt", "README.txt"}
    import hashlib

    assert all(covered[n] == hashlib.sha256(files[n]).hexdigest() for n in covered)
    assert st["signature"]["scheme"] == "Ed25519"
    assert st["signature"]["public_key"] == released["owner"]["public_key"]
    assert st["signature"]["key_fingerprint"] == released["owner"]["fingerprint"]


@pytest.mark.slow  # a real process in another folder
def test_a_release_verifies_on_a_machine_without_the_home_with_only_the_public_key(released, tmp_path, capsys, dp_home):
    pem = tmp_path / "owner.pem"
    pem.write_text(released["owner"]["public_key"])
    (tmp_path / "statement.json").write_bytes(_unzipped(released["zip"])["statement.json"])
    p = _verify_elsewhere(tmp_path, "statement.json", "--public-key", pem)  # a fresh process, an empty home
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["verified"] and out["kind"] == "training_run" and out["checked"] > 10
    assert out["signature"]["key_source"] == "given" and out["files"]["given"] == "a statement file"
    assert out["signature"]["key_fingerprint"] == released["owner"]["fingerprint"]
    (tmp_path / "release.zip").write_bytes(released["zip"])
    code, text, err = _verify_here(capsys, dp_home, tmp_path / "release.zip", "--public-key", pem)
    assert code == 0, err
    assert sorted(json.loads(text)["files"]["checked"]) == ["README.txt", "model.pt"]
    # no key given: the embedded key is checked, and the output says which and what that proves
    code, text, err = _verify_here(capsys, dp_home, tmp_path / "release.zip")
    assert code == 0, err
    note = json.loads(text)["key"]
    assert f"fingerprint {released['owner']['fingerprint']}" in note
    assert "proves who signed only when this fingerprint is the data owner's published one" in note


def test_an_edited_statement_fails_anywhere(released, tmp_path, capsys, dp_home):
    pem = tmp_path / "owner.pem"
    pem.write_text(released["owner"]["public_key"])
    st = json.loads(_unzipped(released["zip"])["statement.json"])
    st["accountant"]["epsilon"] = st["accountant"]["epsilon"] / 10
    (tmp_path / "edited.json").write_text(json.dumps(st))
    code, _, err = _verify_here(capsys, dp_home, tmp_path / "edited.json", "--public-key", pem)
    assert code == 2 and err.startswith("error: the statement does not check out: accountant.epsilon is"), err
    out = verification.verify_path(str(tmp_path / "edited.json"), public_key_file=str(pem))
    assert "signature: accountant.epsilon was changed after signing" in out["problems"]


def test_a_swapped_model_file_fails(released, tmp_path, capsys, dp_home):
    files = _unzipped(released["zip"])
    swapped = {**files, "model.pt": released["twin"]}
    assert swapped["model.pt"] != files["model.pt"]
    (tmp_path / "swapped.zip").write_bytes(_zip(swapped))
    code, _, err = _verify_here(capsys, dp_home, tmp_path / "swapped.zip")
    assert code == 2
    assert "model.pt is not the file the statement covers" in err and "swapped or changed" in err
    # the same in a folder, and a file added beside the release
    folder = tmp_path / "release"
    folder.mkdir()
    for n, b in files.items():
        (folder / n).write_bytes(b)
    assert main(["statement", "--verify", str(folder)]) == 0
    (folder / "model.pt").write_bytes(released["twin"])
    assert main(["statement", "--verify", str(folder)]) == 2
    (folder / "model.pt").write_bytes(files["model.pt"])
    (folder / "extra.pt").write_bytes(released["twin"])
    out = verification.verify_path(str(folder))
    assert not out["verified"] and any("extra.pt is in" in p and "does not cover it" in p for p in out["problems"])
    # beside a lone statement file, the covered files found next to it by name are checked
    (folder / "extra.pt").unlink()
    (folder / "model.pt").write_bytes(released["twin"])
    out = verification.verify_path(str(folder / "statement.json"))
    assert not out["verified"] and any("model.pt is not the file" in p for p in out["problems"])


def test_a_statement_signed_by_another_key_fails(released, tmp_path, capsys, dp_home):
    st = json.loads(_unzipped(released["zip"])["statement.json"])
    forged = signing.sign({**st, "accountant": {**st["accountant"]}}, Ed25519PrivateKey.generate())
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    pem = tmp_path / "owner.pem"
    pem.write_text(released["owner"]["public_key"])
    code, _, err = _verify_here(capsys, dp_home, tmp_path / "forged.json", "--public-key", pem)
    assert code == 2 and "not by the key given" in err and released["owner"]["fingerprint"] in err
    # the forger's own key checks out, and the output names its fingerprint, not the owner's
    code, out, _ = _verify_here(capsys, dp_home, tmp_path / "forged.json")
    assert code == 0 and released["owner"]["fingerprint"] not in json.loads(out)["key"]


def test_admin_public_key_prints_the_published_key(capsys, dp_home):
    assert main(["admin", "public-key"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "Ed25519" and out["public_key"].startswith("-----BEGIN PUBLIC KEY-----")
    assert out["fingerprint"] == keys.fingerprint(keys.load_public(out["public_key"]))
    assert oct(keys.private_key_path().stat().st_mode & 0o777) == "0o600"
    assert "PRIVATE" not in json.dumps(out)


def test_empty_or_unreadable_key_options_are_one_line(tmp_path, capsys):
    st = tmp_path / "st.json"
    st.write_text(json.dumps(signing.sign({"kind": "advice"})))
    for args, words in (
        (["--public-key", ""], "--public-key needs a file path"),
        (["--key", ""], "--key needs a file path"),
        (["--public-key", str(st)], "is not an Ed25519 public key in PEM"),
    ):
        assert main(["statement", "--verify", str(st), *args]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
