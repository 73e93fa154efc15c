"""Checking an evidence bundle offline, and signing its manifest: stdlib and ``cryptography`` only.

A bundle's ``manifest.json`` lists each file's sha256 and size: a checksum list, which shows a
file changed after the manifest was written, but not who wrote the manifest. A gateway with a site
evidence key (the setting ``evidence_signing_key``: an Ed25519 private key, PEM, made by
``gw admin evidence-key generate``) adds ``manifest.sig``: an Ed25519 signature over the exact
bytes of ``manifest.json``, with the id of the key (sha256 of its raw public key). Checked with the
site's public key, the signature shows the manifest (and through it every file it lists) is the
one that gateway wrote. Without a key the bundle is unsigned, and the verifier says so.

This module imports nothing of the gateway, so it also runs on its own, copied anywhere with
``cryptography`` installed (docs/evidence-schema.md#signatures)::

    python3 signing.py BUNDLE [--public-key site-evidence.pub]

``BUNDLE`` is a directory or a ``.zip``; exit 0 when it verifies, 1 when not, 2 for bad usage.
``gw evidence verify BUNDLE --public-key KEY`` is the same check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the manifest checks run without cryptography
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "gateway.evidence.manifest"
SIGNATURE = "manifest.sig"
SIGNATURE_SCHEMA = "gateway.evidence.signature"
ALGORITHM = "ed25519"
MAX_BUNDLE_BYTES = 512 * 1024 * 1024


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- keys and signing (the gateway's side) ---------------------------------------------------------


def generate_key() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair: (private key PEM, PKCS#8 unencrypted; public key PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return private, public_pem(private)


def public_pem(private_pem: bytes) -> bytes:
    """The public key PEM of an Ed25519 private key PEM; ValueError when it is not one."""
    from cryptography.hazmat.primitives import serialization

    key = _private_key(private_pem)
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _private_key(pem: bytes) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not an unencrypted PEM private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"a {type(key).__name__}, not an Ed25519 private key")
    return key


def _public_key(pem: bytes) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a PEM public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"a {type(key).__name__}, not an Ed25519 public key")
    return key


def key_id(public_key_pem: bytes) -> str:
    """The key's id: ``ed25519:`` and the sha256 of its 32 raw public bytes (hex)."""
    from cryptography.hazmat.primitives import serialization

    raw = _public_key(public_key_pem).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{ALGORITHM}:{_sha256(raw)}"


def signer(private_pem: bytes) -> Callable[[bytes], bytes]:
    """A function from ``manifest.json``'s bytes to ``manifest.sig``'s, signing with this key;
    ValueError now when the PEM is not an unencrypted Ed25519 private key."""
    key = _private_key(private_pem)
    kid = key_id(public_pem(private_pem))

    def sign(manifest: bytes) -> bytes:
        body = {
            "schema": SIGNATURE_SCHEMA,
            "algorithm": ALGORITHM,
            "key_id": kid,
            "signed_file": MANIFEST,
            "signed_sha256": _sha256(manifest),
            "signature": base64.b64encode(key.sign(manifest)).decode("ascii"),
        }
        return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()

    return sign


# -- verification (anyone's side) ----------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A bundle checked: ``ok`` when every file matches the manifest, none is extra, and the signature
    (when a public key was given) verifies. ``signature``: "valid", "invalid", "unsigned" (no
    manifest.sig) or "unchecked" (signed, but no public key was given); ``key_id`` from manifest.sig."""

    problems: tuple[str, ...]
    checked: int
    signature: str = "unchecked"
    key_id: str | None = None

    @property
    def ok(self) -> bool:
        """No problems."""
        return not self.problems


def verify_files(files: Mapping[str, bytes], public_key_pem: bytes | None = None) -> Verdict:
    """Check a bundle's ``files`` (name -> content) against ``manifest.json``, and ``manifest.sig``
    against ``public_key_pem`` when given (a bundle without one then fails: it is unsigned)."""
    if MANIFEST not in files:
        return Verdict((f"no {MANIFEST}: not an evidence bundle",), 0, "unsigned")
    signature, kid, sig_problems = _signature(files, public_key_pem)
    try:
        manifest = json.loads(files[MANIFEST])
        listed = manifest["files"]
        if manifest.get("schema") != MANIFEST_SCHEMA or not isinstance(listed, dict):
            raise ValueError("not a manifest")
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"{MANIFEST} cannot be read ({exc.__class__.__name__}): it was changed or is not one"
        return Verdict((*sig_problems, problem), 0, signature, kid)
    problems = list(sig_problems)
    for name, entry in sorted(listed.items()):
        if name not in files:
            problems.append(f"{name}: listed in the manifest, missing from the bundle")
            continue
        digest = _sha256(files[name])
        if not isinstance(entry, dict) or digest != entry.get("sha256"):
            expected = entry.get("sha256") if isinstance(entry, dict) else entry
            problems.append(f"{name}: sha256 {digest}, the manifest says {expected} (the file was changed)")
    for name in sorted(set(files) - set(listed) - {MANIFEST, SIGNATURE}):
        problems.append(f"{name}: in the bundle, not in the manifest")
    return Verdict(tuple(problems), len(listed), signature, kid)


def _signature(files: Mapping[str, bytes], public_key_pem: bytes | None) -> tuple[str, str | None, list[str]]:
    """(state, key id, problems) of the bundle's manifest.sig."""
    if SIGNATURE not in files:
        if public_key_pem is None:
            return "unsigned", None, []
        return "unsigned", None, [f"{SIGNATURE}: missing: the bundle is unsigned, so no key can vouch for it"]
    try:
        body = json.loads(files[SIGNATURE])
        if body.get("schema") != SIGNATURE_SCHEMA or body.get("algorithm") != ALGORITHM:
            raise ValueError(f"not a {SIGNATURE_SCHEMA} of algorithm {ALGORITHM}")
        kid = str(body["key_id"])
        raw = base64.b64decode(body["signature"], validate=True)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return "invalid", None, [f"{SIGNATURE} cannot be read ({exc}): it was changed or is not one"]
    if public_key_pem is None:
        return "unchecked", kid, []
    from cryptography.exceptions import InvalidSignature

    try:
        key = _public_key(public_key_pem)
        expected = key_id(public_key_pem)
    except ValueError as exc:
        return "invalid", kid, [f"the public key given: {exc}"]
    if kid != expected:
        return "invalid", kid, [f"{SIGNATURE}: signed by key {kid}, not by the key given ({expected})"]
    try:
        key.verify(raw, files[MANIFEST])
    except InvalidSignature:
        # which file changed: manifest.sig records the sha256 of the manifest it signed
        if body.get("signed_sha256") == _sha256(files[MANIFEST]):
            problem = f"{SIGNATURE}: its signature does not verify (the signature file was changed)"
        else:
            problem = f"{MANIFEST}: the signature in {SIGNATURE} does not match it (it was changed)"
        return "invalid", kid, [problem]
    return "valid", kid, []


