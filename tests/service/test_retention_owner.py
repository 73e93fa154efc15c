"""The run host deletes as the files' owner: another OS user's deletion is refused by the kernel, the
owner's succeeds (runuser and the agent, as in production; tests run as root)."""

from __future__ import annotations

import os
import pwd
import uuid

from gateway.adapters.runhost_local import LocalRunHost
from gateway.adapters.runner import LocalRunner
from tests.conftest import JOB_ROOT
from tests.service.conftest import ensure_os_users


def test_only_the_owner_deletes_and_sizes_are_what_the_owner_sees():
    ensure_os_users()
    host = LocalRunHost(LocalRunner(), timeout_s=20)
    run_dir = JOB_ROOT / f"owner-{uuid.uuid4().hex[:8]}"
    host.make_run_dir(str(run_dir), owner="gwtalice")
    alice = pwd.getpwnam("gwtalice")
    log = run_dir / "stdout-1.log"
    log.write_text("alice's log\n")
    os.chown(log, alice.pw_uid, alice.pw_gid)
    try:
        [usage] = host.measure_dirs([str(run_dir)], as_user="gwtbob")
        assert usage.error and usage.size_bytes == 0, "bob may not even list alice's 0700 directory"
        refused = host.remove_path(str(run_dir), "stdout-1.log", kind="file", as_user="gwtbob")
        assert refused.error and not refused.removed and log.exists()
        [measured] = host.measure_paths(str(run_dir), ["stdout-1.log"], as_user="gwtalice")
        assert (measured.size_bytes, measured.kind) == (12, "file") and len(measured.sha256 or "") == 64
        done = host.remove_path(str(run_dir), "stdout-1.log", kind="file", as_user="gwtalice")
        assert done.removed and not log.exists()
        assert host.remove_path(str(run_dir), ".", kind="dir", as_user="gwtalice").removed
        assert not run_dir.exists()
    finally:
        if run_dir.exists():
            for child in run_dir.iterdir():
                child.unlink()
            run_dir.rmdir()
