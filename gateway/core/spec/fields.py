"""The run spec's single-field rules: what each field of ``RunSpec`` accepts, in people's words.

``RunSpec`` (gateway/core/spec/run_spec.py) binds each check to its field; its rules
about several fields (``_shape``) and its hash stay there. The same rules, as
JSON-schema keywords, are on the fields' annotations (gateway/core/described.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gateway.core import names
from gateway.core.spec.lineage import (
    IMAGE_DIGEST,
    MAX_OUTPUT_PATTERNS,
    DatasetUse,
    check_relative,
    parse_dataset_ref,
)
from gateway.core.spec.parts import MAX_TEXT, MODULE_NAME, SHA256_HEX, _check_text


def check_command(value: str | list[str] | None) -> str | list[str] | None:
    """A command line (not blank) or an argv list (not empty): text a shell script can carry."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("is empty; give the command to run")
        return _check_text(value, allow_newlines=True)
    if not value:
        raise ValueError("is an empty list; give the program and its arguments")
    for arg in value:
        _check_text(arg, allow_newlines=True)
    return value


def check_script(value: str | None) -> str | None:
    """A script's text: not blank, no NUL."""
    if value is not None:
        if not value.strip():
            raise ValueError("is empty; give the script's text")
        _check_text(value, allow_newlines=True)
    return value


def check_submit_dir(value: str | None) -> str | None:
    """An absolute path on one line."""
    if value is not None:
        _check_text(value, allow_newlines=False)
        if not value.startswith("/"):
            raise ValueError("must be an absolute path (starting with '/')")
    return value


def check_workdir(value: str | None) -> str | None:
    """An absolute path on one line."""
    if value is None:
        return None
    _check_text(value, allow_newlines=False)
    if not value.startswith("/"):
        raise ValueError("must be an absolute path (starting with '/')")
    return value


def check_output(value: str | None) -> str | None:
    """An output file name (``names.OUTPUT_PATH``)."""
    if value is not None and not names.OUTPUT_PATH.fullmatch(value):
        raise ValueError(f"not a valid output file; use {names.OUTPUT_PATH_HELP}")
    return value


def check_script_args(value: list[str]) -> list[str]:
    """Script arguments: text a shell script can carry."""
    for arg in value:
        _check_text(arg, allow_newlines=True)
    return value


def check_env(value: dict[str, str]) -> dict[str, str]:
    """Environment variables: shell names not reserved by Slurm or the gateway; text values."""
    for key, item in value.items():
        if not names.ENV_NAME.fullmatch(key):
            raise ValueError(f"variable {key!r} is not valid; use {names.ENV_NAME_HELP}")
        if key.startswith(names.RESERVED_ENV_PREFIXES):
            raise ValueError(
                f"variable {key!r} is reserved; names starting with "
                f"{' or '.join(names.RESERVED_ENV_PREFIXES)} are set by Slurm and the gateway"
            )
        _check_text(item, allow_newlines=True)
    return value


def check_secrets(value: dict[str, Any]) -> dict[str, Any]:
    """Secrets: shell names not reserved by Slurm or the gateway, each read from a file at run time."""
    for key in value:
        if not names.ENV_NAME.fullmatch(key):
            raise ValueError(f"secret {key!r} is not a valid variable name; use {names.ENV_NAME_HELP}")
        if key.startswith(names.RESERVED_ENV_PREFIXES):
            raise ValueError(
                f"secret {key!r} is reserved; names starting with "
                f"{' or '.join(names.RESERVED_ENV_PREFIXES)} are set by Slurm and the gateway"
            )
    return value


def check_image(value: str | None) -> str | None:
    """An image reference or path: one line, no spaces."""
    if value is None:
        return None
    _check_text(value, allow_newlines=False)
    if not value.strip() or " " in value:
        raise ValueError("must be an image reference or path without spaces")
    return value


# Words that make a param's name look like a secret's (its name split at _ - . and case changes).
SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passphrase", "token", "secret", "key", "apikey", "credential",
     "credentials", "auth", "cookie", "session"}
)  # fmt: skip
SECRET_MARK = "look(s) like a secret by name"  # an error with it never echoes its input (secret_input)
SECRET_ENTRY_MARK = "is no field of a secret's reference"  # nor one with this
SECRET_HELP = (
    "params are stored in the database and reach the rendered script (GW_PARAMS, GW_PARAM_*), the "
    "job's params.json, the pages and evidence bundles, so a secret must not be one; keep the value in a "
    "file only you can read and have the job read it at run time (docs/run-spec.md#secrets), or rename "
    "the param if it is no secret"
)


def secret_reference(data: Any, allowed: tuple[str, ...], what: str) -> Any:
    """``data`` (a secret's entry, before validation) unchanged, unless it has a key outside
    ``allowed`` (``value:``, say): then a ValueError that names the keys and never echoes the entry,
    which may hold the secret itself."""
    if isinstance(data, dict):
        unknown = sorted(str(k) for k in data if k not in allowed)
        if unknown:
            raise ValueError(
                f"{what}: {', '.join(unknown)} {SECRET_ENTRY_MARK} (valid fields here: "
                f"{', '.join(allowed)}); name where the value lives, never the value (the entry is not "
                "echoed: it may hold one)"
            )
    return data


