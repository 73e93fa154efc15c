"""GPU telemetry on the real cluster: the sampler in real GPU jobs (fake NVML, real pynvml without a
driver, a crash), the harvest into per-GPU summaries and idle GPU-hours, the API and gw."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api.app import create_app
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.services.runs.check import CHECK_RUN_ID
from gateway.wiring import build_services
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
FAKE_NVML = ROOT / "accounting" / "telemetry" / "fake_nvml.py"
_spec = importlib.util.spec_from_file_location("gw_fake_nvml_for_tests", FAKE_NVML)
fake_nvml = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fake_nvml
_spec.loader.exec_module(fake_nvml)

# Per NVML index: 0 idle, 1 alternating idle and busy, 2 always busy, 3 half busy. Whichever two of
# the node's four GPUs Slurm gives the job, the expected summaries follow from their indices.
SCRIPT = "0:0;1:0,100;2:100;3:50"


def gpu_spec(tag: str, command: str, **env: str) -> dict:
    return {
        "name": "gpu-telemetry",
        "project": PROJECT,
        "queue": "gpu",
        # what Slurm gave the batch step, for the test to compare with what the sampler saw
        "command": f'echo "$SLURMD_NODENAME $SLURM_JOB_GPUS" > "$GW_RUN_DIR/job-gpus.txt"; {command}',
        "env": {"FAKE_NVML_UTIL": SCRIPT, **env},
        "tags": [tag],
        "resources": {"gpus_per_node": 2, "gpu_type": "fake", "mem_gb": 0.25, "walltime_min": 5},
    }


@pytest.fixture
def gpu_services(settings, services, request) -> Iterator:
    """The test site's services with GPU telemetry as the test asks (``request.param``: settings)."""
    changes = {"gpu_sample_interval_s": 1.0, "gpu_nvml": "fake", **getattr(request, "param", {})}
    built = build_services(settings.model_copy(update=changes), upgrade=False)
    yield built
    built.close()


def run_and_harvest(services, principal, spec: dict):
    run = services.runs.submit(build_spec(spec), principal=principal)
    done = refresh_until(services, run.id, timeout_s=120)
    report = services.harvester.harvest_due(limit=500)
    assert not [p for p in report.problems if run.id in p], report.problems
    return done, services.telemetry.for_run(run.id, principal=principal, samples=True)


def expected_idle(index: int, samples: int) -> float:
    return {0: 1.0, 1: math.ceil(samples / 2) / samples, 2: 0.0, 3: 0.0}[index]


