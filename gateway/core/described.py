"""String types that carry their validator's rule into the JSON schema (and so the OpenAPI).

A field's validator refuses bad values with a message in people's words;
the same rule, as JSON-schema keywords (``pattern``, ``maxLength`` ...),
goes in the description with ``documented``, so that what the description
allows is what the server accepts, field by field. The validators stay the
ones that refuse: these keywords are for the description only, and the API's
conformance test (tests/service/test_api_conformance.py) checks the two agree.

Rules about more than one field, or about the gateway's state (a queue of
the project, a name not listed twice), are not written here; docs/api.md
lists them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from gateway.core import names

MAX_TEXT = 64 * 1024  # longest command, script body or environment value accepted


def documented(**keywords: Any) -> Any:
    """JSON-schema ``keywords`` for a field whose validator enforces them (with its own message)."""
    return Field(json_schema_extra=keywords)


def anchored(regex: re.Pattern[str] | str) -> str:
    """A whole-value JSON-schema pattern for a regex the server uses with ``fullmatch``."""
    return f"^(?:{regex.pattern if isinstance(regex, re.Pattern) else regex})$"


# A rerun's KEY.PATH=VALUE edit (core/specdiff.parse_assignment): before the first '=', a path of
# non-empty keys between dots, blank around it allowed. Its depth and length are the server's alone.
ASSIGNMENT = r"^\s*(?:[^\s.=](?:[^=.]*[^\s.=])?|[^\s.=][^=.]*(?:\.[^=.]+)*\.[^=.]*[^\s.=])\s*="

# Text a shell script can carry: no NUL (newlines allowed); not blank, where the validator says so.
TEXT = r"^[^\x00]*$"
NON_BLANK_TEXT = r"^\s*[^\s\x00][^\x00]*$"
# One line: no control characters at all.
LINE = r"^[^\x00-\x1f\x7f]*$"
NON_BLANK_LINE = r"^[^\S\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
ABSOLUTE_LINE = r"^/[^\x00-\x1f\x7f]*$"
# A path below the run directory: parts of letters, digits and . _ + = @ , - (and, in outputs, the
# glob characters * ? [ ]), none of them empty, '.' or '..'.
_PART = r"\.*[{c}][.{c}]*|\.{{3,}}"
_GLOB_CHARS = r"A-Za-z0-9_*?\[\]+=@,-"
_FILE_CHARS = r"A-Za-z0-9_+=@,-"
RELATIVE_GLOB = "^(?:{p})(?:/(?:{p}))*$".format(p=_PART.format(c=_GLOB_CHARS))
METRICS_FILE = f"^(?:(?:{_PART.format(c=_FILE_CHARS)})/)*[.{_FILE_CHARS}]*\\.jsonl?$"

# An image reference: one line, no spaces, not blank.
IMAGE = r"^[^\x00-\x1f\x7f ]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f ]*$"
SHA256 = r"^[0-9a-fA-F]{64}$"  # the validator lower-cases it

Name = Annotated[str, documented(pattern=anchored(names.NAME))]
Tag = Annotated[str, documented(pattern=anchored(names.TAG))]
GpuType = Annotated[str, documented(pattern=anchored(names.GPU_TYPE))]
Account = Annotated[str, documented(pattern=anchored(names.ACCOUNT))]
OsUser = Annotated[str, documented(pattern=anchored(names.OS_USER))]
OutputPath = Annotated[str, documented(pattern=anchored(names.OUTPUT_PATH))]
Text = Annotated[str, documented(pattern=TEXT, maxLength=MAX_TEXT)]
NonBlankText = Annotated[str, documented(pattern=NON_BLANK_TEXT, maxLength=MAX_TEXT)]
Line = Annotated[str, documented(pattern=LINE, maxLength=MAX_TEXT)]
NonBlankLine = Annotated[str, documented(pattern=NON_BLANK_LINE, maxLength=MAX_TEXT)]
AbsoluteLine = Annotated[str, documented(pattern=ABSOLUTE_LINE, maxLength=MAX_TEXT)]
RelativeGlob = Annotated[str, documented(pattern=RELATIVE_GLOB, maxLength=1024)]
MetricsFile = Annotated[str, documented(pattern=METRICS_FILE, maxLength=1024)]
Sha256Hex = Annotated[str, documented(pattern=SHA256)]
