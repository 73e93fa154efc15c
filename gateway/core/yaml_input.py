"""Bounded reading of YAML text (and of JSON text, which is YAML): specs, site files, ``set`` values.

``load_yaml(text, limits=...)`` is PyYAML's safe loader with limits checked
while the document is composed, so a hostile document is refused after
reading at most a limit's worth of it, in milliseconds and bounded memory:

- ``max_chars``: the text's length, checked before anything is parsed.
- ``max_depth``: collections inside collections (a top-level mapping is
  level 1), checked as each one starts, before the composer recurses into
  it; a 100k-deep document never reaches Python's recursion limit.
- ``max_nodes``: scalars, lists and mappings in all (a 25M-item list).
- Anchors (``&a``) and aliases (``*a``) are refused outright, not given a
  budget: the billion-laughs bomb needs them, and even a small budget lets a
  few hundred bytes name one value millions of times over, which every
  consumer (pydantic, ``json.dumps``, ``copy.deepcopy``) then expands. No
  spec or site file needs them, and JSON has none. Merge keys (``<<``) go
  with them. Write the value out instead.
- Duplicate mapping keys are refused, naming both lines (PyYAML lets the
  last one win: a reviewed line could say one queue and a later one another).
- Non-finite floats (``.nan``, ``.inf``, ``1.0e+999``) are refused: JSON has
  no such number and no field takes one. Integers of more than
  ``MAX_INT_DIGITS`` digits (Python's int-from-text limit) are refused too.

Speed: when PyYAML has libyaml, the events come from its C parser
(``yaml.CParser``) while composition, where the checks live, stays in
Python. PyYAML's all-C ``CSafeLoader`` composes in C, out of reach of the
checks, so it is not used. Without libyaml the pure-Python parser gives the
same answers, slower: its scanner reads up to 1024 characters ahead, which
costs up to half a second on a document of a thousand nested brackets.

Every refusal is a ``SpecError`` (``what`` and ``source`` as the caller
says) with one issue at the caller's ``path``; its message says what was
wrong, where (line and column, 1-based) and the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from gateway.errors import SpecError, SpecIssue

MAX_DEPTH = 64  # collections inside collections, for every document the gateway reads (JSON bodies too)
MAX_INT_DIGITS = 4300  # sys.get_int_max_str_digits()'s default: longer integers are refused
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Limits:
    """Bounds on one document: characters, values (scalars and collections) and nesting levels."""

    max_chars: int
    max_nodes: int
    max_depth: int = MAX_DEPTH


SPEC_LIMITS = Limits(max_chars=1 << 20, max_nodes=100_000)  # a run spec or a site file
VALUE_LIMITS = Limits(max_chars=128 * 1024, max_nodes=10_000)  # one KEY.PATH=VALUE value


class _Refused(yaml.MarkedYAMLError):
    """A limit or rule of ours; ``problem`` says which, ``problem_mark`` where."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "the start"


