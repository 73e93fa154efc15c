"""The bounded YAML reader: every bomb refused fast, in bounded memory; limits exact; both loaders alike."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gateway.core.spec.diff import parse_assignment
from gateway.core.spec.run_spec import parse_spec
from gateway.core.yaml_input import LOADERS, MAX_DEPTH, SPEC_LIMITS, VALUE_LIMITS, Limits, load_yaml
from gateway.errors import SpecError
from tests.cpu_clock import cpu_time

SPEC = "name: x\nproject: p\nqueue: cpu\ncommand: 'true'\n"
# Generous: a refusal takes a millisecond with libyaml (the pure-Python scanner reads up to 1024
# characters ahead: 0.2 s on a thousand nested brackets); the unfixed reader took minutes or died.
FAST_S = 1.0


def billion_laughs(*, indent: str = "", key: str = "laughs", levels: int = 9) -> str:
    """The classic billion laughs under ``key``: 9**levels 'lol's from under 400 bytes."""
    names = "abcdefghijklmnop"
    lines = [f"{key}:", f"{indent}a: &a [{','.join(['lol'] * 9)}]"]
    for prev, name in zip(names, names[1:levels], strict=False):
        lines.append(f"{indent}{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request):
    return request.param


def refusal(text: str, loader, limits: Limits = SPEC_LIMITS, within_s: float = FAST_S) -> str:
    with cpu_time() as spent, pytest.raises(SpecError) as info:
        load_yaml(text, limits=limits, loader=loader)
    assert spent.seconds < within_s, f"took {spent.seconds:.2f} CPU seconds"
    (issue,) = info.value.issues
    return issue.message


def test_the_fast_loader_is_used_when_libyaml_is_there():
    assert LOADERS[0].__name__ == ("CBoundedLoader" if yaml.__with_libyaml__ else "PyBoundedLoader")


def test_billion_laughs_is_refused_at_its_first_anchor(loader):
    text = billion_laughs(indent="  ")
    assert len(text) < 400
    message = refusal(text, loader)
    assert "anchor &a" in message and "line 2, column 6" in message and "write the value out" in message


def test_aliases_and_merge_keys_are_refused(loader):
    assert "alias *a" in refusal("a: *a\n", loader)
    assert "merge keys" in refusal("a: {x: 1}\nb: {<<: {x: 1}, y: 2}\n", loader)
    assert load_yaml("a: '*x'\nb: '<<'\nc: '&y'\n", loader=loader) == {"a": "*x", "b": "<<", "c": "&y"}


@pytest.mark.parametrize("depth", [65, 500, 10_000, 100_000])
@pytest.mark.parametrize(("open_", "close"), [("[", "]"), ("{a: ", "}")])
def test_deep_flow_nesting_is_refused_before_recursion(loader, depth, open_, close):
    message = refusal("x: " + nested(depth, open_, close).replace(open_ + close, open_ + "1" + close), loader)
    assert f"nested more than {MAX_DEPTH} levels" in message, message


def test_deep_block_nesting_is_refused(loader):
    blocks = "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v\n"
    assert "nested more than 64 levels" in refusal(blocks, loader)
    assert "nested more than 64 levels" in refusal("- " * 50_000 + "x\n", loader)


def test_nesting_exactly_at_the_limit_is_read(loader):
    # the top-level mapping is level 1, so MAX_DEPTH - 1 lists fit below it
    value = load_yaml("x: " + nested(MAX_DEPTH - 1), loader=loader)
    depth = 1
    node = value["x"]
    while node:
        node, depth = node[0], depth + 1
    assert depth == MAX_DEPTH - 1
    assert "nested more than 64" in refusal("x: " + nested(MAX_DEPTH), loader)
    assert load_yaml(nested(3), limits=replace(VALUE_LIMITS, max_depth=3), loader=loader) == [[[]]]
    assert "at most 2" in refusal(nested(3), loader, replace(VALUE_LIMITS, max_depth=2))


def test_the_node_cap_is_exact(loader):
    limits = Limits(max_chars=1 << 20, max_nodes=1000)
    assert len(load_yaml("[" + "0," * 998 + "0]", limits=limits, loader=loader)) == 999  # 999 + the list
    message = refusal("[" + "0," * 999 + "0]", loader, limits)
    assert "more than 1000 values" in message and "at most 1000" in message


def test_a_huge_flat_list_is_refused_by_the_node_cap(loader):
    text = "tags: [" + "a," * 200_000 + "a]\n"
    assert len(text) < SPEC_LIMITS.max_chars
    # 100k values are composed before the cap: 0.4 s with libyaml, 2.6 s in pure Python.
    assert "more than 100000 values" in refusal(text, loader, within_s=10.0)


def test_the_character_cap_is_exact(loader):
    limits = Limits(max_chars=100, max_nodes=100)
    text = "a: " + "x" * 97
    assert load_yaml(text, limits=limits, loader=loader) == {"a": "x" * 97}
    message = refusal(text + "x", loader, limits)
    assert "101 characters" in message and "at most 100" in message
    with cpu_time() as spent, pytest.raises(SpecError, match="at most 1048576"):
        parse_spec(SPEC + "tags: [" + "a," * 25_000_000 + "a]\n")  # 25 million items: never parsed
    assert spent.seconds < FAST_S


def test_duplicate_keys_name_both_lines(loader):
    message = refusal(SPEC + "resources: {mem_gb: 1}\nqueue: gpu\n", loader)
    assert "duplicate key 'queue', first on line 3" in message and "line 6, column 1" in message
    assert "duplicate key 'a'" in refusal('{"a": 1, "b": {"c": 2}, "a": 3}', loader)
    assert "duplicate key 'c'" in refusal("b:\n  c: 1\n  d: 2\n  c: 3\n", loader)
    assert "duplicate key 1.0" in refusal("1: a\n1.0: b\n", loader)  # the same key to Python
    assert "first on line 1" in refusal("? a\n: 1\na: 2\n", loader)


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1.0e+999", "!!float nan"])
def test_non_finite_floats_are_refused(loader, value):
    message = refusal(f"resources:\n  mem_gb: {value}\n", loader)
    assert "not a finite number" in message and "line 2, column 11" in message


def test_finite_floats_and_texts_that_look_like_nan_are_kept(loader):
    got = load_yaml("a: 1.5\nb: -0.0\nc: NaN\nd: 1e999\ne: 6.02e+23\n", loader=loader)
    assert got == {"a": 1.5, "b": -0.0, "c": "NaN", "d": "1e999", "e": 6.02e23}  # YAML 1.1: texts


def test_huge_integers_are_refused(loader):
    assert "5000 characters; at most 4300 digits" in refusal("x: " + "9" * 5000, loader)
    assert load_yaml("x: " + "9" * 4300, loader=loader)["x"] == int("9" * 4300)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x: !!python/object/apply:os.system [id]", "could not determine a constructor"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("name: [unclosed", "not valid YAML or JSON"),
        ("a: 1\nb: \x07\n", "#x0007 (at line 2, column 4)"),
        ("a: '\ud800'", "not valid YAML or JSON"),
    ],
)
def test_hostile_or_broken_text_is_a_clear_refusal(loader, text, words):
    assert words in refusal(text, loader)


def test_plain_documents_read_as_pyyaml_reads_them(loader):
    for text in (
        SPEC + "params: {lr: 0.1, layers: [1, 2], name: null, on: yes}\nresources:\n  mem_gb: 0.5\n",
        '{"name": "x", "params": {"a": [1, 2.5, true, null, "s"]}, "tags": []}',
        "",
        "- a\n- b\n",
    ):
        assert load_yaml(text, loader=loader) == yaml.safe_load(text)


def test_errors_carry_the_callers_words():
    with pytest.raises(SpecError) as info:
        load_yaml("a: &x 1", what="site file", source="site.yaml", path="users")
    assert str(info.value).startswith("invalid site file in site.yaml:\n  - users: anchor &x")


def test_set_values_are_bounded_with_the_path_counted():
    with pytest.raises(SpecError) as info:
        parse_assignment("params.x=" + billion_laughs())
    assert info.value.issues[0].path == "params.x" and "anchor" in info.value.issues[0].message
    with pytest.raises(SpecError, match="at most 62 below this path .64 in the whole spec."):
        parse_assignment("params.x=" + nested(63))
    assert parse_assignment("params.x=" + nested(62))[1] is not None
    with pytest.raises(SpecError, match="at most 63"):
        parse_assignment("params." + ".".join(["a"] * 63) + "=1")
    with pytest.raises(SpecError, match="at most 131072"):
        parse_assignment("script=" + "x" * (VALUE_LIMITS.max_chars + 1))
    with pytest.raises(SpecError, match="empty key"):
        parse_assignment("params..lr=1")
    with pytest.raises(SpecError, match="finite"):
        parse_assignment("resources.mem_gb=.inf")


MEMORY_CHECK = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
    from gateway.core.spec.run_spec import build_spec, parse_spec
    from gateway.core.spec.diff import parse_assignment, set_path
    from gateway.errors import SpecError

    texts = sys.stdin.read().split("\\0")
    for text in texts[:-1]:
        try:
            parse_spec(text)
        except SpecError as exc:
            print("refused:", exc.issues[0].message[:60])
    base = {"name": "x", "project": "p", "queue": "cpu", "command": "true"}
    try:
        build_spec(set_path(base, *parse_assignment(texts[-1])))
    except SpecError as exc:
        print("refused:", exc.issues[0].message[:60])
    """
)


def test_bombs_are_refused_in_bounded_memory():
    """Under a 512 MiB address-space limit the bombs are refused, not a MemoryError or a kill."""
    specs = [
        SPEC + billion_laughs(indent="  ", key="params"),
        SPEC + "params: {x: " + nested(100_000) + "}\n",
        SPEC + "tags: [" + "a," * 200_000 + "a]\n",
    ]
    value = "params.x=" + billion_laughs().replace("\n", "\n ")
    root = Path(__file__).resolve().parents[2]
    with cpu_time() as spent:
        result = subprocess.run(
            [sys.executable, "-c", MEMORY_CHECK],
            input="\0".join([*specs, value]),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("refused:") == 4, result.stdout
    assert spent.seconds < 20
