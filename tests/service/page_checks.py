"""What the browser tests check on every page a person reads, in Debian's Chromium through Playwright:
nothing wider than the window (1366 px, the commonest laptop width), no console error, every in-page
link (``href="#..."``) landing on an element of the page, and the print layout fitting the paper
(A4 and Letter with 12 mm margins: no element wider than the printable width).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
# Where the browser tests keep their screenshots and PDFs (tests/web/conftest.py's folder too).
SCREENSHOTS = Path(os.environ.get("GW_SCREENSHOT_DIR", REPO / "test-artifacts" / "screenshots"))
WIDTH = 1366
# The printable width of the narrower paper (A4, 210 mm, against Letter's 215.9 mm) less the 12 mm
# margins of the pages' @page rule, in CSS pixels (96 per inch).
PRINT_WIDTH = round((210 - 2 * 12) / 25.4 * 96)

# Elements whose right edge is past the window (or past their scrolling parent's box, when one scrolls
# inside it: a <pre> with its own scroll bar is not wider than the page).
WIDER = """(limit) => {
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= limit + 1) continue;
    let p = el.parentElement, clipped = false;
    while (p && p !== document.body) {
      const s = getComputedStyle(p);
      if (/(auto|scroll|hidden)/.test(s.overflowX) && p.getBoundingClientRect().right <= limit + 1) {
        clipped = true; break;
      }
      p = p.parentElement;
    }
    if (!clipped) out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') +
      ' right=' + Math.round(r.right));
  }
  return out.slice(0, 20);
}"""

UNRESOLVED = """() => [...document.querySelectorAll('a[href^="#"]')]
  .map(a => a.getAttribute('href').slice(1))
  .filter(id => id && !document.getElementById(decodeURIComponent(id)))"""


def wider_than(page, limit: int) -> list[str]:
    """The elements of ``page`` (a Playwright page) reaching past ``limit`` CSS pixels."""
    return page.evaluate(WIDER, limit)


def unresolved_links(page) -> list[str]:
    """In-page links (``#id``) whose target the page does not hold."""
    return page.evaluate(UNRESOLVED)


def open_page(browser, url: str, *, width: int = WIDTH):
    """A new page of ``browser`` at ``url`` with a window ``width`` wide, nothing fetched from outside;
    (page, console errors seen so far: a list that grows)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    if url.startswith("file:"):
        page.route("http*://**", lambda route: route.abort())
    page.goto(url, wait_until="load")
    return page, errors


def check_screen(page, errors: list[str], shot: Path) -> None:
    """At 1366 px: no element past the window, no horizontal scroll, no console error; a full-page
    screenshot kept at ``shot``."""
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH, wider_than(page, WIDTH)
    assert not wider_than(page, WIDTH)
    assert not errors, errors


def check_print(page, pdf: Path) -> int:
    """The print layout: at the printable width of A4 (the narrower paper) nothing reaches past the page;
    printed as A4 and as Letter (``pdf`` and its ``-letter`` twin kept); the A4 PDF's page count."""
    page.emulate_media(media="print")
    page.set_viewport_size({"width": PRINT_WIDTH, "height": 1000})
    try:
        too_wide = wider_than(page, PRINT_WIDTH)
        assert not too_wide, too_wide
        pdf.parent.mkdir(parents=True, exist_ok=True)
        page.pdf(path=str(pdf), format="A4", print_background=True)
        page.pdf(path=str(pdf.with_name(pdf.stem + "-letter.pdf")), format="Letter", print_background=True)
    finally:
        page.emulate_media(media="screen")
        page.set_viewport_size({"width": WIDTH, "height": 900})
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    return pdf_pages(data)


def pdf_pages(data: bytes) -> int:
    """The number of pages of a PDF (its ``/Type /Page`` objects)."""
    return len(re.findall(rb"/Type\s*/Page(?![s])", data))
