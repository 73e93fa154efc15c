"""docs/openapi.json stays true to the code."""

from pathlib import Path

from gateway.api.openapi import openapi_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_published_openapi_matches_the_code():
    assert DOC.read_text() == openapi_text(), "docs/openapi.json is stale: run `make openapi`"
