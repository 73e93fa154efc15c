"""/docs (Swagger UI) and /redoc (ReDoc) render with no network: every asset they load comes from the
gateway itself (gateway/api/docs_pages.py), and a real chromium that may reach nothing else sees the
operations drawn."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.service.gw_serve import gw_serve


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory):
    with gw_serve(tmp_path_factory.mktemp("webdocs"), prefix="webd", sync_slurm=False) as s:
        yield s


@pytest.fixture
def offline_page(browser, docs_server):
    """A page whose every request to another host is aborted (and remembered): no network but the gateway."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    gateway = urlsplit(docs_server.url).netloc
    elsewhere: list[str] = []

    def only_the_gateway(route) -> None:
        if urlsplit(route.request.url).netloc == gateway:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_the_gateway)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page, elsewhere
    context.close()


def test_swagger_ui_renders_the_operations_offline(offline_page, docs_server):
    page, elsewhere = offline_page
    page.goto(f"{docs_server.url}/docs")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/runs" in [p.replace("\u200b", "") for p in paths]
    assert len(paths) > 50  # every operation, not a blank page
    assert page.locator(".information-container .title").inner_text().startswith("the gateway")
    assert elsewhere == []


def test_redoc_renders_the_operations_offline(offline_page, docs_server):
    page, elsewhere = offline_page
    page.goto(f"{docs_server.url}/redoc")
    page.wait_for_selector("[data-section-id^='operation/']", state="attached")
    operations = page.locator("[data-section-id^='operation/']").count()
    assert operations > 50
    assert "the gateway" in page.locator("h1").first.inner_text()
    # ReDoc's own "API docs by Redocly" footer image is its only outside request; it is decoration, and
    # with it refused the page is whole (the operations above).
    assert [url for url in elsewhere if not url.startswith("https://cdn.redoc.ly/redoc/logo")] == []


def test_the_pages_name_only_local_assets(docs_server):
    import httpx

    for path in ("/docs", "/redoc"):
        html = httpx.get(f"{docs_server.url}{path}").text
        assert "cdn." not in html and "fonts.googleapis" not in html and "/docs-assets/" in html
    assert httpx.get(f"{docs_server.url}/docs-assets/swagger-ui-bundle.js").status_code == 200
