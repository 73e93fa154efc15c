"""The built wheel carries what an installed gateway needs: templates, migrations and eval/."""

import subprocess
import sys
import zipfile


def test_wheel_contains_templates_migrations_and_eval(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gateway-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in ("single", "torchrun", "array", "_common"):
        assert f"gateway/sbatch_templates/{template}.sbatch.j2" in names
    assert "gateway/store/migrations/env.py" in names
    assert any(n.startswith("gateway/store/migrations/versions/0001") for n in names)
    assert any(n.startswith("gateway/store/migrations/versions/0002") for n in names)
    # eval/: the example suite, its task YAMLs and prompt, and the job-side programs.
    for path in (
        "README.md",
        "suites/tiny_lm.yaml",
        "prompts/tiny_lm_cloze.txt",
        "tasks/tiny_lm/spelling.yaml",
        "tasks/tiny_lm/word_order.yaml",
        "jobs/run_eval.py",
        "jobs/lm_eval_tiny_lm.py",
        "jobs/tiny_lm_scorer.py",
        "jobs/native_format.py",
        "jobs/tiny_lm_native.py",
    ):
        assert f"gateway/eval_files/{path}" in names, path
    assert not any("__pycache__" in n for n in names if n.startswith("gateway/eval_files/"))
    # accounting/: the GPU sampler and its fake NVML, run inside jobs from the installed copy.
    for path in ("gpu_sampler.py", "fake_nvml.py", "README.md"):
        assert f"gateway/accounting_files/{path}" in names, path
    assert not any("__pycache__" in n for n in names if n.startswith("gateway/accounting_files/"))


def test_the_package_finds_eval_in_a_checkout():
    from gateway.core.eval.suite import BUILTIN_EVAL_DIR

    assert (BUILTIN_EVAL_DIR / "suites" / "tiny_lm.yaml").is_file()
    assert (BUILTIN_EVAL_DIR / "jobs" / "run_eval.py").is_file()


def test_the_package_finds_the_gpu_sampler_in_a_checkout():
    from gateway.core.accounting.telemetry import BUILTIN_ACCOUNTING_DIR, SAMPLER_FILE

    assert (BUILTIN_ACCOUNTING_DIR / SAMPLER_FILE).is_file()
    assert (BUILTIN_ACCOUNTING_DIR / "fake_nvml.py").is_file()
