"""Advisories in the OSV format (https://ossf.github.io/osv-schema/) matched against a package set.

Only PyPI entries count. A package version is affected when an ``affected`` entry lists it in
``versions``, or when it falls in one of its ``ECOSYSTEM`` ranges: the events sorted as given,
``introduced`` opens a range, ``fixed`` closes it (that version not included), ``last_affected``
closes it (included); versions compare as PEP 440 (``packaging``). ``SEMVER`` and ``GIT`` ranges
are not PyPI's and are skipped. Severity is the advisory's ``database_specific.severity`` (GitHub's
LOW, MODERATE, HIGH, CRITICAL), else ``UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from gateway.core.envs.lockfile import normalise

SEVERITIES = ("UNKNOWN", "LOW", "MODERATE", "HIGH", "CRITICAL")  # in rising order


@dataclass(frozen=True)
class Affected:
    name: str  # normalised
    ranges: tuple[tuple[tuple[str, str], ...], ...]  # each range's events: (kind, version)
    versions: frozenset[str]


@dataclass(frozen=True)
class Advisory:
    id: str
    summary: str
    severity: str
    affected: tuple[Affected, ...]
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    package: str
    version: str
    advisory: str  # its id
    severity: str
    summary: str
    fixed: tuple[str, ...]  # versions that fix it, as the advisory gives them
    aliases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "package": self.package,
            "version": self.version,
            "advisory": self.advisory,
            "severity": self.severity,
            "summary": self.summary,
            "fixed": list(self.fixed),
            "aliases": list(self.aliases),
        }


def parse_advisory(data: Mapping[str, Any]) -> Advisory:
    """One OSV document; ValueError naming what is missing."""
    if not isinstance(data.get("id"), str) or not data["id"]:
        raise ValueError("an OSV advisory needs a string 'id'")
    severity = str((data.get("database_specific") or {}).get("severity") or "UNKNOWN").upper()
    if severity not in SEVERITIES:
        severity = "UNKNOWN"
    affected = []
    for item in data.get("affected") or []:
        package = (item or {}).get("package") or {}
        if package.get("ecosystem") != "PyPI" or not isinstance(package.get("name"), str):
            continue
        ranges = []
        for r in item.get("ranges") or []:
            if r.get("type") != "ECOSYSTEM":
                continue
            events = []
            for event in r.get("events") or []:
                for kind in ("introduced", "fixed", "last_affected", "limit"):
                    if kind in event:
                        events.append((kind, str(event[kind])))
            ranges.append(tuple(events))
        versions = frozenset(str(v) for v in item.get("versions") or [])
        affected.append(Affected(normalise(package["name"]), tuple(ranges), versions))
    aliases = tuple(str(a) for a in data.get("aliases") or [])
    return Advisory(
        data["id"],
        str(data.get("summary") or data.get("details") or "")[:500],
        severity,
        tuple(affected),
        aliases,
    )


def scan(packages: Mapping[str, str], advisories: Iterable[Advisory]) -> list[Finding]:
    """Every (package, advisory) where the installed version is affected; worst first, then by name."""
    found = []
    wanted = {normalise(k): v for k, v in packages.items()}
    for advisory in advisories:
        for item in advisory.affected:
            version = wanted.get(item.name)
            if version is None or not _affects(item, version):
                continue
            fixed = tuple(v for r in item.ranges for kind, v in r if kind == "fixed")
            found.append(
                Finding(
                    item.name,
                    version,
                    advisory.id,
                    advisory.severity,
                    advisory.summary,
                    fixed,
                    advisory.aliases,
                )
            )
            break  # one finding per advisory and package
    return sorted(found, key=lambda f: (-SEVERITIES.index(f.severity), f.package, f.advisory))


def worst(findings: Iterable[Finding]) -> str | None:
    """The highest severity among ``findings``; None for none."""
    levels = [SEVERITIES.index(f.severity) for f in findings]
    return SEVERITIES[max(levels)] if levels else None


def _affects(item: Affected, version: str) -> bool:
    if version in item.versions:
        return True
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    for events in item.ranges:
        inside = False
        for kind, value in events:
            if kind == "introduced":
                inside = inside or value == "0" or _le(value, v)
            elif inside:
                # fixed and limit: that version is out; last_affected: it is still in
                closes = _lt(value, v) if kind == "last_affected" else _le(value, v)
                inside = not closes
        if inside:
            return True
    return False


def _le(bound: str, v: Version) -> bool:
    try:
        return Version(bound) <= v
    except InvalidVersion:
        return False


def _lt(bound: str, v: Version) -> bool:
    try:
        return Version(bound) < v
    except InvalidVersion:
        return False
