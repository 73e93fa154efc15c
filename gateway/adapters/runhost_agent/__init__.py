"""File work on the machine where jobs run, done with the job's OS user's own permissions.

The local run host (``gateway.adapters.runhost_local``) calls these
functions in its own process when the job's user is the gateway's own, and
otherwise runs this package as that user (``runuser -u USER -- python3 -I -S``,
its modules sent as one program: ``gateway.adapters.runhost_base.agent_program``)
with one JSON request on stdin and one JSON answer on stdout, so that the
kernel, not the gateway, decides what may be read: a job's user gets back
only bytes that user could read. ``python -m gateway.adapters.runhost_agent``
answers a request the same way.

Standard library only, and no import of the gateway: the package also runs as
a program on a host where the gateway is not installed (an SSH submit host),
so its modules import one another relatively.

Every read is bounded: only regular files are opened (a FIFO, a device or a
socket is refused before it could block), never under ``/proc``, ``/sys`` or
``/dev``, at most ``max_bytes`` per call. Every answer is JSON-ready; bytes
travel as base64. Errors a caller should show (no such file, permission
denied, not a regular file) are part of the answer, not exceptions.

Modules: ``reading`` (part of a file), ``outputs`` (a run's output files and
their digests), ``writing`` (one file written or removed; may this user write
a directory, read a file), ``inspection`` (a venv's packages, an image
archive's id), ``retention`` (measuring and deleting inside a run directory),
``_common`` (what they share).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from ._common import BLOCK_BYTES, HASH_BUFFER_BYTES, PSEUDO_ROOTS, RefusedPath
from .inspection import image_archive, python_env
from .outputs import scan_outputs
from .reading import read_file
from .retention import measure_dirs, measure_paths, remove_path
from .writing import readable_file, remove_file, writable_dir, write_file

__all__ = [
    "BLOCK_BYTES",
    "HASH_BUFFER_BYTES",
    "OPERATIONS",
    "PSEUDO_ROOTS",
    "RefusedPath",
    "handle",
    "image_archive",
    "main",
    "measure_dirs",
    "measure_paths",
    "python_env",
    "read_file",
    "readable_file",
    "remove_file",
    "remove_path",
    "scan_outputs",
    "writable_dir",
    "write_file",
]

OPERATIONS: dict[str, Callable[..., Any]] = {
    "read_file": read_file,
    "scan_outputs": scan_outputs,
    "write_file": write_file,
    "remove_file": remove_file,
    "writable_dir": writable_dir,
    "readable_file": readable_file,
    "python_env": python_env,
    "image_archive": image_archive,
    "measure_paths": measure_paths,
    "measure_dirs": measure_dirs,
    "remove_path": remove_path,
}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """One request ``{"op": name, "args": {...}}`` -> ``{"ok": true, "result": ...}`` or an error."""
    op = OPERATIONS.get(request.get("op", ""))
    if op is None:
        return {"ok": False, "error": f"unknown operation {request.get('op')!r}"}
    try:
        return {"ok": True, "result": op(**request.get("args", {}))}
    except (TypeError, ValueError, RefusedPath, OSError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    """Answer the one JSON request on stdin (2**20 characters read at most) with one JSON line on stdout.

    Returns the exit status: 0 when the request was read (its own errors are in the answer), 2 when it
    was not JSON.
    """
    try:
        request = json.loads(sys.stdin.read(1 << 20))
    except ValueError as exc:
        print(json.dumps({"ok": False, "error": f"bad request: {exc}"}))
        return 2
    print(json.dumps(handle(request)))
    return 0
