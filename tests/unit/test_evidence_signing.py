"""Signed evidence bundles (issue 26; docs/evidence-schema.md#signatures): the site key signs
manifest.json into manifest.sig, and the offline verifier (stdlib and cryptography only) checks it.
A changed byte anywhere fails, naming the file; an unsigned bundle says so."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.adapters.evidence_key import load_signer, write_key_pair
from gateway.core.evidence import signing
from gateway.core.evidence.bundle import MANIFEST, SIGNATURE, manifest_bytes, zip_bytes
from gateway.errors import SpecError

SIGNING_SOURCE = Path(signing.__file__)


def _bundle(sign=None) -> dict[str, bytes]:
    files = {"evidence.json": b'{"subject": "r-1"}\n', "index.html": b"<html>r-1</html>\n"}
    files[MANIFEST] = manifest_bytes(files, subject="r-1", generated_at="2026-01-01T00:00:00+00:00")
    if sign is not None:
        files[SIGNATURE] = sign(files[MANIFEST])
    return files


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """A key pair written the way gw admin evidence-key generate writes it: (private path, public PEM)."""
    path = tmp_path_factory.mktemp("key") / "evidence.key"
    public, key_id = write_key_pair(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert key_id == signing.key_id(public.read_bytes()) and key_id.startswith("ed25519:")
    return path, public.read_bytes()


def test_a_signed_bundle_verifies_with_the_sites_public_key(keys):
    path, public = keys
    files = _bundle(load_signer(path))
    verdict = signing.verify_files(files, public)
    assert verdict.ok and verdict.signature == "valid" and verdict.checked == 2, verdict
    body = json.loads(files[SIGNATURE])
    assert body["key_id"] == signing.key_id(public) and body["signed_file"] == MANIFEST
    # without a key: the checksums hold, the signature is reported unchecked
    verdict = signing.verify_files(files)
    assert verdict.ok and verdict.signature == "unchecked"
    assert any("not checked: pass --public-key" in line for _, line in signing.report(verdict))


@pytest.mark.parametrize("name", ["evidence.json", "index.html", MANIFEST, SIGNATURE])
def test_a_changed_byte_fails_naming_the_file(keys, name):
    path, public = keys
    files = _bundle(load_signer(path))
    data = bytearray(files[name])
    at = data.index(b"r-1") if b"r-1" in data else len(data) // 2
    data[at] ^= 0x01
    files[name] = bytes(data)
    verdict = signing.verify_files(files, public)
    assert not verdict.ok, verdict
    assert any(p.startswith(name) for p in verdict.problems), verdict.problems


def test_a_file_changed_with_its_manifest_rewritten_fails_the_signature(keys):
    path, public = keys
    files = _bundle(load_signer(path))
    files["evidence.json"] = b'{"subject": "r-2"}\n'
    listed = {k: v for k, v in files.items() if k in ("evidence.json", "index.html")}
    files[MANIFEST] = manifest_bytes(listed, subject="r-1", generated_at="2026-01-01T00:00:00+00:00")
    assert signing.verify_files(files).ok  # a checksum list alone cannot tell
    verdict = signing.verify_files(files, public)
    assert verdict.signature == "invalid"
    assert verdict.problems == (
        f"{MANIFEST}: the signature in {SIGNATURE} does not match it (it was changed)",
    )


def test_another_key_and_an_unsigned_bundle_fail_with_a_key(keys, tmp_path):
    path, public = keys
    other, _ = write_key_pair(tmp_path / "other.key")
    verdict = signing.verify_files(_bundle(load_signer(path)), other.read_bytes())
    assert not verdict.ok and "not by the key given" in verdict.problems[0]
    unsigned = _bundle()
    verdict = signing.verify_files(unsigned)
    assert verdict.ok and verdict.signature == "unsigned"
    assert any("the bundle is unsigned" in line for _, line in signing.report(verdict))
    verdict = signing.verify_files(unsigned, public)
    assert not verdict.ok and verdict.problems[0].startswith(f"{SIGNATURE}: missing")


def test_a_bad_key_setting_is_a_clear_error(tmp_path):
    assert load_signer(None) is None
    for content, mode, words in (
        (b"not a key", 0o600, "holds no usable key"),
        (b"", 0o644, "readable by everyone"),
    ):
        path = tmp_path / f"k{mode:o}"
        path.write_bytes(content)
        os.chmod(path, mode)
        with pytest.raises(SpecError) as caught:
            load_signer(path)
        assert caught.value.issues[0].path == "evidence_signing_key" and words in str(caught.value)
    with pytest.raises(SpecError, match="cannot be read"):
        load_signer(tmp_path / "missing")
    with pytest.raises(FileExistsError):
        write_key_pair(tmp_path / "k600")


def test_the_verifier_imports_nothing_but_the_standard_library_and_cryptography():
    tree = ast.parse(SIGNING_SOURCE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add((node.module or "").split(".")[0])
    outside = {m for m in imported if m not in sys.stdlib_module_names and m != "__future__"}
    assert outside == {"cryptography"}, outside


def test_the_verifier_runs_on_its_own_copied_out(keys, tmp_path):
    path, public = keys
    lonely = tmp_path / "alone"
    lonely.mkdir()
    shutil.copy(SIGNING_SOURCE, lonely / "verify_bundle.py")
    (lonely / "bundle.zip").write_bytes(zip_bytes(_bundle(load_signer(path))))
    (lonely / "site.pub").write_bytes(public)
    # -I: no PYTHONPATH, no current or script directory on the path; the imports are checked above
    run = [sys.executable, "-I", str(lonely / "verify_bundle.py"), str(lonely / "bundle.zip")]
    done = subprocess.run(
        [*run, "--public-key", str(lonely / "site.pub")], capture_output=True, text=True, cwd=lonely
    )
    assert done.returncode == 0, done.stderr
    assert "OK: 2 files match manifest.json" in done.stdout and "signature: valid" in done.stdout
    bad = _bundle(load_signer(path))
    bad["index.html"] = b"<html>r-2</html>\n"
    (lonely / "bundle.zip").write_bytes(zip_bytes(bad))
    done = subprocess.run(
        [*run, "--public-key", str(lonely / "site.pub")], capture_output=True, text=True, cwd=lonely
    )
    assert done.returncode == 1 and "FAILED: index.html: sha256" in done.stderr, done


def test_gw_serve_refuses_a_bad_signing_key_before_serving(tmp_path):
    key = tmp_path / "evidence.key"
    key.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot one\n-----END PRIVATE KEY-----\n")
    os.chmod(key, 0o600)
    env = {
        **os.environ,
        "GATEWAY_EVIDENCE_SIGNING_KEY": str(key),
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db",
        "GATEWAY_RUNS_DIR": str(tmp_path / "runs"),
        "COLUMNS": "200",
    }
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "evidence_signing_key (GATEWAY_EVIDENCE_SIGNING_KEY)" in result.stderr
    assert "holds no usable key" in result.stderr, result.stderr
