"""Evidence bundles, pure parts: the versioned schema's name, redaction, the sha256 manifest, verification.

A bundle is a few files (``evidence.json``, ``index.html``) and
``manifest.json``, which lists each file's sha256 and size. ``redact``
replaces people (gateway users and OS users), hosts, absolute path prefixes,
environment values and tokens with stable pseudonyms (the same value gets
the same pseudonym throughout one bundle) and returns what it replaced, by
kind and count, never the values themselves. ``verify_files`` (in
``gateway.core.evidence.signing``, the offline verifier) checks a bundle's files against its
manifest and its signature, ``manifest.sig``, when it has one. The schema is documented in
docs/evidence-schema.md; ``SCHEMA_VERSION`` rises on any change that is not
an addition.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# the checks live with the offline verifier; imported here by the bundle's other users too
from gateway.core.evidence.signing import (  # noqa: F401
    MANIFEST,
    MANIFEST_SCHEMA,
    SIGNATURE,
    Verdict,
    unzip_bytes,
    verify_files,
)
from gateway.core.spec.fields import secret_like

SCHEMA = "gateway.evidence"
SCHEMA_VERSION = 1

# Keys whose values name a person (a gateway user or an OS user), anywhere in the document.
PERSON_KEYS = frozenset(
    {
        "actor", "submitter", "created_by", "registered_by", "decided_by", "reviewer", "requested_by",
        "decider", "updated_by", "submitted_by", "user", "os_user", "generated_by", "approvals", "approvers",
        "rejected_by",
    }
)  # fmt: skip
HOST_KEYS = frozenset({"node_list", "host", "hostname", "source", "submit_host", "nodes"})
ENV_KEYS = frozenset({"env", "environment_variables"})
# The gateway's own words in a document, by path: no value of the document is in them, so redaction
# leaves them as written (issue 26: "check the chain with `gw admin audit verify`" became
# "gw <user-1> audit verify" where a user is called admin).
PROSE_PATHS = (("audit", "note"),)
TOKEN = re.compile(r"\bgwt_[A-Za-z0-9_-]{8,}")
BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")
# An absolute path: its directory is replaced and its file name kept; a one-part path (/root) is replaced.
ABS_PATH = re.compile(r"(?<![A-Za-z0-9_.~:<>-])(/[A-Za-z0-9._@+-]+(?:/[A-Za-z0-9._@+%-]+)*)")


@dataclass
class Redactor:
    """Stable pseudonyms for one bundle: ``user-1``, ``host-1``, ``<path-1>`` ..., by first appearance."""

    people: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    env_values: set[str] = field(default_factory=set)
    names: dict[tuple[str, str], str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def pseudonym(self, kind: str, value: str) -> str:
        """The pseudonym of ``value`` of ``kind`` (user, host, path, env); the same one each time."""
        key = (kind, value)
        if key not in self.names:
            number = sum(1 for k in self.names if k[0] == kind) + 1
            self.names[key] = f"<{kind}-{number}>"
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return self.names[key]

    def collect(self, doc: Any, parent: str = "") -> None:
        """Find the people, hosts and environment values ``doc`` names (by the keys that hold them)."""
        if isinstance(doc, Mapping):
            for key, value in doc.items():
                if key in ENV_KEYS and isinstance(value, Mapping):
                    self.env_values.update(str(v) for v in value.values() if str(v))
                if key == "params" and isinstance(value, Mapping):
                    # a run stored before secret-looking params were refused: hide those values too
                    self.env_values.update(
                        str(v)
                        for k, v in value.items()
                        if secret_like(str(k)) and isinstance(v, str | int) and str(v)
                    )
                self.collect(value, str(key))
        elif isinstance(doc, list | tuple):
            for item in doc:
                self.collect(item, parent)
        elif isinstance(doc, str) and doc:
            if parent in PERSON_KEYS:
                self.people.add(doc)
            elif parent in HOST_KEYS:
                self.hosts.add(doc)

    def text(self, value: str, key: str = "") -> str:
        """``value`` (held under ``key``) with tokens, environment values, path prefixes, people and
        hosts replaced: a field that holds a person or a host (``PERSON_KEYS``, ``HOST_KEYS``) as one
        whole value, other text word by word (a script, a log line naming its user). The gateway's own
        prose (``PROSE_PATHS``) is never passed here."""
        if key in PERSON_KEYS and value in self.people:
            return self.pseudonym("user", value)
        if key in HOST_KEYS and value in self.hosts:
            return self.pseudonym("host", value)
        value = TOKEN.sub(lambda m: self.pseudonym("token", m.group(0)), value)
        value = BEARER.sub(lambda m: "Bearer " + self.pseudonym("token", m.group(0)), value)
        for secret in sorted(self.env_values, key=len, reverse=True):
            if len(secret) >= 3 and secret in value:
                value = value.replace(secret, self.pseudonym("env", secret))
        value = ABS_PATH.sub(self._path, value)
        for kind, words in (("user", self.people), ("host", self.hosts)):
            for word in sorted(words, key=len, reverse=True):
                if word in value:
                    pattern = rf"(?<![A-Za-z0-9_.-]){re.escape(word)}(?![A-Za-z0-9_-])"
                    value = re.sub(pattern, functools.partial(self._named, kind, word), value)
        return value

    def _named(self, kind: str, word: str, _match: re.Match[str]) -> str:
        return self.pseudonym(kind, word)

    def _path(self, match: re.Match[str]) -> str:
        path = match.group(1)
        directory, _, name = path.rpartition("/")
        if not directory:
            return self.pseudonym("path", path)
        return f"{self.pseudonym('path', directory)}/{name}"

    def walk(self, doc: Any, key: str = "") -> Any:
        """A copy of ``doc`` with every string (and key naming an environment variable's value) redacted."""
        if isinstance(doc, Mapping):
            return {str(k): self.walk(v, str(k)) for k, v in doc.items()}
        if isinstance(doc, list | tuple):
            return [self.walk(v, key) for v in doc]
        if isinstance(doc, str):
            return self.text(doc, key)
        return doc


def redact(doc: dict[str, Any], *, people: Iterable[str] = (), hosts: Iterable[str] = ()) -> dict[str, Any]:
    """``doc`` with people, hosts, path prefixes, environment values and tokens pseudonymised, and a
    ``redaction`` section saying what kinds were replaced and how often (not the values).

    ``people`` and ``hosts``: more names to hide than the document's own fields show (the site's users
    and OS users, the gateway's host names)."""
    redactor = Redactor()
    redactor.collect(doc)
    redactor.people.update(p for p in people if p)
    redactor.hosts.update(h for h in hosts if h)
    out = redactor.walk({k: v for k, v in doc.items() if k not in ("redaction", "schema")})
    for path in PROSE_PATHS:  # the gateway's own words, as written
        source, target = doc, out
        for part in path[:-1]:
            source, target = source.get(part) or {}, target.get(part) or {}
        if isinstance(source, Mapping) and path[-1] in source and isinstance(target, dict):
            target[path[-1]] = source[path[-1]]
    if "schema" in doc:  # the format's name, never a person's: the operator is called "gateway"
        out["schema"] = doc["schema"]
    out["redaction"] = {
        "applied": True,
        "replaced": {kind: n for kind, n in sorted(redactor.counts.items())},
        "pseudonyms": {
            kind: len({v for (k, v) in redactor.names if k == kind}) for kind in sorted(redactor.counts)
        },
        "rules": [
            "user names and OS user names -> <user-N>",
            "host names and client addresses -> <host-N>",
            "the directory of every absolute path -> <path-N> (file names kept)",
            "environment variable values -> <env-N>",
            "API tokens -> <token-N>",
        ],
    }
    return out


# -- manifest ------------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    """sha256 of ``data``, as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(files: Mapping[str, bytes], *, subject: str, generated_at: str) -> bytes:
    """``manifest.json`` for ``files`` (name -> content): each file's sha256 and size, canonical JSON."""
    body = {
        "schema": MANIFEST_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "algorithm": "sha256",
        "subject": subject,
        "generated_at": generated_at,
        "files": {
            name: {"sha256": sha256_hex(data), "bytes": len(data)} for name, data in sorted(files.items())
        },
    }
    return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()


# -- packing -------------------------------------------------------------------------------------

ZIP_TIME = (2000, 1, 1, 0, 0, 0)  # every member's time: the same bundle packs to the same bytes


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    """The bundle as one zip archive (deflated; fixed member times, sorted names)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()