class _BoundedComposer(Composer):
    """PyYAML's composer, counting values and nesting as it goes, refusing anchors and aliases."""

    def __init__(self, limits: Limits) -> None:
        super().__init__()
        self._limits = limits
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        # the parser mixed in beside this class (Parser or CParser) gives peek_event; Composer relies on it
        event = self.peek_event()  # type: ignore[attr-defined]  # from the parser mixed in
        if isinstance(event, AliasEvent):
            raise _Refused(
                f"alias *{event.anchor}: anchors and aliases are not accepted; write the value out",
                event.start_mark,
            )
        if event.anchor is not None:
            raise _Refused(
                f"anchor &{event.anchor}: anchors and aliases are not accepted; write the value out",
                event.start_mark,
            )
        self._nodes += 1
        if self._nodes > self._limits.max_nodes:
            limit = self._limits.max_nodes
            raise _Refused(
                f"more than {limit} values (scalars, lists and mappings); at most {limit} are read",
                event.start_mark,
            )
        if not isinstance(event, CollectionStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self._limits.max_depth:
            raise _Refused(_too_deep(self._limits.max_depth), event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _too_deep(limit: int) -> str:
    return f"nested more than {limit} levels of lists and mappings; at most {limit}"


class _StrictConstructor(SafeConstructor):
    """PyYAML's safe constructor, refusing duplicate and merge keys, non-finite floats and huge integers."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    said = "merge keys (<<) are not accepted; write the keys out"
                    raise _Refused(said, key_node.start_mark)
                key = self.construct_object(key_node, deep=deep)
                try:
                    hash(key)
                except TypeError:
                    continue  # the base constructor refuses an unhashable key in its own words
                if key in first_line:
                    raise _Refused(
                        f"duplicate key {key!r}, first on line {first_line[key]}; give each key once",
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node: Any) -> float:
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise _Refused(
                f"{node.value!r} is not a finite number; JSON has no NaN or infinity and no field takes one",
                node.start_mark,
            )
        return value

    def construct_yaml_int(self, node: Any) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise _Refused(
                f"an integer of {len(node.value)} characters; at most {MAX_INT_DIGITS} digits",
                node.start_mark,
            ) from None


# The stubs type a constructor as a function of a Loader; PyYAML's own SafeConstructor registers its
# methods this way, with the constructor class as the first argument.
_StrictConstructor.add_constructor("tag:yaml.org,2002:float", _StrictConstructor.construct_yaml_float)  # type: ignore[type-var]  # a constructor's own method
_StrictConstructor.add_constructor("tag:yaml.org,2002:int", _StrictConstructor.construct_yaml_int)  # type: ignore[type-var]  # a constructor's own method


class PyBoundedLoader(Reader, Scanner, Parser, _BoundedComposer, _StrictConstructor, Resolver):
    """The bounded loader over PyYAML's pure-Python reader, scanner and parser."""

    def __init__(self, text: str, limits: Limits) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self, limits)
        _StrictConstructor.__init__(self)
        Resolver.__init__(self)


LOADERS: list[type] = [PyBoundedLoader]

if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class CBoundedLoader(_BoundedComposer, CParser, _StrictConstructor, Resolver):
        """The bounded loader over libyaml's event parser; composition (and every check) stays ours."""

        def __init__(self, text: str, limits: Limits) -> None:
            CParser.__init__(self, text)
            _BoundedComposer.__init__(self, limits)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)

    LOADERS.insert(0, CBoundedLoader)


def load_yaml(
    text: str,
    *,
    limits: Limits = SPEC_LIMITS,
    what: str = "run spec",
    source: str | None = None,
    path: str = "",
    loader: type | None = None,
) -> Any:
    """The value of one YAML (or JSON) document within ``limits``; None for an empty one.

    Raises SpecError (``what``, ``source``) with one issue at ``path`` for
    text that is too long, not YAML, or breaks a rule of the module
    docstring. ``loader`` picks one of ``LOADERS`` (default: the fastest).
    """
    if len(text) > limits.max_chars:
        message = f"is {len(text)} characters long; at most {limits.max_chars} are read"
        raise _error(message, what, source, path)
    try:
        return _read(loader or LOADERS[0], text, limits)
    except _Refused as exc:
        message = f"{exc.problem} (at {_at(exc.problem_mark)})"
    except yaml.MarkedYAMLError as exc:
        message = _syntax(exc, limits)
    except ReaderError as exc:
        message = _unreadable(text, exc)
    except yaml.YAMLError as exc:
        message = f"not valid YAML or JSON: {exc}"
    except UnicodeEncodeError as exc:
        # libyaml reads UTF-8: a lone surrogate (JSON's "\ud800" gives one) is not text.
        shown = exc.object[exc.start : exc.end]
        message = f"not valid YAML or JSON: {shown!r} at position {exc.start} is not text"
    raise _error(message, what, source, path)


def _read(loader: type, text: str, limits: Limits) -> Any:
    reader = loader(text, limits)
    try:
        return reader.get_single_data()
    finally:
        reader.dispose()


def _syntax(exc: yaml.MarkedYAMLError, limits: Limits) -> str:
    mark = exc.problem_mark or exc.context_mark
    if exc.problem and "maximum nesting depth" in exc.problem:
        # libyaml stops flow nesting at 1000 levels while it scans ahead, before the composer sees level 65.
        return f"{_too_deep(limits.max_depth)} (at {_at(mark)})"
    said = ", ".join(part for part in (exc.context, exc.problem) if part)
    return f"not valid YAML or JSON: {said} (at {_at(mark)})"


def _unreadable(text: str, exc: ReaderError) -> str:
    """A character YAML does not allow; found again in ``text`` (libyaml counts bytes, not characters)."""
    index = text.find(chr(exc.character)) if isinstance(exc.character, int) else -1
    where = f"position {exc.position}"
    if index >= 0:
        where = f"line {text.count(chr(10), 0, index) + 1}, column {index - text.rfind(chr(10), 0, index)}"
    shown = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
    return f"not valid YAML or JSON: character {shown} (at {where}) is not allowed: {exc.reason}"


def _error(message: str, what: str, source: str | None, path: str) -> SpecError:
    return SpecError([SpecIssue(path, message)], source, what=what)
