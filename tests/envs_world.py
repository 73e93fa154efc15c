"""What the environment tests build for real: tiny wheels in a wheelhouse, their lock file, and a
container image made here from an installed Debian package (busybox-static), saved as an archive.

Nothing is fetched: the wheels are written with ``zipfile`` (pure Python, one module each), the image
is ``podman import`` of the files ``dpkg -L busybox-static`` lists, then ``podman save``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from tests.conftest import JOB_ROOT

WHEELHOUSE = JOB_ROOT / "wheelhouse"  # the test settings' env_pip_find_links


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel(name: str, version: str, directory: Path = WHEELHOUSE) -> Path:
    """A pure-Python wheel of ``name`` ``version`` (module ``name`` with ``VERSION``); its path."""
    directory.mkdir(parents=True, exist_ok=True)
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f'VERSION = "{version}"\n'.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: gw-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{module}-{version}-py3-none-any.whl"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for n, d in files.items():
            zf.writestr(zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0)), d)
    os.replace(tmp, path)  # the same name and content every time: two sessions may race harmlessly
    return path


def lock_text(*wheels: Path, comment: str = "") -> str:
    """A hash-pinned lock of ``wheels`` (as pip-compile --generate-hashes writes one)."""
    lines = [f"# {comment}"] if comment else []
    for path in wheels:
        module, version = path.name.split("-")[:2]
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{module.replace('_', '-')}=={version} \\\n    --hash=sha256:{sha}")
    return "\n".join(lines) + "\n"


def busybox_image(tag: str, out: Path) -> tuple[Path, str]:
    """An image of the busybox-static Debian package's files, saved to ``out``; (archive, image id)."""
    rootfs = out.parent / f"{out.stem}-rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    listed = subprocess.run(["dpkg", "-L", "busybox-static"], capture_output=True, text=True, check=True)
    for name in listed.stdout.split():
        if os.path.isfile(name) and not os.path.islink(name):
            target = rootfs / name.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(name, target)
    applets = subprocess.run(
        [str(rootfs / "bin/busybox"), "--list"], capture_output=True, text=True, check=True
    )
    for applet in applets.stdout.split():
        link = rootfs / "bin" / applet
        if not link.exists():
            link.symlink_to("busybox")
    (rootfs / "tmp").mkdir(exist_ok=True)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(
        ["podman", "import", "--quiet", "-", tag],
        stdin=tar.stdout,
        capture_output=True,
        text=True,
        timeout=120,
    )
    tar.wait()
    assert imported.returncode == 0, imported.stderr
    image_id = "sha256:" + imported.stdout.strip().removeprefix("sha256:")
    out.unlink(missing_ok=True)
    saved = subprocess.run(["podman", "save", "--quiet", "-o", str(out), tag], capture_output=True, text=True)
    assert saved.returncode == 0, saved.stderr
    shutil.rmtree(rootfs, ignore_errors=True)
    out.chmod(0o644)
    return out, image_id


def podman_rmi(image_id: str) -> None:
    """Remove the image from root's store (a job loads it again from its archive)."""
    subprocess.run(["podman", "rmi", "--force", image_id], capture_output=True, timeout=60)
