"""The error every ``GatewayClient`` call raises, in a module of its own so that `gw --help`
and the command modules can name it without importing the HTTP transport and the settings."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """The API answered with an error, or could not be reached (status 0)."""

    def __init__(
        self, status: int, kind: str, detail: Any, run_id: str | None = None, body: Any = None
    ) -> None:
        super().__init__(f"{kind}: {detail}")
        self.status = status
        self.kind = kind
        self.detail = detail
        self.run_id = run_id
        self.body = body  # the answer's JSON body, when it had one
