"""The run host's file operations, done by ``runhost_agent`` as the job's OS user through a runner.

``AgentRunHost`` implements the file half of ``RunHost``: each call runs the
standard-library agent (``python3 -I -S -c SOURCE``, one JSON request on
stdin, one JSON answer on stdout) as the job's user through a command
runner, so the kernel of the machine where jobs run decides what that user
may read. With the local runner that is ``runuser`` on this machine
(``runhost_local``); with the SSH runner it is a login, or sudo, on the
submit host (``runhost_ssh``). Either way a call is bounded in time
(``timeout_s``) and the agent bounds it in size.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from gateway.adapters import runhost_agent
from gateway.adapters.runhost import DirUsage, FileRead, OutputFile, OutputScan, PathMeasure, Removal
from gateway.adapters.runner import CommandRunner
from gateway.errors import CommandError, CommandTimeout, RunHostError, RunHostUnavailable

# Runs the agent package from the sources it carries, none from disk: on a submit host the gateway is
# not installed, and ``-I -S`` keeps the job user's own paths and site packages out.
_PROGRAM = """import sys
from importlib.machinery import ModuleSpec

SOURCES = %r


class Loader:
    def find_spec(self, name, path=None, target=None):
        if name in SOURCES:
            return ModuleSpec(name, self, is_package=name == "runhost_agent")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(SOURCES[module.__name__], module.__name__, "exec"), module.__dict__)


sys.meta_path.insert(0, Loader())
import runhost_agent

