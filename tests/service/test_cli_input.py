"""gw reads spec, script and site files through one bounded reader: a usage error (exit 2), fast.

Each case is a real ``gw`` process. The files are refused before any request,
so ``GW_URL`` names a port where nothing listens: a gw that got past its
reader would exit 69 (unavailable), not 2. ``/dev/zero``, a FIFO nothing ever
writes to, a directory, a 2 GiB (sparse) file, a billion-laughs spec and a
100k-deep one each hung, ran out of memory or ended in a traceback before.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cpu_clock import cpu_time
from tests.service.gw_serve import GW, free_port
from tests.unit.test_yaml_input import billion_laughs

SPEC = "name: x\nproject: test\nqueue: cpu\ncommand: 'true'\n"
FAST_S = 15.0  # CPU seconds of a gw process, imports included; the refusal itself takes milliseconds


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {
        **os.environ,
        "GW_URL": f"http://127.0.0.1:{free_port()}",
        "GW_TOKEN": "gwt_none",
        "GW_CONFIG": str(tmp_path / "none.toml"),
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/unused.db",
        "COLUMNS": "200",
    }


def gw(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    with cpu_time() as spent:
        result = subprocess.run(
            [*GW, *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    assert spent.seconds < FAST_S, f"gw {args} took {spent.seconds:.1f} CPU seconds"
    return result


def usage_error(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for word in words:
        assert word in result.stderr, (word, result.stderr[-2000:])


@pytest.fixture
def fifo(tmp_path) -> Path:
    """A FIFO that nothing ever opens for writing: reading it would block forever."""
    path = tmp_path / "spec.fifo"
    os.mkfifo(path)
    return path


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [["submit"], ["rerun", "r-0000000000000000", "--spec"]])
def test_special_files_are_refused_as_specs(env, tmp_path, fifo, command):
    usage_error(gw(env, *command, "/dev/zero"), "/dev/zero", "not a regular file", "character device")
    usage_error(gw(env, *command, str(fifo)), "not a regular file", "FIFO")
    usage_error(gw(env, *command, str(tmp_path)), "not a regular file", "directory")
    usage_error(gw(env, *command, str(tmp_path / "missing.yaml")), "missing.yaml", "No such file")


def test_a_huge_spec_file_is_refused_by_its_size(env, tmp_path):
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(2 << 30)  # 2 GiB, sparse: nothing is written to disk
    usage_error(gw(env, "submit", str(big)), "2147483648 bytes", "at most 1048576")
    # 25 million list items: refused by size before anything parses them
    huge_list = tmp_path / "list.yaml"
    huge_list.write_text(SPEC + "tags: [" + "a," * 25_000_000 + "a]\n")
    usage_error(gw(env, "submit", str(huge_list)), "at most 1048576")


def test_bombs_in_spec_files_are_refused(env, tmp_path):
    laughs = write(tmp_path, "laughs.yaml", SPEC + billion_laughs(indent="  ", key="params"))
    usage_error(gw(env, "submit", str(laughs)), "anchor", "line 6")
    deep = write(tmp_path, "deep.yaml", SPEC + "params: {x: " + "[" * 100_000 + "]" * 100_000 + "}\n")
    usage_error(gw(env, "submit", str(deep)), "nested more than 64 levels")
    deep_json = write(tmp_path, "deep.json", '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}")
    usage_error(gw(env, "submit", str(deep_json)), "nested more than 64 levels")
    many = write(tmp_path, "many.yaml", SPEC + "tags: [" + "a," * 200_000 + "a]\n")
    usage_error(gw(env, "submit", str(many)), "more than 100000 values")


def test_duplicate_keys_name_both_lines(env, tmp_path):
    spec = write(tmp_path, "dup.yaml", SPEC + "resources: {mem_gb: 1}\nqueue: gpu\n")
    usage_error(gw(env, "submit", str(spec)), "duplicate key 'queue'", "line 6", "line 3")


def test_nan_and_bad_text_in_a_spec_file(env, tmp_path):
    nan = write(tmp_path, "nan.yaml", SPEC + "resources: {mem_gb: .nan}\n")
    usage_error(gw(env, "submit", str(nan)), "finite")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(SPEC.encode() + b"tags: [caf\xe9]\n")
    usage_error(gw(env, "submit", str(latin1)), "not UTF-8", "line 5")


def test_script_file_of_a_spec_goes_through_the_same_reader(env, tmp_path, fifo):
    base = "name: x\nproject: test\nqueue: cpu\n"
    for target, word in (("/dev/zero", "character device"), (str(fifo), "FIFO")):
        spec = write(tmp_path, "s.yaml", base + f"script_file: {target}\n")
        usage_error(gw(env, "submit", str(spec)), "script_file", word)


def test_gw_sbatch_scripts_go_through_the_same_reader(env, tmp_path, fifo):
    usage_error(gw(env, "sbatch", "-A", "test", "/dev/zero"), "not a regular file")
    usage_error(gw(env, "sbatch", "-A", "test", str(fifo)), "FIFO")
    big = tmp_path / "big.sh"
    with big.open("wb") as handle:
        handle.truncate(2 << 30)
    usage_error(gw(env, "sbatch", str(big)), "at most 1048576")


def test_site_files_go_through_the_same_reader(env, tmp_path, fifo):
    usage_error(gw(env, "admin", "apply", "/dev/zero"), "not a regular file")
    usage_error(gw(env, "admin", "apply", str(fifo)), "FIFO")
    laughs = write(tmp_path, "site.yaml", "users: []\n" + billion_laughs(indent="  ", key="x-laughs"))
    usage_error(gw(env, "admin", "apply", str(laughs)), "anchor", "site file")
    dup = write(tmp_path, "dup.yaml", "users: []\nprojects: []\nusers: []\n")
    usage_error(gw(env, "admin", "apply", str(dup)), "duplicate key 'users'", "line 3", "line 1")
