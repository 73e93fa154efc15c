"""gw's HTTP transport (gateway.client.transport) and its answers, against a real local HTTP server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import gateway.client.api_base as client_module  # where the retried submission sleeps
from gateway.client.api import GatewayClient
from gateway.client.errors import ApiError
from gateway.client.settings import ClientSettings
from gateway.client.transport import Transport, TransportError, UnusableUrl


class Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[dict] = []
        self.peers: set[tuple[str, int]] = set()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless a route closes

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.answer()

    def do_POST(self) -> None:
        self.answer()

    def answer(self) -> None:
        server: Recorder = self.server  # type: ignore[assignment]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server.peers.add(self.client_address)
        seen = {
            "method": self.command,
            "target": self.path,
            "headers": dict(self.headers),
            "body": body.decode(),
        }
        server.seen.append(seen)
        route = self.path.rsplit("/", 1)[-1].split("?")[0]
        status, payload, kind = 200, json.dumps(seen).encode(), "application/json"
        if route == "refused":
            status, payload = 404, json.dumps({"error": "not_found", "detail": "no run r-1"}).encode()
        elif route == "broken":
            status, payload, kind = 502, b"<html>bad gateway</html>", "text/html"
        elif route == "not-json":
            payload, kind = b"plain words", "text/plain"
        elif route == "slow":
            time.sleep(1.5)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if route == "hang-up":  # no "Connection: close": the client believes the connection stays open
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[Recorder]:
    recorder = Recorder()
    thread = threading.Thread(target=recorder.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        recorder.shutdown()
        recorder.server_close()
        thread.join(timeout=5)


def transport(url: str, **kwargs) -> Transport:
    return Transport(
        url, headers={"Authorization": "Bearer t0k"}, timeout_s=kwargs.pop("timeout_s", 5), **kwargs
    )


def test_requests_share_one_kept_alive_connection(server: Recorder) -> None:
    http = transport(server.url, environ={})
    answers = [http.request("GET", f"/runs/{i}") for i in range(5)]
    assert [a.status for a in answers] == [200] * 5
    assert len(server.peers) == 1
    assert server.seen[0]["headers"]["Authorization"] == "Bearer t0k"


def test_a_connection_the_server_closed_while_idle_is_replaced_before_sending(server: Recorder) -> None:
    http = transport(server.url, environ={})
    assert http.request("GET", "/hang-up").status == 200
    time.sleep(0.2)  # the server's FIN arrives
    assert http.request("POST", "/runs", json_body={"a": 1}).status == 200
    assert len(server.peers) == 2
    assert [s["target"] for s in server.seen] == ["/hang-up", "/runs"]


def test_path_prefix_query_and_json_body(server: Recorder) -> None:
    http = transport(server.url + "/gw/", environ={})
    answer = http.request(
        "POST", "/runs/check", params={"slurm_test": True, "tag": ["a b", "c"], "n": 3}, json_body={"x": "é"}
    )
    seen = answer.json()
    assert seen["target"] == "/gw/runs/check?slurm_test=true&tag=a+b&tag=c&n=3"
    assert seen["headers"]["Content-Type"] == "application/json"
    assert json.loads(seen["body"]) == {"x": "é"}
    assert http.request("POST", "/runs/r-1/cancel").json()["headers"]["Content-Length"] == "0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_listener_time_out_and_tls_to_a_plain_server_are_transport_errors(server: Recorder) -> None:
    with pytest.raises(TransportError, match="ConnectionRefused"):
        transport(f"http://127.0.0.1:{free_port()}", environ={}).request("GET", "/healthz")
    with pytest.raises(TransportError, match="timed out"):
        transport(server.url, timeout_s=0.3, environ={}).request("GET", "/slow")
    with pytest.raises(TransportError, match="SSL"):
        transport(server.url.replace("http:", "https:"), environ={}).request("GET", "/healthz")


@pytest.mark.parametrize(
    "url", ["localhost:8000", "ftp://127.0.0.1/", "http://127.0.0.1:port/", "http:///runs", "gateway"]
)
def test_an_unusable_url_is_refused_before_any_connection(url: str) -> None:
    with pytest.raises(UnusableUrl, match="gateway URL"):
        transport(url, environ={}).request("GET", "/healthz")


def test_the_environments_proxy_is_used_unless_no_proxy_names_the_host(server: Recorder) -> None:
    gateway_url = "http://gateway.example:8123/api"
    via_proxy = {"HTTP_PROXY": f"http://us%40er:p%3Ass@127.0.0.1:{server.server_address[1]}"}
    seen = transport(gateway_url, environ=via_proxy).request("GET", "/runs", params={"limit": 2}).json()
    assert seen["target"] == "http://gateway.example:8123/api/runs?limit=2"
    assert seen["headers"]["Proxy-Authorization"] == "Basic dXNAZXI6cDpzcw=="  # us@er:p:ss
    direct = transport(server.url, environ={**via_proxy, "NO_PROXY": "127.0.0.1"})
    assert direct.request("GET", "/runs").json()["target"] == "/runs"
    with pytest.raises(UnusableUrl, match="proxy"):
        transport(gateway_url, environ={"http_proxy": "socks5://127.0.0.1:1080"}).request("GET", "/")


def client(url: str, sleeps: list[float], monkeypatch: pytest.MonkeyPatch) -> GatewayClient:
    monkeypatch.setattr(client_module.time, "sleep", sleeps.append)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return GatewayClient(ClientSettings(url=url, token="t0k"), retry_pauses_s=(0.01, 0.01))


def test_the_clients_errors_carry_the_apis_kind_or_the_text(server: Recorder, monkeypatch) -> None:
    gw = client(server.url, [], monkeypatch)
    with pytest.raises(ApiError) as refused:
        gw.run("refused")
    assert (refused.value.status, refused.value.kind, refused.value.detail) == (
        404,
        "not_found",
        "no run r-1",
    )
    with pytest.raises(ApiError) as broken:
        gw.run("broken")
    assert (broken.value.status, broken.value.kind) == (502, "http_error")
    assert "bad gateway" in broken.value.detail
    with pytest.raises(ApiError) as garbled:
        gw.run("not-json")
    assert garbled.value.kind == "bad_answer" and "plain words" in garbled.value.detail
    assert gw.report("anything") != b""  # bytes routes hand back the body as it came
    assert gw.run("r-7")["headers"]["User-Agent"].startswith("gw/")


def test_a_cut_connection_retries_a_submission_but_a_bad_url_does_not(monkeypatch) -> None:
    sleeps: list[float] = []
    with pytest.raises(ApiError) as unreachable:
        client(f"http://127.0.0.1:{free_port()}", sleeps, monkeypatch).submit({"name": "x"})
    assert (unreachable.value.status, unreachable.value.kind) == (0, "server_unreachable")
    assert sleeps == [0.01, 0.01]
    sleeps.clear()
    with pytest.raises(ApiError) as bad:
        client("127.0.0.1:8000", sleeps, monkeypatch).submit({"name": "x"})
    assert bad.value.kind == "bad_url" and "GW_URL" in bad.value.detail
    assert sleeps == []