def read_bundle(path: Path, *, max_bytes: int = MAX_BUNDLE_BYTES) -> dict[str, bytes]:
    """A bundle's files from a directory or a zip; ValueError for a damaged or hostile archive,
    OSError when it cannot be read."""
    if path.is_dir():
        return {
            p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
        }
    if path.stat().st_size > max_bytes:
        raise ValueError(f"{path} is larger than {max_bytes} bytes: not a bundle")
    return unzip_bytes(path.read_bytes(), max_bytes=max_bytes)


def unzip_bytes(data: bytes, *, max_bytes: int = MAX_BUNDLE_BYTES) -> dict[str, bytes]:
    """A zipped bundle's files (name -> content); ValueError for a damaged archive, a member path that
    is absolute or climbs out, or more than ``max_bytes`` unpacked."""
    import io
    import zipfile
    import zlib

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            files, total = {}, 0
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if info.filename.startswith("/") or ".." in info.filename.split("/"):
                    raise ValueError(f"member {info.filename!r} is not a plain relative path")
                total += info.file_size
                if total > max_bytes:
                    raise ValueError(f"the archive unpacks to more than {max_bytes} bytes")
                files[info.filename] = archive.read(info)
            return files
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError) as exc:
        raise ValueError(f"not a readable zip archive ({exc})") from exc


def report(verdict: Verdict) -> list[tuple[bool, str]]:
    """The verdict as lines, each (is a problem, text): what ``gw evidence verify`` and ``main`` print."""
    lines = [(True, f"FAILED: {p}") for p in verdict.problems]
    if verdict.ok:
        lines.append((False, f"OK: {verdict.checked} files match {MANIFEST}"))
    unsigned = f"signature: none, the bundle is unsigned ({MANIFEST} is a checksum list, not a signature)"
    words = {
        "valid": f"signature: valid, {MANIFEST} signed by key {verdict.key_id}",
        "invalid": f"signature: INVALID (key {verdict.key_id or 'unknown'})",
        "unsigned": unsigned,
        "unchecked": f"signature: present (key {verdict.key_id}) but not checked: pass --public-key",
    }
    lines.append((verdict.signature == "invalid", words[verdict.signature]))
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python3 signing.py BUNDLE [--public-key PEM]``: print the verdict; 0 verified, 1 not, 2 usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    key: bytes | None = None
    if "--public-key" in args:
        at = args.index("--public-key")
        if at + 1 >= len(args):
            print("usage: signing.py BUNDLE [--public-key PEM]", file=sys.stderr)
            return 2
        try:
            key = Path(args[at + 1]).read_bytes()
        except OSError as exc:
            print(f"cannot read the public key {args[at + 1]}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        del args[at : at + 2]
    if len(args) != 1:
        print("usage: signing.py BUNDLE [--public-key PEM]", file=sys.stderr)
        return 2
    try:
        files = read_bundle(Path(args[0]))
    except (ValueError, OSError) as exc:
        print(f"FAILED: {args[0]}: {exc}", file=sys.stderr)
        return 1
    verdict = verify_files(files, key)
    for bad, line in report(verdict):
        print(line, file=sys.stderr if bad else sys.stdout)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
