"""The sbatch templates: the Jinja2 environment they render in, its two filters, which template a
spec takes, and each template's version.

The environment is built once (``build_template_env``) and passed to ``render_sbatch``
(``render.py``). Every user value reaches a script through one of its two filters:

- ``shq``: checked (no NUL byte, bounded length) and shell-quoted; used for
  everything in the script body;
- ``slurm_field``: checked against a strict pattern; used in ``#SBATCH``
  lines, which sbatch reads itself and which no quoting can protect.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from gateway import resources
from gateway.core import names
from gateway.core.spec.run_spec import MAX_TEXT, RunSpec
from gateway.errors import SpecError, SpecIssue, TemplateError

TEMPLATE_SUFFIX = ".sbatch.j2"


def shq(value: object) -> str:
    """Validate a value and quote it for a POSIX shell; the one way user text enters a script."""
    text = value if isinstance(value, str) else json.dumps(value)
    if "\x00" in text:
        raise SpecError([SpecIssue("", "a value holds a NUL byte, which a script cannot carry")])
    if len(text) > MAX_TEXT:
        raise SpecError([SpecIssue("", f"a value is {len(text)} characters; at most {MAX_TEXT}")])
    return shlex.quote(text)


def slurm_field(value: object) -> str:
    """Check a value bound for an ``#SBATCH`` line against the strict name pattern."""
    text = str(value)
    if not (names.NAME.fullmatch(text) or names.OUTPUT_PATH.fullmatch(text)):
        raise SpecError(
            [SpecIssue("", f"value for an #SBATCH line is not allowed; use {names.NAME_HELP}", text)]
        )
    return text


_DICT_NAMES = frozenset(dir(dict))


class _SbatchEnvironment(jinja2.Environment):
    """Jinja2's environment with the same attribute look-up, made cheaper for the context's dicts.

    ``run.resources.mem_gb`` on a dict: Jinja2 tries ``getattr`` first, which raises (and catches)
    an AttributeError for every key of a plain dict, about 80 per script. A name that no dict has as
    an attribute can only be a key, so it is looked up as one first: the same answer, without the
    exception. ``items``, ``keys``, ``get`` ... go Jinja2's way, as before.
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_NAMES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def build_template_env(site_dir: str | Path | None = None) -> jinja2.Environment:
    """The Jinja2 environment for sbatch templates.

    A site's directory (``site_dir``) comes first, so a site can override one
    template and keep the rest; the built-in templates (``templates/sbatch/``,
    found by ``gateway.resources``) come after. FileNotFoundError when the
    built-in templates are missing (a broken install).
    """
    search = [str(Path(site_dir))] if site_dir else []
    search.append(str(resources.builtin_dir(resources.SBATCH_TEMPLATES)))
    env = _SbatchEnvironment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shq"] = shq
    env.filters["slurm_field"] = slurm_field
    return env


def template_for(spec: RunSpec) -> str:
    """The template a spec renders with."""
    if spec.sweep is not None:
        return "array" + TEMPLATE_SUFFIX
    if spec.launcher == "torchrun":
        return "torchrun" + TEMPLATE_SUFFIX
    return "single" + TEMPLATE_SUFFIX


def template_version(env: jinja2.Environment, name: str) -> str:
    """Version of a template: sha256 (12 hex) over its source and every template it pulls in.

    Cached while Jinja2 keeps the same compiled templates (it reloads a file
    that changed on disk, which gives a new version).
    """
    key = (id(env), name)
    cached = _VERSIONS.get(key)
    try:
        if cached and all(env.get_template(n) is t for n, t in zip(cached[0], cached[1], strict=True)):
            return cached[2]
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(f"sbatch template {exc.name!r} not found in {_search(env)}") from exc
    sources: dict[str, str] = {}
    pending = [name]
    while pending:
        current = pending.pop()
        if current in sources:
            continue
        try:
            source, _, _ = env.loader.get_source(env, current)  # type: ignore[union-attr]  # build_template_env always sets a loader
        except jinja2.TemplateNotFound as exc:
            raise TemplateError(f"sbatch template {current!r} not found in {_search(env)}") from exc
        sources[current] = source
        pending.extend(_referenced(source))
    digest = hashlib.sha256()
    for key_name in sorted(sources):
        digest.update(key_name.encode() + b"\0" + sources[key_name].encode() + b"\0")
    version = digest.hexdigest()[:12]
    names_used = tuple(sorted(sources))
    _VERSIONS[key] = (names_used, tuple(env.get_template(n) for n in names_used), version)
    return version


_VERSIONS: dict[tuple[int, str], tuple[tuple[str, ...], tuple[jinja2.Template, ...], str]] = {}
_PARSE_ENV = jinja2.Environment()


@functools.lru_cache(maxsize=64)
def _referenced(source: str) -> tuple[str, ...]:
    """Names of the templates a template source imports, includes or extends."""
    return tuple(t for t in jinja2.meta.find_referenced_templates(_PARSE_ENV.parse(source)) if t)


def _search(env: jinja2.Environment) -> str:
    return ", ".join(getattr(env.loader, "searchpath", []))
