"""The web pages: server-rendered (Jinja2), served by `gw serve` beside the API under /ui.

An interface layer like ``gateway.api``: each page calls the same services
the API does and holds no decisions of its own. htmx (vendored in
``static/``, with its licence) swaps in fragments the server renders: the
run list's rows and a run's state while they live, a log tail that
follows, the submit form's choices after a project or queue change.
Nothing is fetched from the internet and no page has inline script.
"""

from gateway.web.app import mount_web

__all__ = ["mount_web"]
