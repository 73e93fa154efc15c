"""GPU telemetry: the summary math, the sampler's file format, its choice of the job's GPUs, its fake NVML."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.core.accounting.telemetry import (
    MAX_SERIES_POINTS,
    Sample,
    allocated_gpu_hours,
    allocated_gpus,
    attempt_telemetry,
    energy_wh,
    idle_fraction,
    parse_lines,
    requested_gpus,
    summarise_gpu,
    thin,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLER = ROOT / "accounting" / "telemetry" / "gpu_sampler.py"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sampler = _load("gw_test_gpu_sampler", SAMPLER)


def samples(values, *, every_s=10.0, power=None):
    return [
        Sample(
            at_s=1000 + i * every_s, util_pct=u, mem_used_mib=100.0 + i, power_w=power[i] if power else None
        )
        for i, u in enumerate(values)
    ]


def test_energy_is_power_integrated_by_trapezoids():
    # 100 W for 36 s then a ramp to 200 W over 36 s: 3600 J + 5400 J = 9000 J = 2.5 Wh
    points = [Sample(0, 0, 0, 100.0), Sample(36, 0, 0, 100.0), Sample(72, 0, 0, 200.0)]
    assert energy_wh(points) == pytest.approx(2.5)
    assert energy_wh(points[:1]) is None, "one reading spans no time"
    assert energy_wh([Sample(0, 0, 0, None), Sample(10, 0, 0, None)]) is None


def test_idle_fraction_counts_samples_below_the_threshold():
    assert idle_fraction(samples([0, 4, 5, 90]), 5.0) == 0.5  # 5 is not below 5
    assert idle_fraction(samples([None, None]), 5.0) is None
    assert idle_fraction(samples([0, None, 100]), 5.0) == 0.5, "a sample without utilisation is not counted"


def test_a_gpu_summary():
    gpu = {"index": 2, "uuid": "GPU-x", "name": "Fake", "mem_total_mib": 16384.0}
    summary = summarise_gpu("g1", gpu, samples([0, 50, 100, 10], power=[60, 180, 300, 84]), 5.0)
    assert (summary.samples, summary.duration_s) == (4, 30.0)
    assert summary.util_mean_pct == 40.0 and summary.util_max_pct == 100.0
    assert summary.idle_fraction == 0.25
    assert summary.mem_peak_mib == 103.0 and summary.mem_total_mib == 16384.0
    # trapezoids of 10 s: (60+180)/2 + (180+300)/2 + (300+84)/2 = 120 + 240 + 192 = 552 W x 10 s
    assert summary.energy_wh == pytest.approx(5520 / 3600)
    assert summary.power_mean_w == 156.0
    assert summary.series[0] == [0.0, 0.0, 100.0, 60] and summary.series[-1][0] == 30.0


def test_idle_gpu_hours_are_allocated_gpu_hours_times_the_idle_fraction():
    def node(name, utils):
        text = "\n".join(
            [json.dumps({"kind": "start", "node": name, "gpus": [{"index": 0, "uuid": f"GPU-{name}"}]})]
            + [
                json.dumps(
                    {"kind": "sample", "at": 10 * i, "uuid": f"GPU-{name}", "util_pct": u, "power_w": 100}
                )
                for i, u in enumerate(utils)
            ]
        )
        return parse_lines(text)

    nodes = [node("g1", [0, 0, 0, 100]), node("g2", [100, 100, 100, 100])]
    result = attempt_telemetry(nodes, threshold_pct=5, allocated_gpu_hours=2 * 7200 / 3600, problems=[])
    assert result.status == "ok" and result.allocated_gpu_hours == 4.0
    assert result.idle_fraction == pytest.approx(0.375)  # (0.75 + 0) / 2
    assert result.idle_gpu_hours == pytest.approx(1.5)
    assert result.energy_wh == pytest.approx(2 * 100 * 30 / 3600)


def test_parse_lines_keeps_the_reason_when_nothing_was_sampled():
    text = (
        '{"kind":"unavailable","status":"no_nvml","reason":"no NVML: nvmlInit failed","node":"g1"}\n'
        "not json\n"
    )
    node = parse_lines(text)
    assert (node.status, node.node, node.skipped_lines) == ("no_nvml", "g1", 1)
    result = attempt_telemetry([node], threshold_pct=5, allocated_gpu_hours=60 / 3600)
    assert result.status == "no_nvml" and "no NVML" in result.note
    assert result.allocated_gpu_hours == pytest.approx(60 / 3600) and result.idle_gpu_hours is None
    assert attempt_telemetry([], threshold_pct=5, allocated_gpu_hours=60 / 3600).status == "no_telemetry"
    crashed = parse_lines(
        '{"kind":"start","node":"g1","gpus":[{"index":0,"uuid":"GPU-a"}]}\n'
        '{"kind":"sample","at":1,"uuid":"GPU-a","util_pct":80}\n'
        '{"kind":"sample","at":2,"uuid":"GPU-other","util_pct":80}\n'
        '{"kind":"crashed","reason":"RuntimeError: x"}\n'
    )
    assert crashed.status == "crashed" and len(crashed.samples["GPU-a"]) == 1, (
        "a sample of another GPU is ignored"
    )
    assert attempt_telemetry([crashed], threshold_pct=5, allocated_gpu_hours=1 / 3600).status == "ok"


def test_thin_keeps_at_most_the_bound_and_the_last_sample():
    many = samples(list(range(2000)), every_s=1.0)
    kept = thin(many)
    assert len(kept) <= MAX_SERIES_POINTS and kept[0][0] == 0.0 and kept[-1][0] == 1999.0
    assert thin(many[:3]) == [[0.0, 0, 100.0, None], [1.0, 1, 101.0, None], [2.0, 2, 102.0, None]]


def test_allocated_gpus_from_alloc_tres():
    assert allocated_gpus({"cpu": "2", "gres/gpu": "3", "gres/gpu:fake": "3"}) == 3
    assert allocated_gpus({"cpu": "2"}) == 0 and allocated_gpus({"gres/gpu": "x"}) == 0


def test_allocated_gpu_hours_of_a_job_and_of_an_array():
    assert allocated_gpu_hours({"gres/gpu": "2"}, 1800, {}, {}) == 1.0
    # an array's attempt has no AllocTRES: the spec's GPUs per task x each task's elapsed
    tasks = {"0": {"elapsed_s": 3600}, "1": {"elapsed_s": 1800}}
    assert allocated_gpu_hours({}, 3600, tasks, {"gpus_per_node": 2}) == 3.0
    assert allocated_gpu_hours({}, 60, {}, {"cpus_per_task": 4}) is None
    assert allocated_gpu_hours({}, 60, {"0": {"elapsed_s": None}}, {"gpus": 1}) is None


@pytest.mark.parametrize(
    ("resources", "gpus"),
    [
        ({"gpus_per_node": 2, "nodes": 3}, 6),
        ({"gpus": 5}, 5),
        ({"gpus_per_task": 1, "ntasks": 4}, 4),
        ({"gpus_per_task": 2, "nodes": 2, "tasks_per_node": 2}, 8),
        ({"mem_gb": 4, "gpus_per_node": None}, 0),
    ],
)
def test_requested_gpus(resources, gpus):
    assert requested_gpus(resources) == gpus


# -- the sampler's choice of GPUs ---------------------------------------------------------------------


def uuid_of(i):
    return f"GPU-{i}"


@pytest.mark.parametrize(
    ("env", "count", "expected"),
    [
        ({"SLURM_STEP_GPUS": "2,3", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "2,3"}, 4, [2, 3]),
        ({"SLURM_JOB_GPUS": "1"}, 4, [1]),
        ({"CUDA_VISIBLE_DEVICES": "GPU-3,GPU-0"}, 4, [3, 0]),
        ({"SLURM_STEP_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0,1"}, 2, [0, 1]),  # a device cgroup renumbered
    ],
)
def test_select_devices(env, count, expected):
    assert sampler.select_devices(env, count, uuid_of)[0] == expected


@pytest.mark.parametrize(
    ("env", "count", "status"),
    [
        ({}, 4, "no_gpus"),
        ({"SLURM_STEP_GPUS": "5"}, 4, "mismatch"),
        ({"CUDA_VISIBLE_DEVICES": "GPU-9"}, 4, "mismatch"),
        ({"SLURM_JOB_GPUS": "a,b"}, 4, "mismatch"),
    ],
)
def test_select_devices_refuses(env, count, status):
    with pytest.raises(sampler.Unavailable) as caught:
        sampler.select_devices(env, count, uuid_of)
    assert caught.value.status == status


def run_sampler(tmp_path, env, *args, python=sys.executable):
    out = tmp_path / "gpu-{node}.jsonl"
    base = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "g2"}
    proc = subprocess.run(
        [python, "-I", str(SAMPLER), "--out", str(out), *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in (tmp_path / "gpu-g2.jsonl").read_text().splitlines()]


def test_the_sampler_with_the_fake_nvml_writes_the_scripted_samples(tmp_path):
    env = {"SLURM_STEP_GPUS": "1,3", "FAKE_NVML_UTIL": "1:0,100"}
    lines = run_sampler(tmp_path, env, "--nvml", "fake", "--interval-s", "0.2", "--stop-after-s", "0.9")
    start, *rest, end = lines
    assert [g["index"] for g in start["gpus"]] == [1, 3] and [g["minor"] for g in start["gpus"]] == [5, 7]
    fake = _load("gw_test_fake_nvml", SAMPLER.with_name("fake_nvml.py"))
    assert [g["uuid"] for g in start["gpus"]] == [fake.device_uuid("g2", 1), fake.device_uuid("g2", 3)]
    gpu1 = [s["util_pct"] for s in rest if s["gpu"] == 1]
    assert gpu1[:4] == [0, 100, 0, 100] and {s["util_pct"] for s in rest if s["gpu"] == 3} == {100}
    assert {s["power_w"] for s in rest if s["gpu"] == 3} == {300.0}
    assert end["kind"] == "end" and end["samples"] == len(rest)


def test_the_sampler_records_why_and_exits_0(tmp_path):
    (no_gpu,) = run_sampler(tmp_path, {}, "--nvml", "fake")
    assert no_gpu["status"] == "no_gpus"
    (tmp_path / "gpu-g2.jsonl").unlink()
    lines = run_sampler(
        tmp_path,
        {"SLURM_JOB_GPUS": "0", "FAKE_NVML_FAIL": "crash-after:2"},
        "--nvml",
        "fake",
        "--interval-s",
        "0.1",
    )
    assert lines[-1]["kind"] == "crashed" and "RuntimeError" in lines[-1]["reason"]
    assert [line["kind"] for line in lines[:-1]] == ["start", "sample", "sample"]
    (tmp_path / "gpu-g2.jsonl").unlink()
    (no_nvml,) = run_sampler(tmp_path, {"SLURM_JOB_GPUS": "0", "FAKE_NVML_FAIL": "init"}, "--nvml", "fake")
    assert no_nvml["status"] == "no_nvml"


def test_the_sampler_with_real_pynvml_and_no_driver_records_no_nvml(tmp_path):
    pytest.importorskip("pynvml")  # a dependency (nvidia-ml-py): installed with the gateway
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver: scripts/gpu-check is the test here")
    (line,) = run_sampler(tmp_path, {"SLURM_JOB_GPUS": "0"}, "--nvml", "real")
    assert line["kind"] == "unavailable" and line["status"] == "no_nvml" and "no NVML" in line["reason"]


def test_gpu_check_without_a_gpu_says_so_with_its_own_exit_status():
    pytest.importorskip("pynvml")
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver: run scripts/gpu-check itself")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu-check")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no NVIDIA GPU here" in proc.stdout
