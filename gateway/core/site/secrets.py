"""Secrets the site or a project holds, named by reference (docs/access.md#site-and-project-secrets).

A site file defines each one by *where its value lives*: a file the gateway's own user can read
(``file``), or an environment variable of ``gw serve`` (``env``); never the value. A run names
one (``secrets: {HF_TOKEN: {site: hf-token}}`` or ``{project: wandb}``); ``use_problem`` decides
whether the run's owner may use it (the run's project, the owner's role there). The value is read
only when a job is sent, and written for the job's user into its run directory
(``gateway.services.runs.held_secrets``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.core import names
from gateway.core.described import AbsoluteLine, Name, anchored, documented
from gateway.core.spec.fields import check_workdir, secret_reference

Role = Literal["viewer", "reviewer", "member", "lead"]
DEFAULT_ROLES: tuple[Role, ...] = ("member", "lead")
OPTION = "secrets"  # the site option that keeps the definitions (references only)
MAX_SECRET_BYTES = 64 * 1024


class HeldSecretSpec(BaseModel):
    """One secret's definition in the site file: its name and where the gateway finds its value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    # a file the gateway's user (gw serve) can read, e.g. root:root 0600; absolute, one line
    file: AbsoluteLine | None = None
    # an environment variable of gw serve
    env: Annotated[str, documented(pattern=anchored(names.ENV_NAME))] | None = None
    # the roles (in the run's project) whose runs may use it
    roles: list[Role] = Field(default_factory=lambda: list(DEFAULT_ROLES))

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not names.NAME.fullmatch(value):
            raise ValueError(f"not a valid name; use {names.NAME_HELP}")
        return value

    @field_validator("file")
    @classmethod
    def _file(cls, value: str | None) -> str | None:
        return check_workdir(value)  # absolute, one line, no control characters

    @field_validator("env")
    @classmethod
    def _env(cls, value: str | None) -> str | None:
        if value is not None and not names.ENV_NAME.fullmatch(value):
            raise ValueError(f"not a valid environment variable name; use {names.ENV_NAME_HELP}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _no_value(cls, data: Any) -> Any:
        allowed = tuple(cls.model_fields)
        name = data.get("name") if isinstance(data, dict) else None
        return secret_reference(data, allowed, f"secret {name}" if isinstance(name, str) else "a secret")

    @model_validator(mode="after")
    def _one_source(self) -> HeldSecretSpec:
        if (self.file is None) == (self.env is None):
            raise ValueError(
                f"secret {self.name}: give exactly one of file (a file gw serve can read) and env "
                "(an environment variable of gw serve); never the value itself"
            )
        return self


class SiteSecretSpec(HeldSecretSpec):
    """A site-held secret: ``projects`` lists the projects whose runs may use it (empty: every one)."""

    projects: list[Name] = Field(default_factory=list)


@dataclass(frozen=True)
class HeldSecret:
    """A stored definition: ``owner`` is "site" or the project's name."""

    owner: str
    name: str
    file: str | None
    env: str | None
    roles: tuple[str, ...]
    projects: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """Where the value lives, in words (never the value)."""
        return f"file {self.file}" if self.file else f"environment variable {self.env} of gw serve"

    def record(self) -> dict[str, Any]:
        """JSON-ready, as kept in the site option (references only)."""
        data: dict[str, Any] = {"owner": self.owner, "name": self.name, "roles": list(self.roles)}
        data.update({k: v for k, v in (("file", self.file), ("env", self.env)) if v is not None})
        if self.owner == "site":
            data["projects"] = list(self.projects)
        return data

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> HeldSecret:
        """A definition as ``record`` wrote it."""
        return cls(
            owner=data["owner"],
            name=data["name"],
            file=data.get("file"),
            env=data.get("env"),
            roles=tuple(data.get("roles") or DEFAULT_ROLES),
            projects=tuple(data.get("projects") or ()),
        )

    def spec(self) -> dict[str, Any]:
        """As the site file writes it (``exclude_defaults``-style)."""
        data = {k: v for k, v in self.record().items() if k != "owner"}
        if tuple(data["roles"]) == DEFAULT_ROLES:
            del data["roles"]
        if not data.get("projects", True):
            del data["projects"]
        return data


def definitions(site: list[SiteSecretSpec], projects: dict[str, list[HeldSecretSpec]]) -> list[HeldSecret]:
    """The site file's secrets as stored definitions, site ones first, each list in its order."""
    found = [HeldSecret("site", s.name, s.file, s.env, tuple(s.roles), tuple(s.projects)) for s in site]
    for project, items in sorted(projects.items()):
        found += [HeldSecret(project, s.name, s.file, s.env, tuple(s.roles)) for s in items]
    return found


def find(held: list[HeldSecret], kind: str, name: str, project: str) -> HeldSecret | None:
    """The definition a run of ``project`` names with ``{kind: name}`` (kind "site" or "project")."""
    owner = "site" if kind == "site" else project
    return next((h for h in held if h.owner == owner and h.name == name), None)


def use_problem(secret: HeldSecret, *, project: str, role: str | None, is_admin: bool) -> str | None:
    """None when a run of ``project``, owned by someone with ``role`` there, may use ``secret``."""
    if secret.owner == "site" and secret.projects and project not in secret.projects:
        return (
            f"site secret {secret.name} is for projects {', '.join(secret.projects)}, not {project}; "
            "ask a site admin to add the project to it"
        )
    if role in secret.roles:
        return None
    holder = "site" if secret.owner == "site" else f"project {secret.owner}"
    who = f"your role in {project} is {role}" if role else f"you are not a member of {project}"
    extra = " (site admins too need one of those roles)" if is_admin else ""
    return f"{holder} secret {secret.name} may be used by roles {', '.join(secret.roles)}; {who}{extra}"


def delivered_path(run_dir: str, var: str) -> str:
    """The file, in the run directory, a site or project secret's value is written to for the job
    (as the job's user, 0600); the job reads ``var`` from it in its pre-flight environment step."""
    return f"{run_dir}/.gw-secret-{var}"
