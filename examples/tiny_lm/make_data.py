#!/usr/bin/env python3
"""Regenerate the tiny_lm corpus (data/train.txt, data/valid.txt).

The corpus is made up here from a small grammar of plain English sentences
about a village, its weather, its people and their work. It is original text,
free to use. Generation is deterministic (fixed seed), so running this again
gives byte-identical files; the shipped files are the output of this script.

    python3 examples/tiny_lm/make_data.py            # rewrite data/
    python3 examples/tiny_lm/make_data.py --check    # exit 1 if data/ differs
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

SEED = 20240611
TRAIN_LINES = 700
VALID_LINES = 120

PEOPLE = [
    "the miller",
    "the baker",
    "the old farmer",
    "the young shepherd",
    "the fisherman",
    "the teacher",
    "the smith",
    "the weaver",
    "the doctor",
    "the carpenter",
    "my grandmother",
    "her brother",
    "his sister",
    "the children",
    "the traveller",
    "the innkeeper",
    "the potter",
    "a stranger",
    "the gardener",
    "the priest",
]
PLACES = [
    "the mill",
    "the market",
    "the river",
    "the harbour",
    "the old bridge",
    "the forest",
    "the church",
    "the school",
    "the orchard",
    "the meadow",
    "the hill",
    "the village green",
    "the inn",
    "the forge",
    "the garden",
]
THINGS = [
    "bread",
    "apples",
    "fish",
    "wool",
    "a basket of eggs",
    "a letter",
    "firewood",
    "a lantern",
    "some cheese",
    "a sack of flour",
    "a new coat",
    "the keys",
    "a small boat",
    "a bundle of reeds",
    "a jar of honey",
    "warm soup",
]
ADJ = [
    "quiet",
    "cold",
    "bright",
    "grey",
    "windy",
    "gentle",
    "long",
    "dark",
    "warm",
    "busy",
    "still",
    "green",
    "early",
    "late",
    "pleasant",
    "heavy",
]
TIMES = [
    "in the morning",
    "at noon",
    "in the evening",
    "before dawn",
    "after supper",
    "on market day",
    "every sunday",
    "in the spring",
    "in the autumn",
    "during the winter",
    "at harvest time",
    "late at night",
]
WEATHER = [
    "the rain fell on the roofs",
    "the wind blew from the sea",
    "snow covered the fields",
    "the sun rose over the hills",
    "fog lay along the river",
    "the sky was clear and blue",
    "thunder rolled in the distance",
    "frost made the grass white",
]
VERBS_GO = ["walked to", "went down to", "hurried to", "came back from", "rode to", "waited at"]
VERBS_CARRY = ["carried", "sold", "bought", "found", "gave away", "brought home", "mended", "cooked"]
FEEL = [
    "was tired",
    "was happy",
    "was worried",
    "felt hungry",
    "sang softly",
    "laughed aloud",
    "said nothing",
]
SAY = ["said", "told us", "wrote", "whispered", "asked"]
QUOTES = [
    "the river is high this year",
    "we shall need more wood",
    "the bread is ready",
    "the road is long",
    "the sheep are in the meadow",
    "the boat leaks again",
    "it will rain before night",
    "the apples are sweet",
    "the school bell is late",
]


def cap(text: str) -> str:
    return text[0].upper() + text[1:]


def sentence(rng: random.Random) -> str:
    p, q = rng.choice(PEOPLE), rng.choice(PEOPLE)
    kind = rng.randrange(8)
    if kind == 0:
        return f"{cap(p)} {rng.choice(VERBS_GO)} {rng.choice(PLACES)} {rng.choice(TIMES)}."
    if kind == 1:
        return f"{cap(rng.choice(TIMES))}, {p} {rng.choice(VERBS_CARRY)} {rng.choice(THINGS)}."
    if kind == 2:
        return f"It was a {rng.choice(ADJ)} day, and {rng.choice(WEATHER)}."
    if kind == 3:
        return f"{cap(p)} {rng.choice(SAY)} that {rng.choice(QUOTES)}."
    if kind == 4:
        return f"When {rng.choice(WEATHER)}, {q} {rng.choice(FEEL)}."
    if kind == 5:
        return (
            f"{cap(p)} {rng.choice(VERBS_CARRY)} {rng.choice(THINGS)} "
            f"and {rng.choice(VERBS_GO)} {rng.choice(PLACES)}."
        )
    if kind == 6:
        return (
            f"The {rng.choice(ADJ)} road to {rng.choice(PLACES)} was {rng.choice(ADJ)} {rng.choice(TIMES)}."
        )
    return f"{cap(p)} {rng.choice(FEEL)}, because {q} {rng.choice(VERBS_CARRY)} {rng.choice(THINGS)}."


def lines(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        n = 1 if rng.random() < 0.6 else 2
        out.append(" ".join(sentence(rng) for _ in range(n)))
    return "\n".join(out) + "\n"


def build() -> dict[str, str]:
    rng = random.Random(SEED)
    return {"train.txt": lines(rng, TRAIN_LINES), "valid.txt": lines(rng, VALID_LINES)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args()
    files = build()
    if args.check:
        bad = [n for n, t in files.items() if not (args.out / n).is_file() or (args.out / n).read_text() != t]
        for n in bad:
            print(f"make_data: {args.out / n} differs from the generator's output", file=sys.stderr)
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {args.out / name} ({len(text.encode())} bytes, {text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