sys.exit(runhost_agent.main())
"""


def agent_program() -> str:
    """The ``runhost_agent`` package as one ``python3 -I -S -c`` program (its ``main``).

    Its modules travel as text, keyed ``runhost_agent`` and ``runhost_agent.<module>``, and are
    imported from there (they import one another relatively); ``__main__`` stays behind.
    """
    package = Path(runhost_agent.__file__).parent
    sources = {
        "runhost_agent" if path.stem == "__init__" else f"runhost_agent.{path.stem}": path.read_text(
            encoding="utf-8"
        )
        for path in sorted(package.glob("*.py"))
        if path.stem != "__main__"
    }
    return _PROGRAM % (sources,)


AGENT_SOURCE = agent_program()


class AgentRunHost:
    """Files of the machine where jobs run, each operation by the agent as the job's user."""

    def __init__(self, runner: CommandRunner, *, python: str = "/usr/bin/python3", timeout_s: float = 30.0):
        self.runner = runner
        self.python = python  # the interpreter the agent runs under as the job's user
        self.timeout_s = timeout_s

    def write_file(self, path: str, data: bytes, *, as_user: str, mode: int = 0o644) -> None:
        """``RunHost.write_file``: done by the agent as ``as_user``; RunHostError with its reason."""
        answer = self._call(
            "write_file", as_user, path=path, data_b64=base64.b64encode(data).decode("ascii"), mode=mode
        )
        if answer.get("error"):
            raise RunHostError(answer["error"])

    def remove_file(self, path: str, *, as_user: str) -> None:
        """``RunHost.remove_file``: done by the agent as ``as_user``; RunHostError with its reason."""
        answer = self._call("remove_file", as_user, path=path)
        if answer.get("error"):
            raise RunHostError(answer["error"])

    def read_file(
        self,
        path: str,
        *,
        as_user: str,
        max_bytes: int,
        offset_bytes: int | None = None,
        tail_lines: int | None = None,
        inside: str | None = None,
    ) -> FileRead:
        """``RunHost.read_file``: done by the agent as ``as_user`` (``runhost_agent.read_file``).

        RunHostError when the agent fails, RunHostUnavailable when it does not finish within ``timeout_s``.
        """
        answer = self._call(
            "read_file",
            as_user,
            path=path,
            max_bytes=max_bytes,
            offset_bytes=offset_bytes,
            tail_lines=tail_lines,
            inside=inside,
        )
        return FileRead(
            path=path,
            exists=bool(answer["exists"]),
            size_bytes=int(answer["size_bytes"]),
            offset_bytes=int(answer["offset_bytes"]),
            data=base64.b64decode(answer["data_b64"]),
            error=answer.get("error"),
        )

    def scan_outputs(self, run_dir: str, patterns: list[str], *, as_user: str, max_files: int) -> OutputScan:
        """``RunHost.scan_outputs``: done by the agent as ``as_user`` (``runhost_agent.scan_outputs``)."""
        answer = self._call("scan_outputs", as_user, run_dir=run_dir, patterns=patterns, max_files=max_files)
        return OutputScan(
            files=[OutputFile(rel, int(size), sha) for rel, size, sha in answer["files"]],
            skipped=int(answer["skipped"]),
            truncated=bool(answer["truncated"]),
            errors=list(answer["errors"]),
        )

    def writable_dir(self, path: str, *, as_user: str) -> str | None:
        """``RunHost.writable_dir``: the agent tries it as ``as_user``."""
        return self._call("writable_dir", as_user, path=path).get("error")

    def readable_file(self, path: str, *, as_user: str) -> str | None:
        """``RunHost.readable_file``: the agent opens it as ``as_user``."""
        return self._call("readable_file", as_user, path=path).get("error")

    def python_env(self, venv: str, *, as_user: str) -> dict[str, Any]:
        """``RunHost.python_env``: the agent reads the venv as ``as_user``; failing, ``{"venv", "error"}``."""
        try:
            return self._call("python_env", as_user, venv=venv)
        except RunHostError as exc:
            return {"venv": venv, "error": str(exc)}

    def image_archive(self, path: str, *, as_user: str) -> dict[str, Any]:
        """``RunHost.image_archive``: the agent reads it as ``as_user``; failing, ``{"path", "error"}``."""
        try:
            return self._call("image_archive", as_user, path=path)
        except RunHostError as exc:
            return {"path": path, "error": str(exc)}

    def measure_paths(
        self, run_dir: str, rels: list[str], *, as_user: str, digest: bool = True
    ) -> list[PathMeasure]:
        """``RunHost.measure_paths``: the agent measures as ``as_user`` (``runhost_agent.measure_paths``)."""
        answer = self._call("measure_paths", as_user, root=run_dir, paths=rels, digest=digest)
        return [
            PathMeasure(
                rel=a["rel"],
                exists=bool(a["exists"]),
                kind=a.get("kind"),
                size_bytes=int(a.get("bytes") or 0),
                files=int(a.get("files") or 0),
                sha256=a.get("sha256"),
                error=a.get("error"),
            )
            for a in answer["paths"]
        ]

    def measure_dirs(self, run_dirs: list[str], *, as_user: str) -> list[DirUsage]:
        """``RunHost.measure_dirs``: one agent call as ``as_user`` for all of ``run_dirs``."""
        answer = self._call("measure_dirs", as_user, roots=run_dirs)
        return [DirUsage(p, bool(e), int(b), int(f), err) for p, e, b, f, err in answer["dirs"]]

    def remove_path(self, run_dir: str, rel: str, *, kind: str, as_user: str) -> Removal:
        """``RunHost.remove_path``: the agent deletes as ``as_user`` (``runhost_agent.remove_path``)."""
        answer = self._call("remove_path", as_user, root=run_dir, rel=rel, kind=kind)
        return Removal(
            bool(answer["removed"]), bool(answer["missing"]), answer.get("error"), bool(answer.get("emptied"))
        )

    def _call(self, op: str, as_user: str, **args: Any) -> dict[str, Any]:
        """Run one agent operation as ``as_user``; its result, or RunHostError with the agent's reason."""
        answer = self._through_runner({"op": op, "args": args}, as_user)
        if not answer.get("ok"):
            raise RunHostError(f"{op} as {as_user} failed: {answer.get('error')}")
        return answer["result"]

    def _through_runner(self, request: dict[str, Any], user: str) -> dict[str, Any]:
        """The agent's JSON answer to ``request``, run as ``user``.

        RunHostUnavailable when it did not answer within ``timeout_s`` (or the connection to the host
        dropped), RunHostError when it could not start or gave no JSON.
        """
        argv = [self.python, "-I", "-S", "-c", AGENT_SOURCE]
        try:
            result = self.runner.run(argv, stdin=json.dumps(request), timeout_s=self.timeout_s, as_user=user)
        except CommandTimeout as exc:
            raise RunHostUnavailable(
                f"the run host did not finish {request['op']} as {user} within {self.timeout_s:g} s: {exc}"
            ) from exc
        except CommandError as exc:
            raise RunHostError(f"cannot act as {user} on the run host: {exc}") from exc
        try:
            return json.loads(result.stdout)
        except ValueError as exc:
            detail = (result.stderr or result.stdout).strip()[-500:]
            raise RunHostError(
                f"{request['op']} as {user} gave no answer (exit {result.returncode}): {detail}"
            ) from exc
