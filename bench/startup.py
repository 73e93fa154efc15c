"""Benchmark: how long `gw` takes to start for commands that need no server.

    .venv/bin/python -m bench.startup [N]

Runs each command N times as its own process (this interpreter, the ``gw``
entry point's ``app``), with a bare ``python -c pass`` beside it as the
reference (the interpreter's own start), and prints the medians. Exits 1
when a command's median is over the target: `gw --help` and the other
commands that talk to no server start in under 0.3 s (issue 19). To see
what an import costs: ``python -X importtime -c "from gateway.cli.main import app"``.

The gateway's bytecode is compiled first (``compileall``), as installing the package
from a wheel does: with ``PYTHONDONTWRITEBYTECODE`` set (as on the development
machines) an editable install never writes it, and every ``gw`` would compile
every module it imports from source (0.71 s for ``gw --help`` measured so, 0.38 s
compiled, on 2026-12-01).
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3
ROOT = Path(__file__).resolve().parent.parent
GW = "from gateway.cli.main import app; app()"  # what the `gw` console script runs
COMMANDS = [
    ["--help"],
    ["submit", "--help"],
    ["admin", "--help"],
    ["admin", "apply", "--help"],
    ["eval", "--help"],
    ["dataset", "--help"],
]


def timed(argv: list[str], n: int) -> float:
    """The median wall time of ``argv`` over ``n`` runs, in seconds (exit status 0 required)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main(n: int) -> int:
    compileall.compile_dir(ROOT / "gateway", quiet=1)  # writes even under PYTHONDONTWRITEBYTECODE
    python_s = timed([sys.executable, "-c", "pass"], n)
    print(f"python -c pass       median {python_s * 1000:6.0f} ms (the interpreter alone)")
    worst = 0.0
    for args in COMMANDS:
        took_s = timed([sys.executable, "-c", GW, *args], n)
        worst = max(worst, took_s)
        print(f"gw {' '.join(args):<18} median {took_s * 1000:6.0f} ms (target < {TARGET_S * 1000:.0f} ms)")
    ok = worst < TARGET_S
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
