"""The pure parts of environments: lock files, package diffs, drift, OSV ranges, the launch record."""

from __future__ import annotations

import pytest

from gateway.core.envs.advisories import parse_advisory, scan, worst
from gateway.core.envs.diff import diff_lines, is_empty, package_diff
from gateway.core.envs.lockfile import parse_lock
from gateway.core.envs.record import content_digest, packages_sha256

H = "a" * 64


def test_a_lock_pins_every_requirement_with_hashes():
    text = (
        "# via pip-compile --generate-hashes\n"
        f"Torch_Nightly[cpu]==2.3.0 ; python_version >= '3.9' \\\n"
        f"    --hash=sha256:{H} \\\n    --hash=sha256:{'b' * 64}\n"
        f"numpy==1.26.4 --hash=sha256:{H}  # via torch\n"
    )
    (numpy, torch) = parse_lock(text)
    assert (numpy.name, numpy.version, numpy.hashes) == ("numpy", "1.26.4", (H,))
    assert (torch.name, torch.version, len(torch.hashes)) == ("torch-nightly", "2.3.0", 2)
    assert torch.marker == "python_version >= '3.9'"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("torch>=2\n", "is not pinned"),
        ("torch==2.0\n", "has no --hash"),
        (f"-e ./local --hash=sha256:{H}\n", "option '-e'"),
        (f"--index-url https://x\nnumpy==1 --hash=sha256:{H}\n", "option '--index-url'"),
        (f"numpy==1 --hash=sha256:{H}\nnumpy==2 --hash=sha256:{H}\n", "pinned twice"),
        ("# nothing\n", "pins no package"),
        (f"a==1 --hash=sha256:{H}\nGW_LOCK_END\n", "may not contain"),
    ],
)
def test_a_lock_that_is_not_one_is_refused_saying_why(text, words):
    with pytest.raises(ValueError, match=words):
        parse_lock(text)


def test_package_diff_names_each_direction_exactly():
    old = {"torch": "2.1.0", "numpy": "1.26.4", "six": "1.16", "odd": "abc", "same": "1.0"}
    new = {"torch": "2.3.0", "numpy": "1.24.0", "tqdm": "4.66", "odd": "abd", "same": "1.0"}
    d = package_diff(old, new)
    assert d == {
        "added": [{"name": "tqdm", "version": "4.66"}],
        "removed": [{"name": "six", "version": "1.16"}],
        "upgraded": [{"name": "torch", "from": "2.1.0", "to": "2.3.0"}],
        "downgraded": [{"name": "numpy", "from": "1.26.4", "to": "1.24.0"}],
        "changed": [{"name": "odd", "from": "abc", "to": "abd"}],
        "unchanged": 1,
    }
    assert diff_lines(d) == [
        "+ tqdm 4.66",
        "- six 1.16",
        "^ torch 2.1.0 -> 2.3.0",
        "v numpy 1.26.4 -> 1.24.0",
        "~ odd abc -> abd",
    ]
    assert is_empty(package_diff(old, dict(old))) and not is_empty(d)


def test_digests_are_over_kind_and_content_and_the_installed_set_hash_matches_the_run_hosts():
    assert content_digest("modules", {"modules": ["a"]}) != content_digest("modules", {"modules": ["b"]})
    assert content_digest("modules", {"modules": ["a"]}) != content_digest("image", {"modules": ["a"]})
    import hashlib

    assert packages_sha256({"b": "2", "a": "1"}) == hashlib.sha256(b"a==1\nb==2\n").hexdigest()


def _osv(events=None, versions=None, eco="PyPI", name="pkg", severity="HIGH"):
    item = {"package": {"ecosystem": eco, "name": name}}
    if events is not None:
        item["ranges"] = [{"type": "ECOSYSTEM", "events": events}]
    if versions is not None:
        item["versions"] = versions
    return parse_advisory(
        {"id": f"A-{name}-{severity}", "affected": [item], "database_specific": {"severity": severity}}
    )


@pytest.mark.parametrize(
    ("events", "version", "hit"),
    [
        ([{"introduced": "0"}, {"fixed": "1.1"}], "1.0", True),
        ([{"introduced": "0"}, {"fixed": "1.1"}], "1.1", False),
        ([{"introduced": "0"}, {"fixed": "1.1"}], "1.1rc1", True),
        ([{"introduced": "1.0"}, {"last_affected": "1.2"}], "1.2", True),
        ([{"introduced": "1.0"}, {"last_affected": "1.2"}], "1.2.1", False),
        ([{"introduced": "1.0"}, {"last_affected": "1.2"}], "0.9", False),
        ([{"introduced": "0"}, {"fixed": "1.0"}, {"introduced": "2.0"}, {"fixed": "2.5"}], "1.5", False),
        ([{"introduced": "0"}, {"fixed": "1.0"}, {"introduced": "2.0"}, {"fixed": "2.5"}], "2.2", True),
        ([{"introduced": "2.0"}], "9.9", True),
    ],
)
def test_osv_ecosystem_ranges(events, version, hit):
    assert bool(scan({"pkg": version}, [_osv(events)])) is hit


def test_osv_version_lists_names_and_ecosystems_and_severity_order():
    found = scan(
        {"Pkg": "1.0", "other": "2.0"},
        [
            _osv(versions=["1.0"], severity="LOW"),
            _osv(versions=["1.0"], eco="npm", name="other"),
            _osv([{"introduced": "0"}], name="other", severity="CRITICAL"),
        ],
    )
    assert [(f.package, f.severity) for f in found] == [("other", "CRITICAL"), ("pkg", "LOW")]
    assert worst(found) == "CRITICAL" and worst([]) is None
    with pytest.raises(ValueError, match="id"):
        parse_advisory({"affected": []})
