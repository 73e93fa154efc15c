"""Provenance readers against real git repos, real venvs and real files made in tmp_path."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.adapters.provenance import code_info, image_info
from gateway.adapters.runhost_agent import python_env as python_env_info

# A fixed identity and no user or system config, so the tests do not depend on the machine's git setup.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repo with one commit on branch main: a.txt, a .gitignore for *.log, and sub/b.txt."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    (path / ".gitignore").write_text("*.log\n")
    (path / "sub").mkdir()
    (path / "sub" / "b.txt").write_text("bee\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


def test_clean_repo(repo: Path):
    info = code_info(str(repo))
    assert info == {
        "repo": str(repo.resolve()),
        "commit": git(repo, "rev-parse", "HEAD"),
        "branch": "main",
        "dirty": False,
        "diff_sha256": None,
        "untracked": 0,
    }
    assert len(info["commit"]) == 40
    json.dumps(info)


def test_subdirectory_names_the_top_level(repo: Path):
    assert code_info(str(repo / "sub")) == code_info(str(repo))


def test_tracked_change_is_dirty_and_hash_follows_the_change(repo: Path):
    (repo / "a.txt").write_text("two\n")
    first = code_info(str(repo))
    assert first["dirty"] and first["untracked"] == 0 and len(first["diff_sha256"]) == 64
    (repo / "a.txt").write_text("three\n")
    second = code_info(str(repo))
    assert second["diff_sha256"] != first["diff_sha256"]
    (repo / "a.txt").write_text("two\n")
    assert code_info(str(repo))["diff_sha256"] == first["diff_sha256"]


def test_staged_change_is_dirty(repo: Path):
    (repo / "sub" / "b.txt").write_text("changed\n")
    git(repo, "add", "sub/b.txt")
    info = code_info(str(repo / "sub"))
    assert info["dirty"] and info["diff_sha256"]


def test_untracked_file_counts_and_its_content_is_hashed(repo: Path):
    (repo / "new file\nwith newline.py").write_text("x = 1\n")
    first = code_info(str(repo))
    assert first["dirty"] and first["untracked"] == 1 and first["diff_sha256"]
    (repo / "new file\nwith newline.py").write_text("x = 2\n")
    assert code_info(str(repo))["diff_sha256"] != first["diff_sha256"]


def test_ignored_file_does_not_count(repo: Path):
    (repo / "train.log").write_text("noise\n")
    (repo / "sub" / "deep.log").write_text("noise\n")
    info = code_info(str(repo))
    assert not info["dirty"] and info["untracked"] == 0 and info["diff_sha256"] is None


def test_names_with_spaces_in_tracked_and_untracked_files(repo: Path):
    (repo / "with space.txt").write_text("s\n")
    git(repo, "add", "with space.txt")
    git(repo, "commit", "-q", "-m", "space")
    (repo / "with space.txt").write_text("t\n")
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "u v.txt").write_text("u\n")
    info = code_info(str(repo / "dir with space"))
    assert info["dirty"] and info["untracked"] == 1


def test_rename_is_dirty(repo: Path):
    git(repo, "mv", "a.txt", "renamed.txt")
    info = code_info(str(repo))
    assert info["dirty"] and info["untracked"] == 0


def test_repo_without_commits(tmp_path: Path):
    git(tmp_path, "init", "-q", "-b", "trunk")
    info = code_info(str(tmp_path))
    assert info == {
        "repo": str(tmp_path.resolve()),
        "commit": None,
        "branch": "trunk",
        "dirty": False,
        "diff_sha256": None,
        "untracked": 0,
    }
    (tmp_path / "a.py").write_text("a\n")
    untracked = code_info(str(tmp_path))
    assert untracked["dirty"] and untracked["untracked"] == 1 and untracked["diff_sha256"]
    git(tmp_path, "add", "a.py")
    staged = code_info(str(tmp_path))
    assert staged["dirty"] and staged["untracked"] == 0 and staged["commit"] is None
    assert staged["diff_sha256"] != untracked["diff_sha256"]


def test_detached_head(repo: Path):
    (repo / "a.txt").write_text("second\n")
    git(repo, "commit", "-q", "-am", "second")
    first = git(repo, "rev-parse", "HEAD~1")
    git(repo, "checkout", "-q", "--detach", first)
    info = code_info(str(repo))
    assert info["branch"] is None and info["commit"] == first and not info["dirty"]


def test_not_a_repo_gives_none(tmp_path: Path):
    assert code_info(str(tmp_path)) is None
    assert code_info(str(tmp_path / "missing")) is None
    assert code_info("") is None


def test_inside_git_dir_gives_none(repo: Path):
    assert code_info(str(repo / ".git")) is None


def test_remote_url_is_the_repo_without_credentials(repo: Path):
    git(repo, "remote", "add", "origin", "git@github.com:org/proj.git")
    assert code_info(str(repo))["repo"] == "git@github.com:org/proj.git"
    git(repo, "remote", "set-url", "origin", "https://user:s3cret@example.org/org/proj.git")
    assert code_info(str(repo))["repo"] == "https://example.org/org/proj.git"


# ---------------------------------------------------------------- python environment


def _dist_info(site: Path, dirname: str, metadata: str | None) -> None:
    entry = site / dirname
    entry.mkdir()
    if metadata is not None:
        (entry / ("METADATA" if dirname.endswith(".dist-info") else "PKG-INFO")).write_text(metadata)


@pytest.fixture
def venv(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    (site,) = path.glob("lib/python*/site-packages")
    return path, site


def test_real_venv_with_hand_made_packages(venv: tuple[Path, Path]):
    path, site = venv
    empty = python_env_info(str(path))
    assert empty["packages"] == 0 and empty["python"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    _dist_info(
        site, "Foo_Bar-1.0.dist-info", "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.0\n\nName: x\n"
    )
    _dist_info(site, "baz-2.0.dist-info", None)  # no METADATA: read from the name
    _dist_info(site, "old_pkg-0.3-py3.11.egg-info", "Metadata-Version: 1.0\nName: old.pkg\nVersion: 0.3\n")
    (site / "single-1.2.egg-info").write_text("Name: single\nVersion: 1.2\n")  # egg-info as a file
    info = python_env_info(str(path))
    lines = "baz==2.0\nfoo-bar==1.0\nold-pkg==0.3\nsingle==1.2\n"
    assert info == {
        "venv": str(path),
        "python": empty["python"],
        "packages": 4,
        "packages_sha256": hashlib.sha256(lines.encode()).hexdigest(),
    }
    _dist_info(site, "foo.bar-1.0.dist-info", "Name: foo.bar\nVersion: 1.0\n")  # same after PEP 503
    assert python_env_info(str(path)) == info


def test_project_venv_has_packages():
    venv = Path(__file__).resolve().parents[2] / ".venv"
    info = python_env_info(str(venv))
    assert "error" not in info and info["packages"] > 10 and info["python"]


def test_bad_venv_paths(tmp_path: Path):
    assert "not a directory" in python_env_info(str(tmp_path / "nope"))["error"]
    assert "site-packages" in python_env_info(str(tmp_path))["error"]


# ---------------------------------------------------------------- images


def test_image_digest_reference():
    ref = "docker://ghcr.io/org/img@sha256:" + "AB" * 32
    assert image_info(ref) == {"image": ref, "digest": "sha256:" + "ab" * 32, "how": "reference"}


def test_image_tag_has_no_digest():
    assert image_info("docker://python:3.11") == {
        "image": "docker://python:3.11",
        "digest": None,
        "how": None,
    }


def test_missing_image_file(tmp_path: Path):
    info = image_info(str(tmp_path / "missing.sif"))
    assert info["digest"] is None and "missing.sif" in info["error"]
    assert "not a regular file" in image_info(str(tmp_path))["error"]


def test_image_file_is_hashed_once_with_a_cache(tmp_path: Path):
    image = tmp_path / "img.sif"
    content = os.urandom(3 * (1 << 20) + 17)  # more than the read buffer
    image.write_bytes(content)
    cache = tmp_path / "cache.json"
    expected = "sha256:" + hashlib.sha256(content).hexdigest()
    assert image_info(str(image)) == {"image": str(image), "digest": expected, "how": "file"}
    assert image_info(str(image), cache_path=str(cache))["digest"] == expected
    entry = json.loads(cache.read_text())["entries"][str(image)]
    assert entry["digest"] == expected and entry["size"] == len(content)

    # Same size, inode and mtime but other bytes: the cached digest proves the file was not re-read.
    stamp = image.stat()
    with image.open("r+b") as fh:
        fh.write(b"\0" * 16)
    os.utime(image, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert image.stat().st_ino == stamp.st_ino
    assert image_info(str(image), cache_path=str(cache))["digest"] == expected

    # A new mtime makes it hash again.
    os.utime(image, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
    changed = image_info(str(image), cache_path=str(cache))["digest"]
    assert changed == "sha256:" + hashlib.sha256(image.read_bytes()).hexdigest() != expected


def test_damaged_cache_is_ignored(tmp_path: Path):
    image = tmp_path / "img.sif"
    image.write_bytes(b"abc")
    cache = tmp_path / "cache.json"
    cache.write_text("{not json")
    info = image_info(str(image), cache_path=str(cache))
    assert info["digest"] == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert str(image) in json.loads(cache.read_text())["entries"]
