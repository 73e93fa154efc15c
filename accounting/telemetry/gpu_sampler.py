"""GPU telemetry sampler: runs inside a job, on each of its nodes, and records the job's own GPUs.

The one module of the project that imports ``pynvml`` (the ``nvidia-ml-py`` package). It runs on a
compute node with only the standard library and pynvml, never the gateway: the sbatch templates start
it in the background (``srun --overlap``, one task per node, docs/telemetry.md) and Slurm ends it
with the job (SIGTERM, then SIGKILL after KillWait).

    python3 -I gpu_sampler.py --out 'RUN_DIR/telemetry/gpu-JOB-r0-{node}.jsonl' --interval-s 10 [--nvml fake]

It writes JSON lines, each flushed as soon as it is made:

- ``{"kind": "start", ...}``: the node, the NVML in use, how the job's GPUs were found, and each GPU
  (NVML index, UUID, name, minor number, memory total);
- ``{"kind": "sample", "at": EPOCH_S, "gpu": INDEX, "uuid": ..., "util_pct", "mem_util_pct",
  "mem_used_mib", "mem_total_mib", "power_w", "temp_c", "sm_clock_mhz"}``: one per GPU per interval
  (a value the device does not report is null);
- ``{"kind": "end", "reason": ...}``: why it stopped (a signal, the time or size limit);
- ``{"kind": "unavailable", "status": "no_nvml" | "no_gpus" | "mismatch", "reason": ...}``: why
  nothing was sampled;
- ``{"kind": "crashed", "reason": ...}``: an unexpected error, after which it stops.

Whatever happens it exits 0: a missing driver, a GPU gone, a bug here must never fail the job.

Which GPUs are the job's (``select_devices``): entries of ``CUDA_VISIBLE_DEVICES`` that are UUIDs
(``GPU-...``/``MIG-...``) are matched by UUID; otherwise the indices Slurm gave this step on this
node (``SLURM_STEP_GPUS``, else ``SLURM_JOB_GPUS``: the batch step's, right on the first node only)
are NVML indices when NVML sees the node's GPUs, or, when NVML sees exactly as many devices as the
job has (a device cgroup hides the others and renumbers them from 0), all the devices it sees.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import sys
import time
from typing import Any

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # a 4-GPU node at 10 s writes about 6 MiB a day
MIB = 1024 * 1024
NVML_CHOICES = ("real", "fake")


class Unavailable(Exception):
    """Nothing can be sampled here: ``status`` says which case (no_nvml, no_gpus, mismatch)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def load_nvml(kind: str) -> Any:
    """The NVML module: ``pynvml`` (real) or ``fake_nvml.py`` beside this file (fake).

    Raises Unavailable(no_nvml) when the module cannot be imported.
    """
    if kind == "fake":
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_nvml.py")
        spec = importlib.util.spec_from_file_location("fake_nvml", path)
        if spec is None or spec.loader is None:
            raise Unavailable("no_nvml", f"no NVML: the fake NVML module {path} is missing")
        sys.dont_write_bytecode = True  # the directory is shared (and may not be the job user's)
        module = importlib.util.module_from_spec(spec)
        sys.modules["fake_nvml"] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    try:
        import pynvml  # the one import of pynvml in the project
    except ImportError as exc:
        raise Unavailable(
            "no_nvml", f"no NVML: pynvml is not installed for {sys.executable} ({exc})"
        ) from exc
    return pynvml


