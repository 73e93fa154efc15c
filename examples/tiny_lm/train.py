#!/usr/bin/env python3
"""tiny_lm: a character-level language model trained by SGD, pure standard library.

The model is a log-linear (softmax) n-gram model: to predict the next
character it sums one weight vector per active context feature (a bias, the
last character, the last two characters, ... up to ``order - 1``) and takes a
softmax over the character vocabulary. It is trained by plain SGD on the
cross-entropy of every character of data/train.txt and scored on
data/valid.txt after each epoch (loss in nats per character, perplexity,
next-character accuracy).

Params, lowest to highest priority: built-in defaults, the JSON object in the
file named by $GW_PARAMS_FILE (or, failing that, the $GW_PARAMS string) that
the gateway writes for each run or sweep task, then command-line flags.

Outputs (in --out, default $GW_RUN_DIR/outputs, or
$GW_RUN_DIR/outputs/task-<SLURM_ARRAY_TASK_ID> in a sweep, else ./outputs):
  model.json     the checkpoint; byte-identical for the same data, params and seed
  metrics.jsonl  one JSON object per epoch
  metrics.json   summary: final metrics, params, data digest, checkpoint sha256

Exit status: 0 done, 2 bad data directory or bad params, 1 anything else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path

# The model lives next to this script (the script's directory is on sys.path when it runs).
from model import BOS, build_model, encode, evaluate, sample, split_lines, train_epoch  # noqa: E402

DATA_FILES = ("train.txt", "valid.txt")
CHECKPOINT_FORMAT = "tiny_lm/1"

DEFAULTS: dict[str, object] = {
    "lr": 0.3,  # SGD step size at epoch 1
    "lr_decay": 0.6,  # the step size is multiplied by this after every epoch
    "epochs": 5,
    "seed": 1,  # shuffles the training lines each epoch
    "order": 4,  # n-gram order: predict from the previous order-1 characters
    "l2": 0.0,  # weight decay on the rows an update touches
}


class UsageError(Exception):
    """Bad input from the user (data dir, params): exit status 2."""


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- params


def _coerce(key: str, value: object, source: str) -> object:
    def bad(why: str) -> UsageError:
        return UsageError(f"param {key!r} from {source} is {value!r}: {why}")

    if isinstance(value, bool):
        raise bad("expected a number, not true/false")
    if key in ("epochs", "seed", "order"):
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise bad("expected an integer") from None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise bad("expected an integer")
        if key == "epochs" and not 1 <= value <= 1000:
            raise bad("expected 1 to 1000")
        if key == "order" and not 1 <= value <= 6:
            raise bad("expected 1 to 6")
        return value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise bad("expected a number") from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise bad("expected a finite number")
    value = float(value)
    if key == "lr" and not value > 0:
        raise bad("expected > 0")
    if key == "lr_decay" and not 0 < value <= 1:
        raise bad("expected 0 < lr_decay <= 1")
    if key == "l2" and not value >= 0:
        raise bad("expected >= 0")
    return value


def gateway_params() -> tuple[dict[str, object], str | None]:
    """The param set the gateway gave this run (or this sweep task), and where from."""
    path = os.environ.get("GW_PARAMS_FILE")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read GW_PARAMS_FILE {path}: {exc.strerror or exc}") from None
        source = f"GW_PARAMS_FILE {path}"
    elif os.environ.get("GW_PARAMS"):
        text, source = os.environ["GW_PARAMS"], "GW_PARAMS"
    else:
        return {}, None
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError(f"{source} holds a JSON {type(params).__name__}, not an object")
    return params, source


def resolve_params(args: argparse.Namespace) -> tuple[dict[str, object], dict[str, str]]:
    params = dict(DEFAULTS)
    origin = {key: "default" for key in params}
    given, source = gateway_params()
    for key, value in given.items():
        if key not in DEFAULTS:
            print(f"tiny_lm: warning: ignoring unknown param {key!r} from {source}", file=sys.stderr)
            continue
        params[key] = _coerce(key, value, source or "")
        origin[key] = "gateway"
    for key in DEFAULTS:
        value = getattr(args, key)
        if value is not None:
            params[key] = _coerce(key, value, f"--{key.replace('_', '-')}")
            origin[key] = "cli"
    return params, origin


# ---------------------------------------------------------------- data


def load_data(data_dir: Path) -> tuple[dict[str, str], str, dict[str, str]]:
    """The text of each data file, the data digest and each file's sha256."""
    if not data_dir.is_dir():
        raise UsageError(
            f"data directory {data_dir} does not exist (give --data DIR holding {' and '.join(DATA_FILES)})"
        )
    texts, shas = {}, {}
    for name in DATA_FILES:
        path = data_dir / name
        if not path.is_file():
            raise UsageError(
                f"data file {path} is missing (the data directory needs {' and '.join(DATA_FILES)})"
            )
        raw = path.read_bytes()
        try:
            texts[name] = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"data file {path} is not UTF-8 text: {exc}") from None
        if not texts[name].strip():
            raise UsageError(f"data file {path} is empty")
        shas[name] = hashlib.sha256(raw).hexdigest()
    # The digest is the sha256 of `sha256sum train.txt valid.txt` run in the data dir.
    manifest = "".join(f"{shas[name]}  {name}\n" for name in DATA_FILES)
    return texts, hashlib.sha256(manifest.encode()).hexdigest(), shas


