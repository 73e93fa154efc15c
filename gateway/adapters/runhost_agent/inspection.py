"""What a run's environment is, read as the job's user: a venv's packages, an image archive's id."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from typing import Any

from ._common import HASH_BUFFER_BYTES, pseudo_root, reason


def python_env(venv: str) -> dict[str, Any]:
    """The packages installed in ``venv``, read from their metadata files (no process starts).

    Reads every ``*.dist-info`` and ``*.egg-info`` under ``venv/lib/python*/site-packages`` (and
    ``lib64/...`` when it is another directory): Name and Version from METADATA or PKG-INFO, else
    from the entry's name. Returns ``{"venv", "python": "3.11" or None, "packages": count,
    "packages_sha256": sha256 of the sorted lines "name==version\\n" (names normalised per PEP 503)}``
    or ``{"venv", "error"}``. Never raises.
    """
    try:
        return _python_env(venv)
    except OSError as exc:  # a venv that changes under us, a directory we may not list
        return {"venv": venv, "error": f"cannot read {venv}: {reason(exc)}"}


def _python_env(venv: str) -> dict[str, Any]:
    if not os.path.isdir(venv):
        return {"venv": venv, "error": f"{venv} is not a directory"}
    found: dict[str, str] = {}
    for lib in ("lib", "lib64"):
        for site in sorted(glob.glob(os.path.join(glob.escape(venv), lib, "python*", "site-packages"))):
            if os.path.isdir(site) and os.path.realpath(site) not in found:
                found[os.path.realpath(site)] = site
    if not found:
        return {"venv": venv, "error": f"no lib/python*/site-packages under {venv}: not a virtualenv?"}
    lines: set[str] = set()
    for site in found.values():
        for entry in os.scandir(site):
            if entry.name.endswith((".dist-info", ".egg-info")):
                name, version = _distribution(entry.path)
                if name:
                    lines.add(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version}\n")
    known = [v for v in (_python_version(os.path.basename(os.path.dirname(s))) for s in found.values()) if v]
    return {
        "venv": venv,
        "python": max(known, key=lambda v: tuple(int(p) for p in v.split("."))) if known else None,
        "packages": len(lines),
        "packages_sha256": hashlib.sha256("".join(sorted(lines)).encode()).hexdigest(),
    }


def _python_version(dirname: str) -> str | None:
    match = re.fullmatch(r"python(\d+\.\d+)t?", dirname)
    return match.group(1) if match else None


def _distribution(path: str) -> tuple[str, str]:
    """(name, version) of one dist-info/egg-info entry; from its metadata, else its name."""
    meta = os.path.join(path, "METADATA" if path.endswith(".dist-info") else "PKG-INFO")
    if path.endswith(".egg-info") and not os.path.isdir(path):
        meta = path  # an egg-info file is the PKG-INFO itself
    headers: dict[str, str] = {}
    try:
        with open(meta, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(200), fh, strict=False):  # headers come first; stop at the body
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "Version") and key not in headers:
                    headers[key] = value.strip()
    except OSError:
        pass
    stem = os.path.basename(path).rsplit(".", 1)[0]
    name_part, _, rest = stem.partition("-")
    return headers.get("Name") or name_part, headers.get("Version") or rest.partition("-")[0]


def image_archive(path: str) -> dict[str, Any]:
    """The image in a ``podman save`` / ``docker save`` archive (docker-archive format): its id
    (``sha256:`` of its config blob, hashed here, as the runtime computes it), repo tags and layer
    count, read from the tar's ``manifest.json``. ``{"path", "error"}`` when it is not one image's
    archive or cannot be read. Never raises.
    """
    import tarfile

    if pseudo_root(path) or not os.path.isfile(path):
        return {"path": path, "error": f"{path} is not a regular file"}
    try:
        with tarfile.open(path, "r:") as tar:
            manifest_member = tar.getmember("manifest.json")
            manifest_file = tar.extractfile(manifest_member)
            if manifest_file is None or manifest_member.size > HASH_BUFFER_BYTES:
                return {"path": path, "error": "manifest.json is not a small regular file"}
            manifest = json.loads(manifest_file.read())
            if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
                return {"path": path, "error": "the archive must hold exactly one image"}
            config_name = str(manifest[0].get("Config", ""))
            config_file = tar.extractfile(tar.getmember(config_name))
            if config_file is None:
                return {"path": path, "error": f"{config_name} is not a regular file"}
            digest = hashlib.sha256()
            for block in iter(lambda: config_file.read(1 << 16), b""):
                digest.update(block)
    except KeyError as exc:
        return {"path": path, "error": f"not an image archive (podman save): no {exc.args[0]} in it"}
    except (OSError, tarfile.TarError, ValueError) as exc:
        return {"path": path, "error": f"cannot read {path} as an image archive: {exc}"}
    tags = manifest[0].get("RepoTags") or []
    return {
        "path": path,
        "image_id": "sha256:" + digest.hexdigest(),
        "tags": [str(t) for t in tags][:32],
        "layers": len(manifest[0].get("Layers") or []),
    }
