"""A FAKE NVML for tests: the pynvml calls the GPU sampler makes, answered for this cluster's fake GPUs.

Not a GPU library. The test cluster has no GPU: its gpu nodes g1 and g2 each carry four gres
``gpu:fake`` devices (``/dev/fakegpu[0-3]`` on g1, ``/dev/fakegpu[4-7]`` on g2). This module makes
NVML's view of them: four devices per node (NVML index 0-3, minor number from the node's number,
a UUID derived from node and index, so the same on every call), with utilisation scripted so tests
can compute the summaries they expect. ``gpu_sampler.py --nvml fake`` (the gateway's setting
``GATEWAY_GPU_NVML=fake``) loads it from beside the sampler; nothing else imports it.

The script (environment of the job):

- ``FAKE_NVML_UTIL``: per NVML index, the utilisation values (percent) successive samples see,
  cycled: ``"0:0,100;1:50"`` gives device 0 0, 100, 0, 100, ... and device 1 always 50. Devices
  not named keep the default, ``DEFAULT_UTIL_PCT[index]``.
- ``FAKE_NVML_FAIL``: ``init`` makes nvmlInit fail as on a node without the driver;
  ``crash-after:N`` makes the N+1-th utilisation read raise a RuntimeError (not an NVML error: the
  sampler's crash path).

Each device's other values follow its utilisation ``u``: power ``60 + 2.4 u`` W, memory used
``1024 (index + 1) + 10 u`` MiB of 16384, temperature ``30 + u / 4`` C, SM clock 210 MHz at 0 %
else 1410 MHz.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
DEVICES_PER_NODE = 4
DEFAULT_UTIL_PCT = (0, 25, 50, 100)
MEM_TOTAL_MIB = 16384
_NAMESPACE = uuid.UUID("6f1c3e2a-9d4b-4c55-8a0e-0f5a1d2b3c4d")


class NVMLError(Exception):
    """What pynvml raises; the fake raises it (or a subclass) in the same places."""


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - pynvml's own name
    pass


class NVMLError_InvalidArgument(NVMLError):  # noqa: N801 - pynvml's own name
    pass


@dataclass(frozen=True)
class _Rates:
    gpu: int
    memory: int


@dataclass(frozen=True)
class _Memory:
    total: int
    used: int
    free: int


@dataclass(frozen=True)
class _Handle:
    index: int


_state = {"init": False, "util_reads": 0, "calls": {}}


def node_name() -> str:
    """The node the fake answers for: Slurm's name for it, else the host name."""
    return os.environ.get("SLURMD_NODENAME") or os.uname().nodename


def device_uuid(node: str, index: int) -> str:
    """The UUID fake device ``index`` of ``node`` reports (stable, distinct across nodes)."""
    return "GPU-" + str(uuid.uuid5(_NAMESPACE, f"{node}/{index}"))


def device_minor(node: str, index: int) -> int:
    """The minor number (``/dev/fakegpuN``): g1 has 0-3, g2 4-7, as gres.conf says."""
    digits = re.search(r"([0-9]+)$", node)
    return (int(digits.group(1)) - 1 if digits else 0) * DEVICES_PER_NODE + index


def _script() -> dict[int, list[int]]:
    script: dict[int, list[int]] = {}
    for part in (os.environ.get("FAKE_NVML_UTIL") or "").split(";"):
        if ":" in part:
            index, values = part.split(":", 1)
            script[int(index)] = [int(v) for v in values.split(",") if v.strip()]
    return script


def _check(handle: _Handle) -> int:
    if not _state["init"]:
        raise NVMLError("Uninitialized")
    if not isinstance(handle, _Handle) or not 0 <= handle.index < DEVICES_PER_NODE:
        raise NVMLError_InvalidArgument("Invalid Argument")
    return handle.index


def _util(index: int) -> int:
    """The utilisation the next sample of device ``index`` sees (does not advance the script)."""
    values = _script().get(index) or [DEFAULT_UTIL_PCT[index]]
    calls = _state["calls"].get(index, 0)
    return max(0, min(100, values[calls % len(values)]))


def nvmlInit() -> None:  # noqa: N802 - pynvml's names
    if (os.environ.get("FAKE_NVML_FAIL") or "") == "init":
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found (fake NVML told to fail)")
    _state["init"] = True


def nvmlShutdown() -> None:  # noqa: N802
    _state["init"] = False


def nvmlSystemGetDriverVersion() -> str:  # noqa: N802
    return "fake-0.1"


def nvmlDeviceGetCount() -> int:  # noqa: N802
    if not _state["init"]:
        raise NVMLError("Uninitialized")
    return DEVICES_PER_NODE


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:  # noqa: N802
    return _Handle(_check(_Handle(index)))


def nvmlDeviceGetUUID(handle: _Handle) -> str:  # noqa: N802
    return device_uuid(node_name(), _check(handle))


def nvmlDeviceGetName(handle: _Handle) -> str:  # noqa: N802
    _check(handle)
    return "Fake GPU (test double)"


def nvmlDeviceGetMinorNumber(handle: _Handle) -> int:  # noqa: N802
    return device_minor(node_name(), _check(handle))


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> _Rates:  # noqa: N802
    index = _check(handle)
    fail = os.environ.get("FAKE_NVML_FAIL") or ""
    if fail.startswith("crash-after:") and _state["util_reads"] >= int(fail.split(":", 1)[1]):
        raise RuntimeError("fake NVML told to crash the sampler")
    _state["util_reads"] += 1
    util = _util(index)
    _state["calls"][index] = _state["calls"].get(index, 0) + 1  # the next sample moves on
    return _Rates(gpu=util, memory=util // 2)


def _last(index: int) -> int:
    """The utilisation of the sample being taken (the one the last utilisation read returned)."""
    values = _script().get(index) or [DEFAULT_UTIL_PCT[index]]
    calls = max(0, _state["calls"].get(index, 0) - 1)
    return max(0, min(100, values[calls % len(values)]))


def nvmlDeviceGetMemoryInfo(handle: _Handle) -> _Memory:  # noqa: N802
    index = _check(handle)
    used_mib = 1024 * (index + 1) + 10 * _last(index)
    return _Memory(total=MEM_TOTAL_MIB << 20, used=used_mib << 20, free=(MEM_TOTAL_MIB - used_mib) << 20)


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:  # noqa: N802
    """Milliwatts, as NVML reports."""
    return int((60 + 2.4 * _last(_check(handle))) * 1000)


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:  # noqa: N802
    index = _check(handle)
    if sensor != NVML_TEMPERATURE_GPU:
        raise NVMLError_InvalidArgument("Invalid Argument")
    return 30 + _last(index) // 4


def nvmlDeviceGetClockInfo(handle: _Handle, clock: int) -> int:  # noqa: N802
    index = _check(handle)
    if clock != NVML_CLOCK_SM:
        raise NVMLError_InvalidArgument("Invalid Argument")
    return 210 if _last(index) == 0 else 1410