def default_out() -> Path:
    run_dir = os.environ.get("GW_RUN_DIR")
    if not run_dir:
        return Path("outputs")
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    # The tasks of a sweep share one run dir: each writes its own subdirectory.
    return Path(run_dir) / "outputs" / (f"task-{task}" if task else "")


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def checkpoint_bytes(
    params: dict, data_digest: str, vocab: list[str], features: dict[str, int], weights: list[list[float]]
) -> bytes:
    """The model as JSON: same data, params and seed give the same bytes."""
    names = sorted(features, key=features.__getitem__)
    model = {
        "format": CHECKPOINT_FORMAT,
        "params": params,
        "data_digest": data_digest,
        "vocab": vocab,
        "bos": BOS,
        # weights[context] = one weight per vocab entry; "" is the bias.
        "weights": {name: [round(w, 6) for w in weights[features[name]]] for name in names},
    }
    return (json.dumps(model, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n").encode()


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(
        description="Train a tiny character-level language model (pure Python, CPU, seconds).",
        epilog="Params come from defaults, then $GW_PARAMS_FILE (or $GW_PARAMS), then these flags.",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=here / "data",
        help="directory with train.txt and valid.txt (default: %(default)s)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: $GW_RUN_DIR/outputs, else ./outputs)",
    )
    ap.add_argument("--lr", type=float, default=None, help=f"SGD step size (default {DEFAULTS['lr']})")
    ap.add_argument(
        "--lr-decay",
        dest="lr_decay",
        type=float,
        default=None,
        help=f"step size factor per epoch (default {DEFAULTS['lr_decay']})",
    )
    ap.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=f"passes over the training data (default {DEFAULTS['epochs']})",
    )
    ap.add_argument("--seed", type=int, default=None, help=f"random seed (default {DEFAULTS['seed']})")
    ap.add_argument(
        "--order", type=int, default=None, help=f"n-gram order, 1 to 6 (default {DEFAULTS['order']})"
    )
    ap.add_argument("--l2", type=float, default=None, help=f"weight decay (default {DEFAULTS['l2']})")
    return ap.parse_args(argv)


def fit(
    weights: list[list[float]],
    train: list,
    valid: list,
    params: dict,
    metrics_path: Path,
    vocab_size: int,
) -> dict | None:
    """Train ``weights`` in place for ``params["epochs"]`` epochs, one line of ``metrics_path`` each.

    Returns the last epoch's metrics ({} for no epoch); None when the loss diverged (said on stderr).
    """
    rng = random.Random(params["seed"])
    uniform = math.log(vocab_size)
    log(f"tiny_lm: epoch 0: val_loss {uniform:.4f} (uniform guess), val_perplexity {vocab_size:.2f}")
    metrics_path.write_text("")
    start = time.perf_counter()
    step, record = 0, {}
    for epoch in range(1, params["epochs"] + 1):
        lr = params["lr"] * params["lr_decay"] ** (epoch - 1)
        line_order = list(range(len(train)))
        rng.shuffle(line_order)
        train_loss, steps = train_epoch(weights, train, line_order, lr, params["l2"])
        step += steps
        val_loss, val_acc = evaluate(weights, valid)
        if not math.isfinite(train_loss) or not math.isfinite(val_loss):
            print(
                f"tiny_lm: error: the loss diverged at epoch {epoch} (lr {lr:g} is too high)", file=sys.stderr
            )
            return None
        record = {
            "step": step,
            "epoch": epoch,
            "lr": round(lr, 10),
            "train_loss": round(train_loss, 6),
            "val_loss": round(val_loss, 6),
            "val_perplexity": round(math.exp(val_loss), 6),
            "val_bits_per_char": round(val_loss / math.log(2), 6),
            "val_accuracy": round(val_acc, 6),
            "time_s": round(time.perf_counter() - start, 3),
        }
        with metrics_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        log(
            f"tiny_lm: epoch {epoch}/{params['epochs']} step {step}: lr {lr:.4g} train_loss {train_loss:.4f} "
            f"val_loss {val_loss:.4f} val_perplexity {math.exp(val_loss):.3f} "
            f"val_accuracy {val_acc:.4f} ({record['time_s']:.2f}s)"
        )
    return record


def run(args: argparse.Namespace) -> int:
    params, origin = resolve_params(args)
    texts, data_digest, shas = load_data(args.data)
    out = args.out if args.out is not None else default_out()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output directory {out}: {exc.strerror or exc}") from None

    order, seed = params["order"], params["seed"]
    train_lines, valid_lines = split_lines(texts["train.txt"]), split_lines(texts["valid.txt"])
    vocab, features = build_model(train_lines, order)
    train = encode(train_lines, vocab, features, order)
    valid = encode(valid_lines, vocab, features, order)
    weights = [[0.0] * len(vocab) for _ in features]
    n_train = sum(map(len, train))
    n_valid = sum(map(len, valid))
    log(f"tiny_lm: data {args.data} (digest {data_digest[:12]})")
    log(f"tiny_lm: train {len(train)} lines / {n_train} chars, valid {len(valid)} lines / {n_valid} chars")
    given = ", ".join(f"{k}={v}" for k, v in sorted(origin.items()) if v != "default") or "all defaults"
    log(f"tiny_lm: params {json.dumps(params, sort_keys=True)} ({given})")
    n_weights = len(vocab) * len(features)
    log(f"tiny_lm: model order {order}: {len(vocab)} chars x {len(features)} contexts = {n_weights} weights")
    log(f"tiny_lm: writing to {out}")

    record = fit(weights, train, valid, params, out / "metrics.jsonl", len(vocab))
    if record is None:
        return 1

    ckpt = checkpoint_bytes(params, data_digest, vocab, features, weights)
    write_atomic(out / "model.json", ckpt)
    ckpt_sha = hashlib.sha256(ckpt).hexdigest()
    summary = {
        "final": record,
        "params": params,
        "params_origin": origin,
        "data_digest": data_digest,
        "data_files": shas,
        "checkpoint": {"path": "model.json", "sha256": ckpt_sha, "bytes": len(ckpt)},
        "model": {"order": order, "vocab_size": len(vocab), "features": len(features)},
        "sample": sample(weights, vocab, features, order, random.Random(seed)),
    }
    write_atomic(out / "metrics.json", (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode())
    log(f"tiny_lm: sample: {summary['sample']}")
    log(f"tiny_lm: wrote {out / 'model.json'} ({len(ckpt)} bytes, sha256 {ckpt_sha[:12]})")
    log(f"tiny_lm: wrote {out / 'metrics.jsonl'} and {out / 'metrics.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except UsageError as exc:
        print(f"tiny_lm: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
