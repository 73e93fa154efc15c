"""Benchmark: scanning a dataset into a manifest against coreutils sha256sum.

    .venv/bin/python -m bench.datasets [GIB]

Builds, under a temporary directory, a dataset of GIB GiB (default 2): 16
sparse files (``os.truncate``; some start with random bytes so they differ)
and a few small files of random bytes. In one process: the real
``sha256sum`` over the same files (the reference, timed), then ``scan()``
twice, each timed, with the peak of traced memory (tracemalloc) and the
growth of the process's max RSS (getrusage). Both scans, and sha256sum's own
output, must give the same digest. Then both manifests are registered through
``DatasetService.register`` (a throwaway SQLite database): the first makes
version 1, the second must return that same version. Prints a table and the ratios; exits 1
when a target is missed or the digests differ. The temporary directory is
removed at the end.

Targets: scan <= 1.5x sha256sum's time, traced peak <= 16 MiB.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from gateway.adapters.files import scan
from gateway.core.lineage.manifest import manifest_digest, total_bytes

TIME_TARGET = 1.5
PEAK_TARGET_MIB = 16
BIG_FILES = 16
SMALL_FILES = 8


def build(root: Path, gib: float) -> list[str]:
    """The dataset's files; returns their names relative to root, in byte order."""
    names = []
    big_bytes = int(gib * (1 << 30)) // BIG_FILES
    for i in range(BIG_FILES):
        name = f"shards/shard-{i:02d}.bin"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        with open(root / name, "wb") as handle:
            if i % 2 == 0:  # random bytes at the start, so the shards differ
                handle.write(os.urandom(64 << 10))
        os.truncate(root / name, big_bytes)
        names.append(name)
    for i in range(SMALL_FILES):
        name = f"meta/part {i}.json"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(os.urandom(4096 + i))
        names.append(name)
    return sorted(names, key=os.fsencode)


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def timed_scan(root: Path):
    rss_before = max_rss_mib()
    tracemalloc.start()
    started = time.perf_counter()
    result = scan(root)
    wall_s = time.perf_counter() - started
    peak_mib = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    return result, wall_s, peak_mib, max_rss_mib() - rss_before


def main(gib: float) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-datasets-"))
    try:
        root = workdir / "dataset"
        root.mkdir()
        names = build(root, gib)
        return measure(root, names)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure(root: Path, names: list[str]) -> int:
    subprocess.run(["sha256sum", "--", names[-1]], cwd=root, check=True, capture_output=True)  # warm-up
    started = time.perf_counter()
    reference = subprocess.run(["sha256sum", "--", *names], cwd=root, check=True, capture_output=True)
    reference_s = time.perf_counter() - started

    first, first_s, first_peak, first_rss = timed_scan(root)
    second, second_s, second_peak, second_rss = timed_scan(root)
    digest, again = manifest_digest(first.entries), manifest_digest(second.entries)
    # sha256sum ran over the names in byte order, so its output is the manifest text itself.
    reference_digest = hashlib.sha256(reference.stdout).hexdigest()
    size = total_bytes(first.entries)
    print(f"dataset: {len(first.entries)} files, {size / (1 << 30):.2f} GiB")
    print(f"{'':18}{'wall s':>8}{'GiB/s':>8}{'peak MiB':>10}{'max RSS +MiB':>14}")
    print(f"{'sha256sum':18}{reference_s:8.2f}{size / (1 << 30) / reference_s:8.2f}{'-':>10}{'-':>14}")
    for label, wall_s, peak, rss in (
        ("scan (1st)", first_s, first_peak, first_rss),
        ("scan (2nd)", second_s, second_peak, second_rss),
    ):
        print(f"{label:18}{wall_s:8.2f}{size / (1 << 30) / wall_s:8.2f}{peak:10.2f}{rss:14.1f}")
    ratio = max(first_s, second_s) / reference_s
    peak = max(first_peak, second_peak)
    print(f"time ratio (slower scan / sha256sum) {ratio:.2f} (target <= {TIME_TARGET})")
    print(f"traced peak {peak:.2f} MiB (target <= {PEAK_TARGET_MIB})")
    print(f"digest {digest} ({'same' if digest == again else 'DIFFERS'} on the 2nd scan)")
    print(f"sha256sum's text gives {'the same digest' if reference_digest == digest else 'ANOTHER DIGEST'}")
    registered = register_twice(root, first.entries, second.entries)
    print(f"registered: {registered}")
    ok = ratio <= TIME_TARGET and peak <= PEAK_TARGET_MIB and digest == again == reference_digest
    ok = ok and registered.startswith("same version")
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


def register_twice(root: Path, first, second) -> str:
    """Register both scans' manifests in a fresh database; says whether the second found the first."""
    from gateway.core.access.values import Principal
    from gateway.core.site.schema import parse_site
    from gateway.services.lineage.datasets import Registration
    from gateway.settings import Settings
    from gateway.wiring import build_services

    state = Path(tempfile.mkdtemp(prefix="gw-bench-datasets-db-"))
    services = build_services(Settings(database_url=f"sqlite:///{state}/gateway.db", runs_dir=state / "runs"))
    try:
        site = (
            "users: [{name: bench, os_user: nobody}]\n"
            "projects: [{name: bench, slurm_account: bench, members: [{user: bench, role: lead}]}]\n"
        )
        services.site.apply(Principal.operator(), parse_site(site), sync_slurm=False)
        principal = services.access.principal("bench")
        made = []
        for entries in (first, second):
            files = [e.to_dict() for e in entries]
            req = Registration("bench", "shards", files, kind="directory", path=str(root))
            made.append(services.datasets.register(req, principal=principal))
        (v1, created1), (v2, created2) = made
        same = created1 and not created2 and v1.id == v2.id
        return f"{'same version' if same else 'DIFFERENT versions'} {v1.ref} (digest {v1.digest[:12]})"
    finally:
        services.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 2))
