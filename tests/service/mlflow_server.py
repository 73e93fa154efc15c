"""A real MLflow tracking server for the hand-off tests: ``mlflow server`` on 127.0.0.1, a free port,
a SQLite backend and a local artifact root, in a directory of its own. It can be stopped and started
again on the same port and store (MLflow down during a promotion, then back)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.sshd import free_port

START_WAIT_S = 120.0  # the first start migrates the SQLite store; bounded


class MlflowServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        mlflow = Path(sys.executable).with_name("mlflow")
        log = (self.root / "server.log").open("ab")
        env = os.environ | {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
        self.proc = subprocess.Popen(
            [
                str(mlflow),
                "server",
                "--backend-store-uri",
                f"sqlite:///{self.root / 'mlflow.db'}",
                "--artifacts-destination",
                str(self.root / "artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
            ],  # fmt: skip
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            env=env,
            start_new_session=True,  # its own process group: stop() ends the server and its workers
        )
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {(self.root / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"mlflow server not up after {START_WAIT_S:g} s")

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=5)  # uvicorn waits on kept-alive client connections; down is down
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None