def secret_input(message: str) -> bool:
    """Whether an error ``message`` is the secret-looking-param refusal, whose input (the would-be
    secret) an answer must not echo."""
    return SECRET_MARK in message or SECRET_ENTRY_MARK in message


def secret_like(name: str) -> bool:
    """Whether a param's name looks like a secret's (a word of it is in ``SECRET_WORDS``):
    ``password``, ``api_token``, ``hfToken``, ``private-key``; not ``max_tokens`` or ``keyword``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return any(word in SECRET_WORDS for word in re.split(r"[^A-Za-z0-9]+|\s+", spaced.lower()) if word)


def secret_param_paths(value: Any, path: str = "params") -> list[str]:
    """The paths of ``params`` (and their nested mappings) whose names look like secrets'."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}"
            if secret_like(str(key)):
                found.append(sub)
            found += secret_param_paths(item, sub)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += secret_param_paths(item, f"{path}.{i}")
    return found


def check_params(value: dict[str, Any], *, stored: bool = False) -> dict[str, Any]:
    """Plain JSON values, at most ``MAX_TEXT`` characters as JSON, and no name that looks like a
    secret's (``secret_like``; a ``stored`` spec, read back from before the rule, is let be)."""
    secrets = [] if stored else secret_param_paths(value)
    if secrets:
        raise ValueError(f"{', '.join(secrets)} {SECRET_MARK}; {SECRET_HELP}")
    try:
        size = len(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"must be plain JSON values (no NaN/inf, no objects): {exc}") from exc
    if size > MAX_TEXT:
        raise ValueError(f"are {size} characters as JSON; at most {MAX_TEXT}")
    return value


def check_datasets(value: list[str | DatasetUse]) -> list[str | DatasetUse]:
    """Dataset references and absolute paths; no two references share a name."""
    seen: dict[str, str] = {}
    for item in value:
        ref = item.ref if isinstance(item, DatasetUse) else item
        _check_text(ref, allow_newlines=False)
        if not ref.strip():
            raise ValueError("a dataset reference is empty")
        if ref.startswith("/"):
            continue  # a plain path, checked by the pre-flight as it is
        name = parse_dataset_ref(ref).name
        if name in seen:
            raise ValueError(f"datasets {seen[name]!r} and {ref!r} share the name {name!r}; use each once")
        seen[name] = ref
    return value


def check_outputs(value: list[str]) -> list[str]:
    """Output glob patterns under the run directory."""
    if len(value) > MAX_OUTPUT_PATTERNS:
        raise ValueError(f"has {len(value)} patterns; at most {MAX_OUTPUT_PATTERNS}")
    return [check_relative(v, "output pattern", glob=True) for v in value]


def check_metrics(value: list[str]) -> list[str]:
    """Metrics files (.json/.jsonl) under the run directory."""
    if len(value) > MAX_OUTPUT_PATTERNS:
        raise ValueError(f"has {len(value)} files; at most {MAX_OUTPUT_PATTERNS}")
    for item in value:
        check_relative(item, "metrics file", glob=False)
        if not item.endswith((".json", ".jsonl")):
            raise ValueError(f"metrics file {item!r} must end in .json (summary) or .jsonl (per step)")
    return value


def check_container_digest(value: str | None) -> str | None:
    """``sha256:`` and 64 hex digits, lower-cased."""
    if value is not None and not IMAGE_DIGEST.fullmatch(value.lower()):
        raise ValueError("must be 'sha256:' and 64 hex digits")
    return value.lower() if value else value


def check_digests(value: dict[str, str]) -> dict[str, str]:
    """sha256 digests (lower-cased) by absolute dataset path."""
    checked = {}
    for path, digest in value.items():
        _check_text(path, allow_newlines=False)
        if not path.startswith("/"):
            raise ValueError(f"key {path!r} must be an absolute dataset path (starting with '/')")
        if not SHA256_HEX.fullmatch(digest.lower()):
            raise ValueError(f"digest for {path!r} must be 64 hex digits (sha256), not {digest!r}")
        checked[path] = digest.lower()
    return checked


def check_modules(value: list[str]) -> list[str]:
    """Module names (``module load``)."""
    for module in value:
        if not MODULE_NAME.fullmatch(module):
            raise ValueError(
                f"module {module!r} is not valid; use 1-128 letters, digits and . _ / + - (e.g. cuda/12.4)"
            )
    return value


def check_environment(value: str | None) -> str | None:
    """An environment reference, ``[project/]name@version`` (the dataset reference's form)."""
    if value is not None:
        try:
            parse_dataset_ref(value)
        except ValueError as exc:
            raise ValueError(str(exc).replace("dataset reference", "environment reference")) from None
    return value


def check_venv(value: str | None) -> str | None:
    """A virtual environment's absolute path."""
    if value is None:
        return None
    _check_text(value, allow_newlines=False)
    if not value.startswith("/"):
        raise ValueError("must be the absolute path of a virtual environment (starting with '/')")
    return value


def check_tags(value: list[str]) -> list[str]:
    """Tags (``names.TAG``)."""
    for tag in value:
        if not names.TAG.fullmatch(tag):
            raise ValueError(f"tag {tag!r} is not valid; use {names.TAG_HELP}")
    return value
