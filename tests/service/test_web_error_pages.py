"""Errors under /ui are pages (HTML, escaped, with a way back); the API's errors stay JSON."""

from __future__ import annotations

import pytest

from tests.service.web_client import web_client

pytestmark = pytest.mark.slurm


def page_of(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html"), response.headers
    assert "Content-Security-Policy" in response.headers
    assert 'id="error-back"' in response.text
    return response.text


def test_an_unknown_page_is_an_escaped_404_page(services, tokens):
    with web_client(services, tokens["tester"]) as client:
        text = page_of(client.get("/ui/no-such-<script>alert(1)</script>"), 404)
        assert "Not found" in text and "<script>alert" not in text
        assert 'id="signed-in-as">tester<' in text  # the header as on every page
        assert "there is no page /ui/no-such-&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "Not found" in page_of(client.get("/ui/runs/r-0000000000000000"), 404)
        api = client.get("/no-such-route")  # the API's own 404 stays JSON
        assert api.status_code == 404 and api.json()["error"] == "not_found"
        api = client.get("/runs/r-0000000000000000", headers={"Authorization": f"Bearer {tokens['tester']}"})
        assert api.status_code == 404 and api.json()["error"] == "not_found"
    with web_client(services) as anonymous:  # no session needed to be told a page does not exist
        text = page_of(anonymous.get("/ui/nothing/here"), 404)
        assert "Not found" in text and "signed-in-as" not in text


def test_refusals_and_bad_input_are_pages(services, tokens):
    with web_client(services, tokens["tester"]) as client:
        text = page_of(client.get("/ui/queue"), 403)  # site admins only
        assert "Not allowed" in text and "admin" in text
        text = page_of(client.get("/ui/runs", params={"state": "<b>done</b>"}), 422)
        assert "Invalid request" in text and "query.state: Input should be &#39;submitting&#39;" in text
        assert "<b>done</b>" not in text
        text = page_of(client.put("/ui/runs"), 405)
        assert "PUT is not possible at /ui/runs" in text
        api = client.put("/runs", headers={"Authorization": f"Bearer {tokens['tester']}"})
        assert api.status_code == 405 and api.json()["error"] == "method_not_allowed"
