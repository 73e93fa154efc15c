#!/usr/bin/env python3
"""The tiny_lm example's own evaluation, written in the native results format. Standard library only.

For each multiple-choice document (``context``, ``choices``, ``gold``) it
renders the prompt from the template (``{{ field }}`` is replaced by the
document's field; nothing else of Jinja is supported), scores every choice
as lm-eval would (log-likelihood of ``" " + choice`` after the prompt) and
writes per sample:

- ``acc``: 1 when the gold choice has the highest log-likelihood, else 0
  (ties go to the first choice, as lm-eval's argmax does);
- ``gold_logprob``: the gold choice's log-likelihood per character (nats,
  higher is better): a continuous score for the paired bootstrap.

Hashes are lm-eval's (document, prompt, target), so a reader can check that
two results scored the same documents with the same prompts::

    python3 eval/jobs/tiny_lm_native.py --model out/model.json \
        --task tiny_lm_spelling=examples/tiny_lm/eval_data/spelling.jsonl \
        --prompt-template eval/prompts/tiny_lm_cloze.txt --out native.jsonl

Exit status: 0 done, 2 bad arguments or input, 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from native_format import NativeWriter, doc_hash, sha256_text  # noqa: E402
from tiny_lm_scorer import CheckpointError, TinyLM  # noqa: E402

VERSION = "1"
FIELD = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
MAX_DOCS = 1_000_000


class UsageError(Exception):
    """Bad arguments or input: exit status 2."""


def render(template: str, doc: dict) -> str:
    """The template with each ``{{ field }}`` replaced by the document's value."""

    def field(match: re.Match) -> str:
        if match[1] not in doc:
            raise UsageError(f"the prompt template names {match[1]!r}, which the documents lack")
        return str(doc[match[1]])

    return FIELD.sub(field, template)


def read_docs(path: Path) -> list[dict]:
    docs = []
    try:
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                doc = json.loads(line)
                ok = (
                    isinstance(doc, dict)
                    and isinstance(doc.get("choices"), list)
                    and len(doc["choices"]) >= 2
                )
                if (
                    not ok
                    or not isinstance(doc.get("gold"), int)
                    or not 0 <= doc["gold"] < len(doc["choices"])
                ):
                    raise UsageError(
                        f"{path} line {number}: a document needs choices (2 or more) and a gold index"
                    )
                docs.append(doc)
                if len(docs) > MAX_DOCS:
                    raise UsageError(f"{path}: more than {MAX_DOCS} documents")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read documents from {path}: {exc}") from None
    return docs


def score(model: TinyLM, prompt: str, doc: dict) -> dict[str, float]:
    lls = [model.logprob(prompt, " " + str(choice))[0] for choice in doc["choices"]]
    best = max(range(len(lls)), key=lls.__getitem__)
    gold = doc["gold"]
    return {"acc": int(best == gold), "gold_logprob": lls[gold] / (len(str(doc["choices"][gold])) + 1)}


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{what} {item!r}: give NAME=VALUE")
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    tasks = _pairs(args.task, "--task")
    versions = _pairs(args.version, "--version")
    try:
        model = TinyLM.load(args.model)
        template = Path(args.prompt_template).read_text(encoding="utf-8")
    except (OSError, CheckpointError, UnicodeDecodeError) as exc:
        raise UsageError(str(exc)) from None
    docs = {name: read_docs(Path(path)) for name, path in tasks.items()}
    header = {
        name: {
            "version": versions.get(name, VERSION),
            "n_original": len(items),
            "n_shot": 0,
            "higher_is_better": {"acc": True, "gold_logprob": True},
        }
        for name, items in docs.items()
    }
    with NativeWriter(args.out, harness="tiny_lm_native", harness_version=VERSION, tasks=header) as out:
        for name, items in docs.items():
            for index, doc in enumerate(items):
                prompt = render(template, doc)
                out.write(
                    name,
                    index,
                    score(model, prompt, doc),
                    doc_hash=doc_hash(doc),
                    prompt_hash=sha256_text(prompt),
                    target_hash=sha256_text(str(doc["gold"])),
                )
    count = sum(map(len, docs.values()))
    print(f"tiny_lm_native: scored {count} documents of {len(docs)} task(s) -> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Score a tiny_lm checkpoint on multiple-choice JSONL tasks.")
    ap.add_argument("--model", required=True, help="the checkpoint (model.json)")
    ap.add_argument("--task", action="append", required=True, help="NAME=FILE.jsonl (repeat for more tasks)")
    ap.add_argument(
        "--version", action="append", default=[], help=f"NAME=VERSION of a task (default {VERSION})"
    )
    ap.add_argument("--prompt-template", required=True, help="the prompt template file ({{ field }} only)")
    ap.add_argument("--out", required=True, help="the native results file to write")
    try:
        return run(ap.parse_args(argv))
    except UsageError as exc:
        print(f"tiny_lm_native: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
