"""A real `gw serve` attacked over HTTP (issue 26 items 4, 5, 7, 9): Secure cookies behind TLS only on
the proxy's word (or the public_https setting), /metrics closed to anyone without the metrics token
(loopback included), a trusted proxy's user header only once, and failed sign-ins slowed down by address
and by account with 429 and Retry-After.

Clients connect from two loopback addresses: 127.0.0.1 (the configured proxy) and 127.0.0.2 (anyone
else on the host).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.service.gw_serve import Serve, gw_serve

METRICS_TOKEN = "m" * 24
PROXY, OTHER = "127.0.0.1", "127.0.0.2"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Serve]:
    settings = {"GATEWAY_FORWARDED_ALLOW_IPS": PROXY, "GATEWAY_METRICS_TOKEN": METRICS_TOKEN}
    with gw_serve(
        tmp_path_factory.mktemp("hardening"),
        prefix="hard",
        users=("tester", "admin"),
        settings=settings,
        sync_slurm=False,
    ) as s:
        yield s


def client(serve: Serve, source: str = PROXY, **kwargs) -> httpx.Client:
    """A client of ``serve`` whose TCP connections come from ``source``."""
    return httpx.Client(
        base_url=serve.url, transport=httpx.HTTPTransport(local_address=source), timeout=30, **kwargs
    )


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """Each Set-Cookie header of ``response`` by cookie name."""
    return {v.split("=", 1)[0]: v for v in response.headers.get_list("set-cookie")}


def sign_in(c: httpx.Client, token: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """Through the form; the nonce cookie is sent back by hand (a client keeps a Secure cookie from an
    http:// URL, as a browser behind the TLS proxy would not need to)."""
    page = c.get("/ui/login", headers=headers)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    nonce = page.cookies.get("gw_csrf") or c.cookies.get("gw_csrf")
    c.cookies.clear()
    return c.post(
        "/ui/login",
        data={"csrf": csrf, "token": token},
        headers={**(headers or {}), "Cookie": f"gw_csrf={nonce}"},
        follow_redirects=False,
    )


# -- item 4: Secure cookies behind a TLS proxy --------------------------------------------------


def test_cookies_are_secure_when_the_configured_proxy_says_https(served):
    https = {"X-Forwarded-Proto": "https"}
    with client(served) as c:
        page = c.get("/ui/login", headers=https)
        assert "secure" in set_cookies(page)["gw_csrf"].lower()
        signed = sign_in(c, served.tokens["tester"], https)
        assert signed.status_code == 303, signed.text
        session = set_cookies(signed)["gw_session"].lower()
        assert "secure" in session and "httponly" in session
    with client(served) as plain:  # the proxy says nothing: plain http, no Secure
        assert "secure" not in set_cookies(plain.get("/ui/login"))["gw_csrf"].lower()


def test_anyone_else_saying_https_is_not_believed(served):
    with client(served, OTHER) as c:
        page = c.get("/ui/login", headers={"X-Forwarded-Proto": "https"})
        assert page.status_code == 200
        assert "secure" not in set_cookies(page)["gw_csrf"].lower()
    with client(served) as twice:  # from the proxy, but the header twice: ignored
        page = twice.get("/ui/login", headers=[("X-Forwarded-Proto", "https"), ("X-Forwarded-Proto", "http")])
        assert "secure" not in set_cookies(page)["gw_csrf"].lower()


def test_public_https_makes_every_cookie_secure(tmp_path_factory):
    with (
        gw_serve(
            tmp_path_factory.mktemp("public"),
            prefix="pub",
            settings={"GATEWAY_PUBLIC_HTTPS": "true"},
            sync_slurm=False,
        ) as s,
        client(s, OTHER) as c,
    ):
        assert "secure" in set_cookies(c.get("/ui/login"))["gw_csrf"].lower()
        session = set_cookies(sign_in(c, s.tokens["tester"]))["gw_session"].lower()
        assert "secure" in session


# -- item 5: /metrics needs the metrics token, wherever the scraper is ---------------------------


def test_metrics_need_the_metrics_token_even_from_loopback(served):
    with client(served) as c:
        anonymous = c.get("/metrics")
        assert anonymous.status_code == 403 and "GATEWAY_METRICS_TOKEN" in anonymous.json()["detail"]
        admin = c.get("/metrics", headers={"Authorization": f"Bearer {served.tokens['admin']}"})
        assert admin.status_code == 403
        scraped = c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert scraped.status_code == 200 and "gateway_runs" in scraped.text


def test_without_a_metrics_token_nobody_scrapes(tmp_path_factory):
    with gw_serve(tmp_path_factory.mktemp("nometrics"), prefix="nom", sync_slurm=False) as s, client(s) as c:
        closed = c.get("/metrics")
        assert closed.status_code == 403 and "metrics-scope token" in closed.json()["detail"]


# -- item 9: failed sign-ins back off ------------------------------------------------------------------


def locked_out(c: httpx.Client, headers: dict[str, str], *, at_least_s: int) -> list[httpx.Response]:
    """Wrong tries from ``c`` until the answer is a 429 asking for ``at_least_s`` seconds or more; while a
    shorter lock holds, wait it out (a locked address's tries are refused untried, so they do not count)."""
    answers = []
    for _ in range(40):
        answers.append(c.get("/runs", headers=headers))
        if answers[-1].status_code == 429:
            wait_s = int(answers[-1].headers["Retry-After"])
            if wait_s >= at_least_s:
                return answers
            time.sleep(wait_s)
    pytest.fail(f"no lock of {at_least_s} s: {[a.status_code for a in answers]}")


def test_wrong_tokens_from_one_address_are_slowed_down_and_others_are_not(served):
    wrong = {"Authorization": "Bearer gwt_" + "w" * 43}
    with client(served, OTHER) as attacker, client(served) as bystander:
        answers = locked_out(attacker, wrong, at_least_s=8)
        assert [a.status_code for a in answers[:10]] == [401] * 10  # ten free tries, then the backoff
        assert [int(a.headers["Retry-After"]) for a in answers if a.status_code == 429] == [1, 2, 4, 8]
        throttled = answers[-1].json()
        assert throttled["error"] == "too_many_attempts" and "try again in" in throttled["detail"]
        # while locked, even a good token from that address waits: the lock is no oracle
        good = {"Authorization": f"Bearer {served.tokens['tester']}"}
        assert attacker.get("/runs", headers=good).status_code == 429
        assert bystander.get("/runs", headers=good).status_code == 200  # another address is not locked
        page = sign_in(attacker, served.tokens["tester"])
        assert page.status_code == 429 and int(page.headers["Retry-After"]) >= 1
        assert "too many failed sign-ins" in page.text


def test_guesses_at_one_account_lock_that_account(served):
    """A guess carrying a real token's prefix counts for that token's user, whatever address it comes
    from: 14 guesses from 14 addresses lock the account (for 8 s), not the addresses."""
    tester = served.tokens["tester"]
    for i in range(14):
        guess = {"Authorization": f"Bearer {tester[:12]}{'x' * (len(tester) - 12)}"}
        with client(served, f"127.0.1.{i + 1}") as c:
            assert c.get("/runs", headers=guess).status_code == 401
    with client(served) as c:
        own = c.get("/runs", headers={"Authorization": f"Bearer {tester}"})
        assert own.status_code == 429 and "for user tester" in own.json()["detail"], own.text
        admin = c.get("/runs", headers={"Authorization": f"Bearer {served.tokens['admin']}"})
        assert admin.status_code == 200  # another account from the same address: not locked
