#!/usr/bin/env python3
"""Regenerate the tiny_lm evaluation data (eval_data/*.jsonl): two small multiple-choice tasks.

Sentences come from the same grammar as the training text (``make_data.py``),
drawn with another seed, and any sentence that occurs in ``data/train.txt``
is skipped, so the model is scored on text it has not seen. Each line is one
document: ``id``, ``context`` (the start of the sentence), ``choices`` (four
endings) and ``gold`` (the index of the real one).

- ``spelling.jsonl``: the last word, against three anagrams of it
  (``... walked to the mill.`` or ``mlil.``); a model that knows spelling
  wins; a unigram model cannot tell anagrams apart.
- ``word_order.jsonl``: the last three words, against three other orders of
  them; a model needs context across word boundaries.

Deterministic (fixed seed), standard library only:

    python3 examples/tiny_lm/make_eval_data.py            # rewrite eval_data/
    python3 examples/tiny_lm/make_eval_data.py --check    # exit 1 if eval_data/ differs
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from pathlib import Path

from make_data import sentence  # noqa: E402 (the script's directory is on sys.path)

SEED = 20240612
DOCS = 300  # per task
HERE = Path(__file__).resolve().parent


def _spelling(rng: random.Random, words: list[str]) -> tuple[str, list[str], str] | None:
    last = words[-1]
    if len(last) < 4 or len(set(last)) < 3:
        return None
    anagrams: set[str] = set()
    for _ in range(200):
        letters = list(last)
        rng.shuffle(letters)
        if "".join(letters) != last:
            anagrams.add("".join(letters))
        if len(anagrams) == 3:
            break
    if len(anagrams) < 3:
        return None
    return " ".join(words[:-1]), [last + "."] + [a + "." for a in sorted(anagrams)], last + "."


def _word_order(rng: random.Random, words: list[str]) -> tuple[str, list[str], str] | None:
    if len(words) < 5 or len(set(words[-3:])) < 3:
        return None
    tail = words[-3:]
    others = [list(p) for p in itertools.permutations(tail) if list(p) != tail]
    rng.shuffle(others)
    gold = " ".join(tail) + "."
    return " ".join(words[:-3]), [gold] + [" ".join(p) + "." for p in others[:3]], gold


def build(train_text: str) -> dict[str, str]:
    """The text of each JSONL file."""
    seen = {s for line in train_text.split("\n") for s in line.split(". ")}
    rng = random.Random(SEED)
    files = {}
    for name, make in (("spelling", _spelling), ("word_order", _word_order)):
        docs = []
        while len(docs) < DOCS:
            text = sentence(rng)
            if text.rstrip(".") in seen or text in seen:
                continue
            made = make(rng, text.rstrip(".").split(" "))
            if made is None:
                continue
            context, choices, gold = made
            rng.shuffle(choices)
            docs.append({"id": f"{name}-{len(docs):04d}", "context": context, "choices": choices,
                         "gold": choices.index(gold)})  # fmt: skip
        files[f"{name}.jsonl"] = "".join(json.dumps(d, sort_keys=True) + "\n" for d in docs)
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "eval_data")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args()
    files = build((HERE / "data" / "train.txt").read_text(encoding="utf-8"))
    if args.check:
        bad = [n for n, t in files.items() if not (args.out / n).is_file() or (args.out / n).read_text() != t]
        for n in bad:
            print(f"make_eval_data: {args.out / n} differs from the generator's output", file=sys.stderr)
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {args.out / name} ({len(text.encode())} bytes, {text.count(chr(10))} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
