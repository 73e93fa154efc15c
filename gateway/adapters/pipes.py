"""A started program's three pipes: its input written, its two outputs read, in one poll loop.

``exchange`` is what ``subprocess.Popen.communicate`` does for the runner's started programs
(``gateway.adapters.runner``), at about a quarter less of this process's CPU per call (measured in
docs/performance.md, sixth pass): ``communicate`` writes its input in chunks of ``PIPE_BUF`` (512
bytes) with a poll before each, through ``selectors`` objects, and decodes through text wrappers;
here the input goes in one non-blocking write when the pipe holds it (an sbatch script does), the
outputs are read in 64 KiB reads, and the caller decodes once. A program that ends or closes its
input without reading it all is not an error here (``communicate`` ignores that too): its exit
status and output tell.
"""

from __future__ import annotations

import errno
import os
import select
import time
from typing import Protocol

_READ = select.POLLIN | select.POLLHUP | select.POLLERR
_CHUNK = 65536


class Pipe(Protocol):
    """One end of a pipe, as ``subprocess.Popen`` holds it (unbuffered: ``bufsize=0``)."""

    def fileno(self) -> int:
        """Its descriptor."""
        ...

    def close(self) -> None:
        """Close it (once; a second close does nothing)."""
        ...


def exchange(stdin: Pipe, stdout: Pipe, stderr: Pipe, data: bytes, deadline: float) -> tuple[bytes, bytes]:
    """Write ``data`` to ``stdin`` and close it, read ``stdout`` and ``stderr`` to their ends (each
    closed then); their bytes. TimeoutError when ``deadline`` (``time.monotonic()``) passes first:
    the caller kills the program and closes the pipes left open."""
    pipes = {p.fileno(): p for p in (stdin, stdout, stderr)}
    stdin_fd, stdout_fd, stderr_fd = pipes
    os.set_blocking(stdin_fd, False)
    view = memoryview(data)
    view = view[_write(stdin_fd, view) :]
    poller = select.poll()
    if view:
        poller.register(stdin_fd, select.POLLOUT | select.POLLERR)
    else:
        stdin.close()
    chunks: dict[int, list[bytes]] = {stdout_fd: [], stderr_fd: []}
    for fd in chunks:
        poller.register(fd, _READ)
    reading = {stdout_fd, stderr_fd}
    while reading or view:
        left_ms = (deadline - time.monotonic()) * 1000
        if left_ms <= 0:
            raise TimeoutError("the program did not finish in time")
        for fd, _ in poller.poll(left_ms):
            if fd == stdin_fd:
                view = view[_write(stdin_fd, view) :]
                if not view:
                    poller.unregister(stdin_fd)
                    stdin.close()
                continue
            chunk = os.read(fd, _CHUNK)
            if chunk:
                chunks[fd].append(chunk)
            else:
                poller.unregister(fd)
                pipes[fd].close()
                reading.discard(fd)
    return b"".join(chunks[stdout_fd]), b"".join(chunks[stderr_fd])


def _write(fd: int, view: memoryview) -> int:
    """As much of ``view`` as the pipe takes now; all of it when the reader has gone (EPIPE)."""
    if not view:
        return 0
    try:
        return os.write(fd, view)
    except BlockingIOError:
        return 0
    except OSError as exc:
        if exc.errno in (errno.EPIPE, errno.EINVAL):
            return len(view)
        raise