def _ids(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def select_devices(env: dict[str, str], count: int, uuid_of: Any) -> tuple[list[int], str]:
    """The NVML indices of the job's GPUs on this node, and how they were found (for the record).

    ``count``: devices NVML sees; ``uuid_of(i)``: the UUID of NVML device ``i``. Raises
    Unavailable(no_gpus) when the job has no GPU here, Unavailable(mismatch) when Slurm's view and
    NVML's cannot be matched.
    """
    visible = _ids(env.get("CUDA_VISIBLE_DEVICES"))
    if visible and all(v.startswith(("GPU-", "MIG-")) for v in visible):
        uuids = {uuid_of(i): i for i in range(count)}
        missing = [v for v in visible if v not in uuids]
        if missing:
            raise Unavailable("mismatch", f"CUDA_VISIBLE_DEVICES names UUIDs NVML does not see: {missing}")
        return [uuids[v] for v in visible], f"CUDA_VISIBLE_DEVICES={','.join(visible)} (by UUID)"
    for source in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"):
        given = _ids(env.get(source))
        if given:
            break
    else:
        raise Unavailable("no_gpus", "no GPUs allocated on this node (SLURM_STEP_GPUS, SLURM_JOB_GPUS unset)")
    try:
        indices = [int(v) for v in given]
    except ValueError as exc:
        raise Unavailable("mismatch", f"{source}={','.join(given)} is not a list of GPU indices") from exc
    if all(0 <= i < count for i in indices):
        return indices, f"{source}={','.join(given)} (NVML index)"
    if count == len(indices):
        return list(range(count)), f"{source}={','.join(given)} (NVML sees only these {count}, renumbered)"
    raise Unavailable("mismatch", f"{source}={','.join(given)} but NVML sees {count} device(s)")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _maybe(nvml: Any, call: Any, *args: Any) -> Any:
    """``call(*args)``, or None where the device does not report it (an NVML error)."""
    try:
        return call(*args)
    except nvml.NVMLError:
        return None


def describe(nvml: Any, index: int) -> dict[str, Any]:
    """What the start line says about one GPU."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = _maybe(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
    return {
        "index": index,
        "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        "name": _text(_maybe(nvml, nvml.nvmlDeviceGetName, handle) or "unknown"),
        "minor": _maybe(nvml, nvml.nvmlDeviceGetMinorNumber, handle),
        "mem_total_mib": round(memory.total / MIB, 1) if memory is not None else None,
    }


def sample(nvml: Any, index: int, uuid: str, now_s: float) -> dict[str, Any]:
    """One sample line of one GPU; a value the device does not report is None."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    rates = _maybe(nvml, nvml.nvmlDeviceGetUtilizationRates, handle)
    memory = _maybe(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
    power_mw = _maybe(nvml, nvml.nvmlDeviceGetPowerUsage, handle)
    return {
        "kind": "sample",
        "at": round(now_s, 3),
        "gpu": index,
        "uuid": uuid,
        "util_pct": rates.gpu if rates is not None else None,
        "mem_util_pct": rates.memory if rates is not None else None,
        "mem_used_mib": round(memory.used / MIB, 1) if memory is not None else None,
        "mem_total_mib": round(memory.total / MIB, 1) if memory is not None else None,
        "power_w": round(power_mw / 1000.0, 3) if power_mw is not None else None,
        "temp_c": _maybe(nvml, nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
        "sm_clock_mhz": _maybe(nvml, nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
    }


class Writer:
    """Appends JSON lines to the output file, each flushed; counts what it wrote."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the sampler's life
        self.bytes = self.handle.tell()

    def line(self, record: dict[str, Any]) -> None:
        """Write one record as a line and flush it."""
        text = json.dumps(record, separators=(",", ":")) + "\n"
        self.handle.write(text)
        self.handle.flush()
        self.bytes += len(text.encode())


class Stop:
    """Set by SIGTERM, SIGINT or SIGHUP: Slurm's way of ending the job's steps."""

    def __init__(self) -> None:
        self.reason: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._set)

    def _set(self, signum: int, _frame: Any) -> None:
        self.reason = f"stopped by {signal.Signals(signum).name}"


def _node() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def _start(nvml: Any, args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Initialise NVML and find the job's GPUs; the GPUs and the start record."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise Unavailable("no_nvml", f"no NVML: nvmlInit failed: {_text(exc)}") from exc
    count = nvml.nvmlDeviceGetCount()
    indices, how = select_devices(dict(os.environ), count, lambda i: _uuid(nvml, i))
    gpus = [describe(nvml, i) for i in indices]
    record = {
        "kind": "start",
        "v": FORMAT_VERSION,
        "at": round(time.time(), 3),
        "node": _node(),
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "nvml": args.nvml,
        "driver": _text(_maybe(nvml, nvml.nvmlSystemGetDriverVersion) or "unknown"),
        "devices_seen": count,
        "selected_by": how,
        "interval_s": args.interval_s,
        "gpus": gpus,
    }
    return gpus, record


def _uuid(nvml: Any, index: int) -> str:
    return _text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(index)))


def run(args: argparse.Namespace, writer: Writer, stop: Stop) -> None:
    """Sample until stopped, out of time or out of room; raises Unavailable or anything unexpected."""
    nvml = load_nvml(args.nvml)
    gpus, record = _start(nvml, args)
    writer.line(record)
    started = time.monotonic()
    samples = 0
    reason = None
    try:
        while reason is None:
            now = time.time()
            for gpu in gpus:
                writer.line(sample(nvml, gpu["index"], gpu["uuid"], now))
                samples += 1
            if writer.bytes >= args.max_bytes:
                reason = f"size limit of {args.max_bytes} bytes reached"
                break
            deadline = time.monotonic() + args.interval_s
            while stop.reason is None and time.monotonic() < deadline:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            if args.stop_after_s and time.monotonic() - started >= args.stop_after_s:
                reason = f"ran its {args.stop_after_s:g} s"
            reason = stop.reason or reason
    finally:
        _maybe(nvml, nvml.nvmlShutdown)
    writer.line({"kind": "end", "at": round(time.time(), 3), "reason": reason, "samples": samples})


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Sample this job's GPUs with NVML into JSON lines.")
    parser.add_argument(
        "--out", required=True, help="the JSON-lines file to append to; {node} becomes this node's name"
    )
    parser.add_argument("--interval-s", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--nvml", choices=NVML_CHOICES, default=os.environ.get("GW_NVML", "real"))
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES, help="stop past this size")
    parser.add_argument("--stop-after-s", type=float, default=0.0, help="stop after this long (0: never)")
    args = parser.parse_args(argv)
    args.interval_s = max(0.1, args.interval_s)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the sampler; always 0, whatever happened (it is recorded in the file, else on stderr)."""
    writer = None
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        stop = Stop()
        writer = Writer(args.out.replace("{node}", _node()))
        run(args, writer, stop)
    except SystemExit:  # argparse: a bad command line is said on stderr; still not the job's end
        return 0
    except Unavailable as exc:
        _last_word(writer, {"kind": "unavailable", "status": exc.status, "reason": exc.reason})
    except BaseException as exc:  # noqa: BLE001 - a sampler never takes the job down
        _last_word(writer, {"kind": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:1000]})
    return 0


def _last_word(writer: Writer | None, record: dict[str, Any]) -> None:
    record = {**record, "at": round(time.time(), 3), "node": _node()}
    try:
        if writer is None:
            raise OSError("no output file")
        writer.line(record)
    except BaseException:  # noqa: BLE001 - nowhere left to write: stderr, then give up quietly
        with contextlib.suppress(BaseException):
            print(f"gpu_sampler: {json.dumps(record)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
