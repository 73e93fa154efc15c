"""The web pages in-process: a TestClient of the API with the pages mounted, signed in through the form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.services import Services
from gateway.web import mount_web


def sign_in(client: TestClient, token: str) -> None:
    """Sign ``client`` in with an API token through the sign-in form (its CSRF token included)."""
    login = client.get("/ui/login")
    found = re.search(r'name="csrf" value="([^"]+)"', login.text)
    assert found, login.text
    signed = client.post("/ui/login", data={"csrf": found.group(1), "token": token}, follow_redirects=False)
    assert signed.status_code == 303, signed.text


@contextmanager
def web_client(services: Services, token: str | None = None) -> Iterator[TestClient]:
    """A client of the API and the pages on ``services``; signed in when ``token`` is given."""
    with TestClient(mount_web(create_app(services=services))) as client:
        if token:
            sign_in(client, token)
        yield client
