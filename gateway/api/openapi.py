"""Print the API's OpenAPI description (``make openapi`` writes it to docs/openapi.json)."""

from __future__ import annotations

import json

from gateway.api.app import create_app


def openapi_text() -> str:
    return json.dumps(create_app().openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(openapi_text(), end="")
