"""Cluster entries of the site file (docs/clusters.md): a rest backend, an SSH submit host, and what a
wrong entry is told (which field, what is valid)."""

from __future__ import annotations

import json

import pytest

from gateway.core.site.clusters import ClusterSubmitHost
from gateway.core.site.schema import parse_site
from gateway.errors import SpecError

HOST = {
    "host": "login2.example.org",
    "known_hosts": "/etc/gw/kh",
    "service_user": "gateway",
    "service_key": "/etc/gw/k",
}


def host(**changes: object) -> str:
    """A submit host entry (JSON, which YAML reads) with ``changes`` over the valid one."""
    return json.dumps({**HOST, **changes})


def site(*clusters: str) -> str:
    return "clusters:\n" + "".join(f"  - {c}\n" for c in clusters) + "users: []\nprojects: []\n"


def error(*clusters: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse_site(site(*clusters))
    return str(caught.value)


def test_a_rest_cluster_and_an_ssh_cluster_become_domain_values():
    config = parse_site(
        site(
            "{name: a, backend: rest, slurm_conf: /etc/slurm-a/slurm.conf}",
            "{name: b, slurm_name: bee, submit_host: " + host(port=2222, login="sudo") + "}",
        )
    )
    rest, ssh = (c.domain() for c in config.clusters)
    assert rest.backend == "rest" and rest.slurm_conf == "/etc/slurm-a/slurm.conf"
    assert rest.restd_socket_dir is None and rest.submit_host is None  # sockets: the server's dir / a
    assert ssh.m_name == "bee"
    assert ssh.submit_host == ClusterSubmitHost(
        "login2.example.org",
        "/etc/gw/kh",
        "gateway",
        "/etc/gw/k",
        2222,
        "sudo",
        "/etc/gateway/ssh/users/{user}",
    )
    hash(ssh)  # the registry keys built backends by the cluster's definition


def test_rest_needs_the_clusters_slurm_conf():
    message = error("{name: a, backend: rest}")
    assert "clusters.0" in message and "backend rest needs slurm_conf" in message


def test_rest_takes_no_submit_host():
    message = error("{name: a, backend: rest, slurm_conf: /etc/a.conf, submit_host: " + host() + "}")
    assert "takes no submit_host" in message and "use backend cli with submit_host" in message


def test_a_socket_directory_only_for_rest():
    message = error("{name: a, backend: cli, restd_socket_dir: /run/gw-a}")
    assert "restd_socket_dir is for backend rest only" in message


def test_a_submit_host_missing_its_fields_names_each():
    message = error("{name: a, submit_host: {host: h}}")
    for field in ("known_hosts", "service_user", "service_key"):
        assert f"clusters.0.submit_host.{field}: Field required" in message


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [
        ({"login": "password"}, "submit_host.login", "'per_user_key' or 'sudo'"),
        ({"host": "h; rm -rf /"}, "submit_host.host", "not a host name or address"),
        ({"host": "root@h"}, "submit_host.host", "no user@"),
        ({"known_hosts": "kh"}, "submit_host.known_hosts", "not an absolute file path"),
        ({"service_key": "/k\n"}, "submit_host.service_key", "not an absolute file path"),
        ({"port": 0}, "submit_host.port", "greater than or equal to 1"),
        ({"service_user": "Root!"}, "submit_host.service_user", "not a valid OS user name"),
        ({"user_keys": "/etc/gw/keys"}, "submit_host", "must contain {user}"),
        ({"passwd": "x"}, "submit_host.passwd", "unknown field"),
    ],
)
def test_a_wrong_submit_host_field_is_named_with_what_is_valid(change, field, said):
    message = error("{name: a, submit_host: " + host(**change) + "}")
    assert f"clusters.0.{field}" in message and said in message, message


def test_sudo_login_needs_no_user_key_pattern():
    config = parse_site(site("{name: a, submit_host: " + host(login="sudo", user_keys="/etc/gw/keys") + "}"))
    assert config.clusters[0].domain().submit_host.login == "sudo"


def test_one_name_twice_is_refused_unless_on_another_submit_host():
    assert "reached the same way" in error("{name: a, slurm_name: x}", "{name: b, slurm_name: x}")
    config = parse_site(
        site("{name: a, slurm_name: x}", "{name: b, slurm_name: x, submit_host: " + host() + "}")
    )
    assert [c.name for c in config.clusters] == ["a", "b"]
    same = "{name: c, slurm_name: x, submit_host: " + host() + "}"
    assert "reached the same way" in error("{name: b, slurm_name: x, submit_host: " + host() + "}", same)