def expected_mean(index: int, samples: int) -> float:
    return {0: 0.0, 1: 100 * (samples // 2) / samples, 2: 100.0, 3: 50.0}[index]


def test_a_gpu_job_samples_exactly_its_own_gpus(gpu_services, principal, tester_token):
    done, telemetry = run_and_harvest(gpu_services, principal, gpu_spec(unique_tag(), "sleep 5"))
    assert done.state is RunState.SUCCEEDED, done.latest
    node, job_gpus = (Path(done.run_dir) / "job-gpus.txt").read_text().split()
    indices = sorted(int(i) for i in job_gpus.split(","))
    assert len(indices) == 2, "the job asked for 2 of the node's 4 GPUs"

    (attempt,) = telemetry["attempts"]
    assert attempt["status"] == "ok" and attempt["job_id"] == done.latest.job_id
    gpus = attempt["gpus"]
    assert [(g["node"], g["gpu_index"]) for g in gpus] == [(node, i) for i in indices]
    assert [g["uuid"] for g in gpus] == [fake_nvml.device_uuid(node, i) for i in indices]
    for g in gpus:
        n, i = g["samples"], g["gpu_index"]
        assert n >= 3, g  # 5 s at 1 s
        assert g["idle_fraction"] == pytest.approx(expected_idle(i, n))
        assert g["util_mean_pct"] == pytest.approx(expected_mean(i, n))
        assert g["util_max_pct"] == (0 if i == 0 else 100 if i in (1, 2) else 50)
        assert g["mem_peak_mib"] == 1024 * (i + 1) + 10 * g["util_max_pct"]
        if i != 1:  # a constant load: energy is its power times the sampled time
            assert g["energy_wh"] == pytest.approx((60 + 2.4 * g["util_max_pct"]) * g["duration_s"] / 3600)
        assert 1 <= len(g["series"]) == n <= 500

    elapsed_s = done.latest.elapsed_s
    assert attempt["allocated_gpu_hours"] == pytest.approx(2 * elapsed_s / 3600)
    idle = sum(g["idle_fraction"] for g in gpus) / 2
    assert attempt["idle_fraction"] == pytest.approx(idle)
    assert attempt["idle_gpu_hours"] == pytest.approx(2 * elapsed_s / 3600 * idle)
    assert attempt["energy_wh"] == pytest.approx(sum(g["energy_wh"] for g in gpus))

    with TestClient(create_app(services=gpu_services)) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        body = client.get(f"/runs/{done.id}/telemetry").json()
        assert body["attempts"][0]["idle_gpu_hours"] == pytest.approx(attempt["idle_gpu_hours"])
        assert all(g["series"] is None for g in body["attempts"][0]["gpus"]), "samples only when asked"
        plotted = client.get(f"/runs/{done.id}/telemetry", params={"samples": "true"}).json()
        assert [len(g["series"]) for g in plotted["attempts"][0]["gpus"]] == [g["samples"] for g in gpus]
        assert client.get("/runs/r-0000000000000000/telemetry").status_code == 404
    # a second harvest leaves this attempt's record as it was (other tests' attempts that ended
    # meanwhile on the session database may be harvested by it)
    before = gpu_services.telemetry.for_run(done.id, principal=principal)
    gpu_services.harvester.harvest_due(limit=500)
    assert gpu_services.telemetry.for_run(done.id, principal=principal) == before, "harvested once"
    (traced,) = gpu_services.lineage.trace_run(done.id, principal=principal)["attempts"]
    assert traced["gpu"]["idle_gpu_hours"] == pytest.approx(attempt["idle_gpu_hours"])
    assert traced["gpu"]["gpus_sampled"] == 2 and traced["gpu"]["status"] == "ok"
    evidence = json.loads(gpu_services.evidence.bundle(done.id, principal=principal).files["evidence.json"])
    assert evidence["runs"][0]["attempts"][0]["gpu"] == traced["gpu"], "the evidence carries it too"


@pytest.mark.parametrize(
    "gpu_services", [{"gpu_nvml": "real", "gpu_sampler_python": sys.executable}], indirect=True
)
def test_a_node_without_nvml_records_no_nvml_and_the_job_succeeds(gpu_services, principal):
    pytest.importorskip("pynvml")
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver")
    done, telemetry = run_and_harvest(gpu_services, principal, gpu_spec(unique_tag(), "sleep 1"))
    assert done.state is RunState.SUCCEEDED, done.latest
    (attempt,) = telemetry["attempts"]
    assert attempt["status"] == "no_nvml" and "no NVML" in attempt["note"] and attempt["gpus"] == []
    assert attempt["allocated_gpu_hours"] > 0 and attempt["idle_gpu_hours"] is None


def test_a_sampler_crash_does_not_fail_the_job(gpu_services, principal):
    spec = gpu_spec(unique_tag(), "sleep 3", FAKE_NVML_FAIL="crash-after:4")
    done, telemetry = run_and_harvest(gpu_services, principal, spec)
    assert done.state is RunState.SUCCEEDED and done.latest.exit_code == 0, done.latest
    (attempt,) = telemetry["attempts"]
    assert attempt["status"] == "ok", "the samples taken before the crash are kept"
    assert "crashed" not in attempt["status"] and "RuntimeError" in attempt["note"]
    assert sum(g["samples"] for g in attempt["gpus"]) == 4


def test_a_checked_gpu_script_is_the_script_a_submission_sends(gpu_services, principal):
    spec = build_spec(gpu_spec(unique_tag(), "true") | {"hold": True})
    checked = gpu_services.runs.check(spec, principal=principal, slurm_test=True)
    assert "--job-name=gw-gpu-sampler" in checked.script, checked.script
    assert checked.slurm_test  # Slurm's own sbatch --test-only of that very script
    run = gpu_services.runs.submit(spec, principal=principal)
    try:
        placeholder = gpu_services.runs.check(spec, principal=principal).script
        assert placeholder.replace(CHECK_RUN_ID, run.id) == gpu_services.runs.store.get_run(run.id).script
    finally:
        gpu_services.runs.cancel(run.id, principal=principal)


def test_a_cpu_job_has_no_sampler_and_no_telemetry(gpu_services, principal):
    spec = {
        "name": "cpu-only",
        "project": PROJECT,
        "queue": "cpu",
        "command": "true",
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.25, "walltime_min": 2},
    }
    run = gpu_services.runs.submit(build_spec(spec), principal=principal)
    assert "gpu_sampler" not in run.script
    assert refresh_until(gpu_services, run.id).state is RunState.SUCCEEDED
    gpu_services.harvester.harvest_due(limit=500)
    assert gpu_services.telemetry.for_run(run.id, principal=principal)["attempts"] == []


def test_gw_telemetry_and_gw_show(tmp_path_factory, slurm, backend):
    if backend != "sqlite":
        pytest.skip("one gw serve (on its own SQLite database) is enough")
    settings = {"GATEWAY_GPU_NVML": "fake", "GATEWAY_GPU_SAMPLE_INTERVAL_S": "1"}
    with gw_serve(tmp_path_factory.mktemp("tel"), prefix="tel", settings=settings) as serve:
        env = {
            **os.environ,
            "GW_URL": serve.url,
            "GW_TOKEN": serve.tokens["tester"],
            "GW_CONFIG": serve.config,
        }
        env["COLUMNS"] = "220"
        spec_file = tmp_path_factory.mktemp("spec") / "gpu.json"
        spec_file.write_text(json.dumps({**gpu_spec(unique_tag(), "sleep 3"), "project": "test"}))

        def gw(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=120)

        submitted = gw("submit", str(spec_file))
        assert submitted.returncode == 0, submitted.stderr
        run_id = next(w for w in submitted.stdout.split() if w.startswith("r-"))
        assert gw("wait", run_id, "--poll-s", "0.5").returncode == 0
        shown = None
        for _ in range(60):  # the harvest follows the refresh in gw serve's cycle (1 s)
            shown = json.loads(gw("telemetry", run_id, "--json").stdout)
            if shown["attempts"]:
                break
            subprocess.run(["sleep", "0.5"], check=True)
        (attempt,) = shown["attempts"]
        assert attempt["status"] == "ok" and len(attempt["gpus"]) == 2
        table = gw("telemetry", run_id)
        assert table.returncode == 0 and "idle" in table.stdout and attempt["gpus"][0]["uuid"] in table.stdout
        show = gw("show", run_id)
        assert "GPU telemetry:" in show.stdout and "2 GPU(s) sampled" in show.stdout, show.stdout
        assert json.loads(gw("show", run_id, "--json").stdout)["telemetry"]["attempts"][0]["status"] == "ok"


def test_a_two_node_job_is_sampled_on_each_node(gpu_services, principal):
    spec = gpu_spec(unique_tag(), "sleep 4")
    spec["resources"] = {
        "nodes": 2,
        "gpus_per_node": 1,
        "gpu_type": "fake",
        "mem_gb": 0.25,
        "walltime_min": 5,
    }
    done, telemetry = run_and_harvest(gpu_services, principal, spec)
    assert done.state is RunState.SUCCEEDED, done.latest
    (attempt,) = telemetry["attempts"]
    assert sorted(g["node"] for g in attempt["gpus"]) == ["g1", "g2"], attempt
    for g in attempt["gpus"]:
        assert g["samples"] >= 2 and g["uuid"] == fake_nvml.device_uuid(g["node"], g["gpu_index"])
    assert attempt["allocated_gpu_hours"] == pytest.approx(2 * done.latest.elapsed_s / 3600)


def test_gpus_per_task_are_all_sampled(gpu_services, principal):
    spec = gpu_spec(unique_tag(), "sleep 3")
    spec["resources"] = {
        "ntasks": 2,
        "tasks_per_node": 2,
        "gpus_per_task": 1,
        "gpu_type": "fake",
        "mem_gb": 0.25,
        "walltime_min": 5,
    }
    done, telemetry = run_and_harvest(gpu_services, principal, spec)
    assert done.state is RunState.SUCCEEDED, done.latest
    node, job_gpus = (Path(done.run_dir) / "job-gpus.txt").read_text().split()
    (attempt,) = telemetry["attempts"]
    assert [g["gpu_index"] for g in attempt["gpus"]] == sorted(int(i) for i in job_gpus.split(","))
    assert len(attempt["gpus"]) == 2 and all(g["samples"] >= 2 for g in attempt["gpus"])


def test_the_users_own_srun_steps_start_beside_the_sampler(gpu_services, principal):
    spec = gpu_spec(unique_tag(), "")
    spec["launcher"] = "srun"
    spec["command"] = 'echo "$SLURM_STEP_GPUS" > "$GW_RUN_DIR/step-$SLURM_PROCID.txt"; sleep 3'
    spec["resources"] = {**spec["resources"], "ntasks": 2, "tasks_per_node": 2}
    done, telemetry = run_and_harvest(gpu_services, principal, spec)
    assert done.state is RunState.SUCCEEDED, done.latest
    steps = {p.read_text().strip() for p in Path(done.run_dir).glob("step-*.txt")}
    (attempt,) = telemetry["attempts"]
    sampled = ",".join(str(g["gpu_index"]) for g in attempt["gpus"])
    assert steps == {sampled}, "the user's step got the job's GPUs, the same ones the sampler saw"


def test_each_task_of_a_gpu_sweep_is_sampled(gpu_services, principal):
    spec = gpu_spec(unique_tag(), "sleep 3")
    spec["command"] = "sleep 3"
    spec["params"] = {"lr": 0.1}
    spec["sweep"] = {"grid": {"seed": [1, 2]}}
    spec["resources"] = {**spec["resources"], "gpus_per_node": 1}
    done, telemetry = run_and_harvest(gpu_services, principal, spec)
    assert done.state is RunState.SUCCEEDED, done.latest
    (attempt,) = telemetry["attempts"]
    assert attempt["status"] == "ok" and len(attempt["gpus"]) == 2, attempt  # one GPU per array task
    assert all(g["samples"] >= 2 for g in attempt["gpus"])
    files = sorted(p.name for p in (Path(done.run_dir) / "telemetry").glob("gpu-*.jsonl"))
    assert [f.split("-r")[0] for f in files] == [f"gpu-{done.latest.job_id}_0", f"gpu-{done.latest.job_id}_1"]
    elapsed_s = sum(t["elapsed_s"] for t in done.latest.tasks.values())
    assert attempt["allocated_gpu_hours"] == pytest.approx(elapsed_s / 3600), "1 GPU x each task's elapsed"
