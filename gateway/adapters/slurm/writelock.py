"""One sacctmgr writer at a time on this host.

Slurm 22.05's slurmdbd can lose an account that is added while another
``sacctmgr add account`` runs: reproduced on this cluster, two concurrent
``add account`` both print "Adding Account(s)", and the ``add user`` into
one of them then fails with "This account ... doesn't exist". So every
gateway process on a host takes this lock (``flock`` on a file) around its
whole batch of sacctmgr writes, and the accounts adapter also checks that an
account it added is there before adding users to it (gateways on other
hosts are not covered by the lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

LOCK_PATH = os.path.join(tempfile.gettempdir(), "gateway-sacctmgr-writes.lock")


@contextlib.contextmanager
def sacctmgr_writes(path: str = LOCK_PATH) -> Iterator[None]:
    """Hold the host's sacctmgr write lock for the block (waits for another holder to finish).

    A lock file this process may not open (another service user made it) is no lock: the
    adapter's check after each added account still catches a lost one.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock
