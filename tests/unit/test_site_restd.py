"""A cluster's site-run slurmrestd in the site file (docs/clusters.md, ``clusters[].restd``), and the
tokens the gateway signs for it: what a wrong entry is told, and a token Slurm's auth/jwt reads."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from gateway.adapters.slurm.restd_site import JwtTokens, SiteRestd, sign_token
from gateway.core.site.clusters import ClusterRestd
from gateway.core.site.restd import parse_url
from gateway.core.site.schema import parse_site
from gateway.errors import SlurmUnavailable, SpecError, SubmitRejected

RESTD = {"url": "http://127.0.0.1:6830", "jwt_key": "/var/lib/slurm-c2/jwt_hs256.key"}


def entry(**changes: object) -> str:
    """gwlocal2 on a site-run slurmrestd, ``changes`` over the valid entry (JSON, which YAML reads)."""
    return json.dumps({"name": "c2", "backend": "rest", "restd": RESTD, **changes})


def site(*clusters: str) -> str:
    return "clusters:\n" + "".join(f"  - {c}\n" for c in clusters) + "users: []\nprojects: []\n"


def error(*clusters: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse_site(site(*clusters))
    return str(caught.value)


def test_a_site_run_daemon_needs_no_slurm_conf_and_becomes_a_domain_value():
    (cluster,) = (c.domain() for c in parse_site(site(entry())).clusters)
    assert cluster.restd == ClusterRestd("http://127.0.0.1:6830", "/var/lib/slurm-c2/jwt_hs256.key", 300)
    assert cluster.m_name == "c2"  # sacct, --test-only and the ledger: -M c2 (docs/clusters.md)
    hash(cluster)


def test_a_unix_socket_url_and_a_lifespan():
    restd = {"url": "unix:///run/slurmrestd/s.sock", "jwt_key": "/k", "token_lifespan_s": 120}
    (cluster,) = (c.domain() for c in parse_site(site(entry(restd=restd))).clusters)
    assert cluster.restd is not None and parse_url(cluster.restd.url) == "/run/slurmrestd/s.sock"
    assert parse_url("http://[::1]:6820/") == ("::1", 6820)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"backend": "cli"}, "restd (a site-run slurmrestd) needs backend: rest"),
        ({"backend": None}, "needs backend: rest"),
        ({"restd_socket_dir": "/run/gw"}, "takes neither restd_socket_dir nor submit_host"),
        ({"restd": {**RESTD, "url": "https://h:6830"}}, "https is not supported"),
        ({"restd": {**RESTD, "url": "http://h"}}, "is not a slurmrestd address; use http://HOST:PORT"),
        ({"restd": {**RESTD, "url": "http://u@h:1"}}, "no user@"),
        ({"restd": {**RESTD, "url": "http://h:70000"}}, "port 70000"),
        ({"restd": {**RESTD, "url": "unix:/rel.sock"}}, "unix:///PATH"),
        ({"restd": {**RESTD, "jwt_key": "key"}}, "not an absolute file path"),
        ({"restd": {**RESTD, "token_lifespan_s": 5}}, "greater than or equal to 30"),
        ({"restd": {"url": RESTD["url"]}}, "restd.jwt_key: Field required"),
        ({"restd": {**RESTD, "token": "x"}}, "unknown field"),
    ],
)
def test_a_wrong_restd_entry_is_named_with_what_is_valid(changes, said):
    message = error(entry(**changes))
    assert "clusters.0" in message and said in message, message


def _decode(part: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_a_token_is_hs256_with_the_users_name_in_sun():
    token = sign_token(b"k" * 32, "gwtalice", now_s=1000, lifespan_s=300)
    header, claims, signature = token.split(".")
    assert _decode(header) == {"alg": "HS256", "typ": "JWT"}
    assert _decode(claims) == {"iat": 1000, "exp": 1300, "sun": "gwtalice"}
    expected = hmac.new(b"k" * 32, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)) == expected
    assert "=" not in token  # base64url without padding (RFC 7515)


def test_tokens_are_kept_per_user_and_a_missing_key_names_the_file_only(tmp_path):
    key = tmp_path / "jwt.key"
    key.write_bytes(b"s3cret-key-bytes" * 2)
    tokens = JwtTokens(key, lifespan_s=300, cluster="c2")
    alice = tokens.token("alice")
    assert tokens.token("alice") == alice and tokens.token("bob") != alice
    key.unlink()
    assert tokens.token("alice") == alice  # held until half its life is gone
    tokens.forget()
    with pytest.raises(SlurmUnavailable) as caught:
        tokens.token("alice")
    assert f"cluster c2: cannot read the JWT key file {key} (restd.jwt_key)" in str(caught.value)
    key.write_bytes(b"")
    with pytest.raises(SlurmUnavailable, match="is empty"):
        tokens.token("alice")


def test_the_site_daemon_acts_as_no_root_and_no_odd_name():
    site_restd = SiteRestd(ClusterRestd("http://127.0.0.1:1", "/nonexistent"), cluster="c2")
    with pytest.raises(SubmitRejected, match="does not act as root"):
        site_restd.connection("root")
    with pytest.raises(SubmitRejected, match="not an OS user name"):
        site_restd.connection("a b")
