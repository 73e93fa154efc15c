"""Headless Chromium (Debian's, /usr/bin/chromium, through Playwright) to look at the pages the gateway
writes: a full-page screenshot, each image's own screenshot, and what the DOM holds.

``scripts/chromium-ready`` installs Chromium; Playwright never downloads a browser here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class Shot:
    page_png: bytes
    images: dict[str, bytes]  # the id of the figure holding it -> the image's own screenshot
    loaded: dict[str, bool]  # whether each image decoded (naturalWidth > 0)
    texts: dict[str, str]  # the id of each figure -> its text


def look(page_file: Path, width: int = 1200) -> Shot:
    """Open ``page_file`` in headless Chromium (no network: the page must stand alone) and take it in."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.route("http*://**", lambda route: route.abort())  # anything fetched from outside fails
            page.goto(page_file.as_uri(), wait_until="load")
            figures = page.locator("figure")
            images, loaded, texts = {}, {}, {}
            for i in range(figures.count()):
                figure = figures.nth(i)
                fid = figure.get_attribute("id") or f"figure-{i}"
                texts[fid] = figure.inner_text()
                img = figure.locator("img")
                if img.count():
                    loaded[fid] = bool(img.evaluate("e => e.complete && e.naturalWidth > 0"))
                    images[fid] = img.screenshot()
            return Shot(page.screenshot(full_page=True), images, loaded, texts)
        finally:
            browser.close()


def ink(png: bytes) -> tuple[float, int]:
    """The share of pixels that are not (near) white, and how many distinct colours there are."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    inked = float((pixels.min(axis=1) < 235).mean())
    return inked, len(np.unique(pixels, axis=0))
