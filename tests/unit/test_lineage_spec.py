"""Dataset references, output patterns, metrics files and code in run specs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gateway.adapters.files import scan
from gateway.core.sbatch.preflight import InputCheck, template_context
from gateway.core.spec.lineage import DatasetRef, check_relative, dataset_env_var, parse_dataset_ref
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError

BASE = {"name": "n", "project": "p", "queue": "q", "command": "true"}


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("tiny@latest", DatasetRef(None, "tiny", "latest")),
        ("tiny@3", DatasetRef(None, "tiny", "3")),
        ("tiny@v12", DatasetRef(None, "tiny", "12")),
        ("other/corpus.v2@v007", DatasetRef("other", "corpus.v2", "7")),
        ("c@sha256:0123abcd", DatasetRef(None, "c", "sha256:0123abcd")),
    ],
)
def test_dataset_refs_parse(text, ref):
    parsed = parse_dataset_ref(text)
    assert parsed == ref
    assert parsed.number == (int(ref.version) if ref.version.isdigit() else None)
    assert parsed.digest_prefix == (ref.version[7:] if ref.version.startswith("sha256:") else None)


@pytest.mark.parametrize(
    "text",
    [
        "tiny",
        "tiny@",
        "@1",
        "tiny@0",
        "tiny@v",
        "a/b/c@1",
        "tiny@sha256:abc",
        "tiny@SHA256:0123abcd",
        "t y@1",
    ],
)
def test_bad_dataset_refs_say_what_is_valid(text):
    with pytest.raises(ValueError, match=r"\[project/\]name@version|numbered from 1"):
        parse_dataset_ref(text)


def test_env_var_names():
    assert dataset_env_var("tiny-text") == "GW_DATASET_TINY_TEXT"
    assert dataset_env_var("imagenet.mini_2") == "GW_DATASET_IMAGENET_MINI_2"


@pytest.mark.parametrize("value", ["/abs", "../up", "a/../b", "a//b", "./a", "a b", "a;rm", ""])
def test_relative_paths_stay_inside_the_run_dir(value):
    with pytest.raises(ValueError):
        check_relative(value, "output pattern", glob=True)


def test_metrics_files_are_not_globs():
    assert check_relative("outputs/**/*.pt", "output pattern", glob=True) == "outputs/**/*.pt"
    with pytest.raises(ValueError, match="names one file"):
        check_relative("outputs/*.json", "metrics file", glob=False)


def test_spec_accepts_refs_objects_and_paths_and_keeps_their_order():
    spec = build_spec(
        {
            **BASE,
            "datasets": ["a@latest", {"ref": "o/b@2", "verify": "digest"}, "/data/c"],
            "outputs": ["outputs/*"],
            "metrics": ["outputs/m.json", "outputs/m.jsonl"],
            "code": {"repo": "/src/x", "commit": "abcdef1", "dirty": True, "diff_sha256": "0" * 64},
            "container_image": "/images/x.sif",
            "container_digest": "SHA256:" + "A" * 64,
        }
    )
    assert [(u.ref, u.verify) for u in spec.dataset_uses()] == [("a@latest", "exists"), ("o/b@2", "digest")]
    assert spec.dataset_paths() == ["/data/c"]
    assert spec.container_digest == "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"datasets": ["a@1", "o/a@2"]}, "share the name"),
        ({"datasets": ["relative/path"]}, "not valid"),
        ({"datasets": [{"ref": "a@1", "verify": "sometimes"}]}, "verify"),
        ({"outputs": ["/etc/*"]}, "inside the run directory"),
        ({"metrics": ["outputs/m.csv"]}, "must end in .json"),
        ({"code": {"repo": "r", "commit": "not-hex"}}, "git object id"),
        ({"code": {"commit": "abcdef1"}}, "repo"),
        ({"container_digest": "sha256:" + "a" * 64}, "without container_image"),
        ({"container_image": "x", "container_digest": "md5:abc"}, "sha256"),
    ],
)
def test_bad_lineage_fields_are_refused_with_the_field_path(fields, message):
    with pytest.raises(SpecError, match=message):
        build_spec({**BASE, **fields})


def test_preflight_context_carries_the_manifest_only_for_verify_digest():
    spec = build_spec({**BASE, "datasets": ["a@1", "b@1"]})
    common = {"digest": "d" * 64, "kind": "directory", "file_count": 2}
    inputs = [
        InputCheck(
            name="a",
            ref="p/a@1",
            path="/d/a",
            env_var="GW_DATASET_A",
            manifest="/r/inputs/a@1.sha256",
            **common,
        ),
        InputCheck(name="b", ref="p/b@1", path="/d/b", env_var="GW_DATASET_B", **common),
    ]
    checks = template_context(spec, inputs)["preflight"]["inputs"]
    assert checks[0]["manifest"] == {
        "file": "/r/inputs/a@1.sha256",
        "kind": "directory",
        "count": 2,
        "ref_json": "p/a@1",
    }
    assert checks[1]["manifest"] is None and checks[1]["path"] == "/d/b"


# ---- the digest pre-flight under bash, without Slurm ------------------------------------------------


def run_with_manifest(tmp_path, data: Path, kind: str, registered) -> subprocess.CompletedProcess:
    """Render a spec reading one registered version, write its manifest as the gateway does, run it."""
    from gateway.core.lineage.manifest import sha256sum_text
    from gateway.core.sbatch.context import SubmitTarget
    from gateway.core.sbatch.render import render_sbatch
    from gateway.core.sbatch.templates import build_template_env

    run_dir = tmp_path / "run"
    (run_dir / "inputs").mkdir(parents=True, exist_ok=True)
    manifest = run_dir / "inputs" / "d@1.sha256"
    manifest.write_bytes(sha256sum_text(registered).encode("utf-8", "surrogateescape"))
    check = InputCheck(
        name="d",
        ref="p/d@1",
        digest="0" * 64,
        path=str(data),
        env_var="GW_DATASET_D",
        kind=kind,
        file_count=len(registered),
        manifest=str(manifest),
    )
    spec = build_spec({**BASE, "command": 'echo "ran on $GW_DATASET_D"', "datasets": ["d@1"]})
    text = render_sbatch(
        spec,
        build_template_env(),
        run_id="r-m",
        run_dir=str(run_dir),
        target=SubmitTarget("q"),
        inputs=[check],
    ).text
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"SLURM_JOB_ID": "7"}
    return subprocess.run(["bash", "-s"], input=text.encode(), capture_output=True, env=env, check=False)


def steps_of(tmp_path) -> str:
    return (tmp_path / "run" / "steps-7.jsonl").read_text()


def test_digest_preflight_passes_odd_names_and_catches_a_changed_byte(tmp_path):
    data = tmp_path / "data"
    (data / "sub dir").mkdir(parents=True)
    for name in ("plain.txt", "sub dir/back\\slash", "new\nline", "caf\u00e9.bin"):
        (data / name).write_bytes(name.encode() * 3)
    registered = scan(data).entries
    proc = run_with_manifest(tmp_path, data, "directory", registered)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == f"ran on {data}\n"

    (data / "new\nline").write_bytes(b"changed")
    proc = run_with_manifest(tmp_path / "again", data, "directory", registered)
    assert proc.returncode == 80
    assert "does not match its registered manifest" in proc.stderr.decode()
    assert "dataset digest mismatch: p/d@1" in steps_of(tmp_path / "again")


def test_digest_preflight_of_a_file_version_and_of_an_added_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"a")
    file_version = scan(data / "a.bin").entries
    assert run_with_manifest(tmp_path / "f", data / "a.bin", "file", file_version).returncode == 0
    (data / "b.bin").write_bytes(b"b")  # a sibling does not matter to a file version
    assert run_with_manifest(tmp_path / "g", data / "a.bin", "file", file_version).returncode == 0

    dir_version = scan(data).entries
    (data / "c.bin").write_bytes(b"c")
    proc = run_with_manifest(tmp_path / "h", data, "directory", dir_version)
    assert proc.returncode == 80 and "has 3 files; its registered version has 2" in proc.stderr.decode()
