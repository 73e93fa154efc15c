"""What the /runs routes share with each other and with other topics' routes naming a run: the run id
in a path, the error answers, the Idempotency-Key header, the attempt query."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Path, Query

from gateway.api.schemas import ErrorPublic
from gateway.core import names

IDEMPOTENCY_KEY = r"^[A-Za-z0-9._:-]{8,128}$"
RunId = Annotated[
    str, Path(description="A run id, e.g. r-3f2a9c0d1e2b4a5f", pattern=f"^{names.NAME.pattern}$")
]
ERRORS = {
    404: {"model": ErrorPublic, "description": "No such run"},
    409: {"model": ErrorPublic, "description": "The Idempotency-Key was used for another request"},
    422: {"model": ErrorPublic, "description": "Invalid request (field paths in detail)"},
    503: {"model": ErrorPublic, "description": "Database or Slurm not answering; retry"},
}


# Declared as a plain string (a header is text or absent; "null" is not a key): absent means None.
IdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY,
        description="A key of the client's choosing (e.g. a UUID) for this one submission: the same key "
        "again (a retry after a cut connection) returns the run the first request made, with header "
        "Idempotent-Replayed: true; the same key with another request is 409. Remembered for a day.",
    ),
]


AttemptQuery = Annotated[int | None, Query(ge=1, le=10_000, description="Attempt number; default latest")]
