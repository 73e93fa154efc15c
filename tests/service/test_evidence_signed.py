"""A signed evidence bundle end to end (docs/evidence-schema.md#signatures; issue 26): a gateway with
the site evidence key signs each bundle it exports; `gw evidence verify BUNDLE --public-key KEY`
checks it with no server (a changed byte fails, naming the file); without a key bundles are
unsigned and the verifier says so. Real cluster, both database backends."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.adapters.evidence_key import load_signer
from gateway.api import create_app
from gateway.core.evidence.bundle import SIGNATURE
from tests.service.conftest import PROJECT, refresh_until, unique_tag

GW = [sys.executable, "-m", "gateway.cli.main"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def api(services):
    with TestClient(create_app(services=services)) as client:
        yield client


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """A key made by `gw admin evidence-key generate`: (private key path, public key path)."""
    path = tmp_path_factory.mktemp("evidence-key") / "site-evidence.key"
    done = subprocess.run(
        [*GW, "admin", "evidence-key", "generate", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "key id ed25519:" in done.stdout and f"GATEWAY_EVIDENCE_SIGNING_KEY={path}" in done.stdout
    return path, path.with_name(path.name + ".pub")


@pytest.fixture(scope="module")
def finished_run(api, services, tokens):
    spec = {
        "name": "signed",
        "project": PROJECT,
        "queue": "cpu",
        "command": "echo signed",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1},
    }
    made = api.post("/runs", json=spec, headers={"Authorization": f"Bearer {tokens['tester']}"})
    assert made.status_code == 201, made.text
    return refresh_until(services, made.json()["id"])


def _export(api, tokens, run_id, directory: Path, redact: str = "false") -> Path:
    response = api.get(
        f"/evidence/runs/{run_id}",
        params={"redact": redact},
        headers={"Authorization": f"Bearer {tokens['tester']}"},
    )
    assert response.status_code == 200, response.text
    directory.mkdir(parents=True)
    with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
        bundle.extractall(directory)
    (directory.parent / f"{directory.name}.zip").write_bytes(response.content)
    return directory


def _verify(*args: str) -> subprocess.CompletedProcess:
    # no server, no token: the verifier reads only the bundle and the key
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "GW_URL": "http://127.0.0.1:9",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run([*GW, "evidence", "verify", *args], capture_output=True, text=True, env=env)


def test_a_signed_bundle_verifies_offline_and_a_changed_byte_fails(
    api, services, tokens, key, finished_run, tmp_path
):
    private, public = key
    before = services.evidence.signer
    services.evidence.signer = load_signer(private)  # as gw serve with GATEWAY_EVIDENCE_SIGNING_KEY
    try:
        plain = _export(api, tokens, finished_run.id, tmp_path / "plain")
        redacted = _export(api, tokens, finished_run.id, tmp_path / "redacted", redact="true")
    finally:
        services.evidence.signer = before
    for bundle in (plain, redacted, tmp_path / "plain.zip"):
        assert (plain / SIGNATURE).exists()
        done = _verify(str(bundle), "--public-key", str(public))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "OK: 2 files match manifest.json" in done.stdout and "signature: valid" in done.stdout
    for name in ("evidence.json", "index.html", "manifest.json"):
        copy = tmp_path / f"tampered-{name}"
        subprocess.run(["cp", "-r", str(plain), str(copy)], check=True)
        data = bytearray((copy / name).read_bytes())
        data[len(data) // 2] ^= 0x01  # one byte
        (copy / name).write_bytes(bytes(data))
        done = _verify(str(copy), "--public-key", str(public))
        assert done.returncode == 1, done.stdout
        assert f"FAILED: {name}" in done.stderr, done.stderr


def test_without_a_key_bundles_are_unsigned_and_the_verifier_says_so(
    api, tokens, key, finished_run, tmp_path
):
    _, public = key
    bundle = _export(api, tokens, finished_run.id, tmp_path / "unsigned")
    assert not (bundle / SIGNATURE).exists()
    done = _verify(str(bundle))
    assert done.returncode == 0 and "the bundle is unsigned" in done.stdout, done
    done = _verify(str(bundle), "--public-key", str(public))
    assert done.returncode == 1 and f"FAILED: {SIGNATURE}: missing" in done.stderr, done
