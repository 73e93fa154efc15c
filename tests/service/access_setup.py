"""What the access tests share (tests/service/test_access*.py): the roles, their users, a call as one.

Their fixtures (``app``, ``ended_run``) are in conftest.py.
"""

from __future__ import annotations

ROLES = ("admin", "lead", "member", "viewer", "outsider", "anonymous")
USER_OF = {"admin": "admin", "lead": "tester", "member": "mia", "viewer": "watcher", "outsider": "outsider"}


def call(app, tokens, role, method, path, **kwargs):
    """``method path`` through ``app`` as ``role``'s user (no token for ``anonymous``)."""
    headers = {} if role == "anonymous" else {"Authorization": f"Bearer {tokens[USER_OF[role]]}"}
    return app.request(method, path, headers=headers, **kwargs)
