"""scripts/make-up names each part before it starts, times it when it ends, sums up where the time
went, and names the part that failed (issue 28, point 7).

The real parts (a venv install, the cluster playbook) cannot run inside the test suite: they would
reinstall the shared venv and restart the cluster. So the script runs here, unchanged, from a copy of
its folder in which each part is a stand-in that sleeps (``make``, ``sinfo`` on PATH and the two
scripts next to it): what is checked is the script's own report, not the parts.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _stand_in(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n# a stand-in for the test of scripts/make-up's report\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _copy(tmp_path: Path, *, failing: str | None = None) -> tuple[Path, dict[str, str]]:
    scripts, bin_dir = tmp_path / "scripts", tmp_path / "bin"
    scripts.mkdir()
    bin_dir.mkdir()
    shutil.copy(REPO / "scripts" / "make-up", scripts / "make-up")
    _stand_in(bin_dir / "make", 'sleep 0.2; [ "$2" != "' + (failing or "-") + '" ] || exit 3')
    _stand_in(bin_dir / "sinfo", "true")
    _stand_in(scripts / "cluster-ready", "true")
    _stand_in(scripts / "chromium-ready", "true")
    _stand_in(scripts / "gw-up", "sleep 0.1")
    return scripts / "make-up", {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_each_part_is_named_timed_and_summed_up(tmp_path):
    script, env = _copy(tmp_path)
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    parts = re.findall(r"^==> (.+)$", out, re.M)
    assert [p.split(":")[0].split(" (")[0] for p in parts] == [
        "Python venv",
        "Slurm 22.05 clusters gwlocal and gwlocal2",
        "the clusters answer",
        "chromium, for the web tests and make poc's summary page",
        "gw serve on 127.0.0.1",
    ]
    assert len(re.findall(r"^    done in \d+\.\d s$", out, re.M)) == 5
    total = re.search(r"^make up took (\d+\.\d) s:$", out, re.M)
    assert total and float(total[1]) >= 0.5  # the stand-ins slept 0.5 s in all
    summary = re.findall(r"^ +(\d+\.\d) s  (.+)$", out, re.M)
    assert [name for _, name in summary] == parts and float(summary[0][0]) >= 0.2
    assert "make poc" in out and "/docs" in out  # what to try next


def test_a_failing_part_is_named_with_its_time(tmp_path):
    script, env = _copy(tmp_path, failing="cluster")
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert re.search(r"^==> Slurm 22\.05 clusters .+: FAILED after \d+\.\d s$", done.stderr, re.M), (
        done.stderr
    )
    assert "make up took" not in done.stdout and "chromium" not in done.stdout
