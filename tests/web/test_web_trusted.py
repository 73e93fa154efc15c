"""The pages in trusted-proxy mode: the front end's header names the user on every request (only from a
trusted proxy's address), there is no sign-in form, and forms still need their CSRF token."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.service.gw_serve import gw_serve


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    settings = {"GATEWAY_AUTH_MODE": "trusted_proxy", "GATEWAY_TRUSTED_PROXIES": "127.0.0.1"}
    with gw_serve(
        tmp_path_factory.mktemp("webproxy"), prefix="webp", settings=settings, sync_slurm=False
    ) as s:
        yield s


def test_the_header_names_the_user_and_nothing_else_does(proxied):
    with httpx.Client(base_url=proxied.url) as client:
        page = client.get("/ui/runs", headers={"X-Remote-User": "tester"})
        assert page.status_code == 200
        assert re.search(r'id="signed-in-as">tester<', page.text) and 'id="sign-out"' not in page.text
        nobody = client.get("/ui/runs")
        assert nobody.status_code == 401 and "no valid user name" in nobody.text
        stranger = client.get("/ui/runs", headers={"X-Remote-User": "nosuchuser"})
        assert stranger.status_code == 401 and "not known to the gateway" in stranger.text
        assert "through it" in client.get("/ui/login").text  # no token form in this mode
        assert 'id="token"' not in client.get("/ui/login").text


def test_forms_still_need_their_csrf_token(proxied):
    headers = {"X-Remote-User": "tester"}
    with httpx.Client(base_url=proxied.url, headers=headers) as client:
        form = {"project": "test", "queue": "cpu", "name": "proxied", "command": "true", "action": "preview"}
        assert client.post("/ui/submit", data=form).status_code == 403
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/submit").text).group(1)
        preview = client.post("/ui/submit", data={**form, "csrf": csrf})
        assert preview.status_code == 200 and 'id="preview-script"' in preview.text


def test_the_user_header_twice_is_refused(proxied):
    """Issue 26 item 7: two X-Remote-User headers from the trusted proxy (a front end that adds its own
    to the client's instead of replacing it): neither counts, for the API and the pages alike."""
    twice = [("X-Remote-User", "tester"), ("X-Remote-User", "admin")]
    with httpx.Client(base_url=proxied.url) as client:
        for path in ("/runs", "/ui/runs"):
            answer = client.get(path, headers=twice)
            assert answer.status_code == 400, (path, answer.text)
            assert "came 2 times" in answer.text
        assert client.get("/runs", headers=twice).json()["error"] == "bad_request"
        assert client.get("/runs", headers={"X-Remote-User": "tester"}).status_code == 200
