"""gw evidence TARGET -o OUT and gw evidence verify BUNDLE.

``TARGET`` is a run id, a release (``PROJECT/NAME@VERSION``), a sha256 or a
file here (hashed here). ``OUT`` ending in ``.zip`` gets the archive as the
API sends it; any other ``OUT`` is a directory the bundle's files are
written into (made if missing; files already there are replaced, nothing
else is touched). ``verify`` reads a bundle directory or zip and checks every
file against ``manifest.json`` and, with ``--public-key``, ``manifest.sig`` against the site's
evidence key, offline: exit 0 when all match, 1 when not (an unsigned bundle fails with a key).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli.common import SHA256_HEX, call, usage
from gateway.cli.output import console, err_console
from gateway.core import names
from gateway.core.evidence.bundle import unzip_bytes
from gateway.core.evidence.signing import read_bundle, report, verify_files
from gateway.core.releases.domain import parse_release_ref

MAX_BUNDLE_BYTES = 512 * 1024 * 1024


def register(app: typer.Typer) -> None:
    """Add ``gw evidence`` to ``app``."""
    app.command("evidence")(evidence)


def evidence(
    target: Annotated[
        str, typer.Argument(help="RUN_ID, PROJECT/NAME@VERSION, a sha256 or a file; or 'verify'.")
    ],
    bundle: Annotated[
        str | None, typer.Argument(help="With 'verify': the bundle (a directory or .zip).")
    ] = None,
    out: Annotated[
        str | None, typer.Option("-o", "--output", help="A directory, or a file ending in .zip.")
    ] = None,
    redact: Annotated[
        bool, typer.Option(help="Pseudonymise people, hosts, paths, env values, tokens.")
    ] = False,
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="With 'verify': the site's evidence public key (PEM); the bundle must be signed by it.",
        ),
    ] = None,
) -> None:
    """Export the evidence bundle of a run, release or file (evidence.json, index.html, manifest.json),
    or check one: `gw evidence verify BUNDLE [--public-key KEY]`."""
    if target == "verify":
        if bundle is None:
            usage("gw evidence verify BUNDLE: name the bundle (a directory or a .zip)")
        raise typer.Exit(verify(bundle, public_key))
    if bundle is not None:
        usage(f"unexpected argument {bundle!r}; gw evidence TARGET -o OUT")
    if out is None:
        usage("name where the bundle goes: -o DIR or -o FILE.zip")
    kind, key = _target(target)
    data = call("evidence", kind, key, redact=redact)
    if out.endswith(".zip"):
        Path(out).write_bytes(data)
        console.print(f"wrote {out} ({len(data)} bytes)" + (" (redacted)" if redact else ""), markup=False)
        return
    files = unzip_bytes(data)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
    console.print(
        f"wrote {', '.join(sorted(files))} to {out}" + (" (redacted)" if redact else ""), markup=False
    )


def _target(target: str) -> tuple[str, str]:
    if os.path.isfile(target):
        from gateway.adapters.files import sha256_file

        return "artifacts", sha256_file(target)[0]
    if SHA256_HEX.fullmatch(target):
        return "artifacts", target.lower()
    if target.startswith("r-") and names.NAME.fullmatch(target):
        return "runs", target
    if "@" in target:
        try:
            ref = parse_release_ref(target, version=True)
        except ValueError as exc:
            usage(str(exc))
        return "releases", f"{ref.project}/{ref.name}/{ref.version or 'latest'}"
    usage(f"{target!r} is not a run id (r-...), a release (PROJECT/NAME@VERSION), a sha256 or a file here")


def verify(bundle: str, public_key: Path | None = None) -> int:
    """Check a bundle against its manifest and, with ``public_key``, its signature (offline: no server
    is asked; ``gateway.core.evidence.signing``); print the verdict; 0 when it verifies, 1 when not."""
    path = Path(bundle)
    if not path.exists():
        usage(f"no such bundle: {bundle} (a directory or a .zip)")
    key = None
    if public_key is not None:
        try:
            key = public_key.read_bytes()
        except OSError as exc:
            usage(f"cannot read the public key {public_key}: {exc.strerror or exc}")
    try:
        files = read_bundle(path, max_bytes=MAX_BUNDLE_BYTES)
    except ValueError as exc:
        err_console.print(f"FAILED: {bundle}: {exc}", markup=False)
        return 1
    except OSError as exc:
        usage(f"cannot read {bundle}: {exc.strerror or exc}")
    verdict = verify_files(files, key)
    for bad, line in report(verdict):
        (err_console if bad else console).print(line, markup=False, soft_wrap=True)
    return 0 if verdict.ok else 1
