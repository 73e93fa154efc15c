"""Whether a kept-alive HTTP connection may be used again: the one rule both HTTP clients follow.

``gw``'s client (``gateway.client.transport``) and the slurmrestd backend
(``gateway.adapters.slurm.rest_http``) keep connections open between
requests. A server may close one while it sits idle (uvicorn after 5 s, a
restarted slurmrestd at once); a request written to it would be lost, or
worse, half-sent. So before reuse each asks ``closed_by_peer``.
"""

from __future__ import annotations

import http.client
import select


def closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """True when the server closed this idle connection: its socket reads as ready (EOF or reset)."""
    if conn.sock is None:
        return False
    poller = select.poll()
    poller.register(conn.sock, select.POLLIN)
    return bool(poller.poll(0))
