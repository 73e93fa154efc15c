"""The POC site file: which of its user's projects and queues the POC copies, and where it writes.

Every key is optional; with no file the POC uses project ``demo`` and its
``cpu`` and ``gpu`` queues, as ``make up`` sets them (examples/site.yaml).
``docs/poc.md`` shows a file with every key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.core.yaml_input import SPEC_LIMITS, load_yaml
from gateway.errors import SpecError, SpecIssue

REPO = Path(__file__).resolve().parents[2]


class CostSite(BaseModel):
    """The cost steps (``GET /runs/{id}/cost``) and the prices they rest on.

    ``rates`` is the place for the site's rate table: the ``accounting:``
    section of a gateway site file, inline or as the path of a YAML file that
    holds it (accounting/ has an example). When given, the POC's site apply
    (the one that makes its project) carries it, so the gateway prices with it
    from then on, for every project: leave it out on a site whose gateway has
    its rates already. Either way the summary records it. ``currency``, when
    given, must be the one the costs are in.
    """

    model_config = ConfigDict(extra="forbid")

    rates: str | dict[str, Any] | None = None
    currency: str | None = None
    require_priced: bool = True  # a cost answer with priced: false fails the step

    def rate_table(self, base: Path) -> dict[str, Any] | None:
        """The ``accounting:`` section to apply: ``rates`` itself, or the YAML file it names (relative to
        ``base``); None when there is none. SpecError for a file that is not a mapping."""
        if self.rates is None or isinstance(self.rates, dict):
            return _json_safe(self.rates)
        path = Path(self.rates) if Path(self.rates).is_absolute() else base / self.rates
        data = load_yaml(path.read_text(), what="rate table", limits=SPEC_LIMITS)
        if not isinstance(data, dict):
            raise SpecError(
                [SpecIssue("cost.rates", "the file must hold a mapping", str(path))], what="POC site file"
            )
        return _json_safe(data.get("accounting", data))


def _json_safe(table: dict[str, Any] | None) -> dict[str, Any] | None:
    """The table as JSON carries it: YAML reads ``valid_from: 2026-01-01`` as a date; JSON has ISO text."""
    if table is None:
        return None
    return json.loads(json.dumps(table, default=lambda value: value.isoformat()))


class ClusterEntry(BaseModel):
    """One entry of the gateway site file's ``clusters:`` (docs/clusters.md), as the POC hands it on:
    ``name`` here, the rest checked by the gateway's site apply."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]

    def entry(self) -> dict[str, Any]:
        """The entry as the site file has it."""
        return self.model_dump(exclude_none=True)


class PocSite(BaseModel):
    """Where the POC runs: a project of its user with a cpu and a gpu queue, and the POC's knobs."""

    model_config = ConfigDict(extra="forbid")

    project: str = Field("demo", description="A project of the POC's user with a cpu and a gpu queue")
    cpu_queue: str = "cpu"
    gpu_queue: str = "gpu"
    gpu_type: str | None = Field(None, description="Default: the gpu queue's first GPU type")
    prefix: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,15}$")] = "poc"
    gpu_cap: Annotated[int, Field(ge=1, le=64)] = 1
    workdir: str | None = Field(
        None, description="A folder every node reads (the data and code copies); default the --out folder"
    )
    code_dir: str | None = Field(
        None, description="The folder that holds examples/tiny_lm; default this checkout"
    )
    poll_s: Annotated[float, Field(gt=0, le=30)] = 1.0
    wait_s: Annotated[float, Field(gt=0, le=3600)] = 240.0
    keep: bool = Field(False, description="Keep the POC's project at the end (for a look around)")
    cpu_cluster: str | None = Field(
        None, description="The cluster of the POC's cpu queue; default: the base cpu queue's (docs/poc.md)"
    )
    gpu_cluster: str | None = Field(
        None, description="The cluster of the POC's gpu queue; default: the base gpu queue's"
    )
    clusters: list[ClusterEntry] = Field(
        default_factory=list,
        description="Clusters the POC's queues go on that the gateway's site may not list yet (the gateway "
        "site file's clusters: entries); added for the run, the site's own list restored at its end",
    )
    cost: CostSite = CostSite()
    base: Path = Field(Path("."), exclude=True, description="Where relative paths of the file start")

    @property
    def code_root(self) -> Path:
        """The folder with ``examples/tiny_lm`` (and, for the suite, ``eval/``): a checkout."""
        return Path(self.code_dir) if self.code_dir else REPO


def load_site(path: Path | None) -> PocSite:
    """The POC site file at ``path`` (None: every default). SpecError for a file that does not validate."""
    if path is None:
        return PocSite()
    data = load_yaml(path.read_text(), what="POC site file", limits=SPEC_LIMITS) or {}
    try:
        return PocSite.model_validate({**data, "base": path.parent})
    except ValidationError as exc:
        issues = [
            SpecIssue(".".join(str(p) for p in e["loc"]) or "(file)", e["msg"], e.get("input"))
            for e in exc.errors()
        ]
        raise SpecError(issues, what="POC site file") from exc
