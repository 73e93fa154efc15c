"""The built wheel carries what an installed gateway needs: templates and migrations."""

import subprocess
import sys
import zipfile


def test_wheel_contains_templates_and_migrations(tmp_path):
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
