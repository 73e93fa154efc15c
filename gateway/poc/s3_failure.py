"""Scenario 3, failure midway: a data access failure (a file changed under ``verify: digest``), an
environment failure (a module that does not exist) and a user code failure, each classified with its
evidence and not retried (the policy retries infrastructure failures only); the code failure fixed by a
rerun that succeeds and points at it; the failed attempts' cost."""

from __future__ import annotations

from typing import Any

from gateway.poc import cost
from gateway.poc.checks import Scenario
from gateway.poc.words import money, say
from gateway.poc.world import World

# (label, class, exit code of the failing step, failing step)
EXPECTED = {
    "data": ("data_access", 80, "inputs"),
    "environment": ("environment", 81, "environment"),
    "code": ("user_code", None, "user_command"),
}
# A failure midway: three epochs train, then the second step is given a bad argument (so the failed
# attempt ran for seconds and has a cost of its own, not the 0 of a job that fails in its first second).
TRAIN = "python3 examples/tiny_lm/train.py"
BAD_CODE = f"{TRAIN} --order 4 --epochs 3 && {TRAIN} --epochs three"
FIXED_CODE = "python3 examples/tiny_lm/train.py --epochs 1"


def _specs(world: World) -> dict[str, dict[str, Any]]:
    """The three failing runs, submitted together."""
    code = world.workdir / "code" / "examples" / "tiny_lm"
    path = world.copy_data("fragile", code / "data")
    world.register("fragile", path, description="gw poc: changed after registration")
    with (path / "train.txt").open("a") as handle:
        handle.write("a line added after the version was registered\n")
    train = "python3 examples/tiny_lm/train.py --epochs 1"
    return {
        "data": world.spec(
            "reads-changed-data",
            train + ' --data "$GW_DATASET_FRAGILE"',
            datasets=[{"ref": "fragile@latest", "verify": "digest"}],
        ),
        "environment": world.spec("missing-module", train, modules=["gw-poc-no-such-module/0.0"]),
        "code": world.spec("bad-argument", BAD_CODE),
    }


def _classified(sc: Scenario, label: str, run: dict[str, Any]) -> None:
    klass, code, step = EXPECTED[label]
    attempt = run["attempts"][-1]
    failure = attempt.get("failure") or {}
    evidence = failure.get("evidence") or {}
    sc.check(f"{label}: run fails", run["state"] == "failed", "state failed", run["state"])
    sc.check(f"{label}: classified", failure.get("class") == klass, f"class {klass}", failure.get("class"))
    sc.check(
        f"{label}: says what to do",
        bool(failure.get("summary")) and bool(failure.get("action")),
        "a summary and an action",
        f"{failure.get('summary')} To do: {failure.get('action')}",
    )
    failing = evidence.get("failing_step") or {}
    sc.check(
        f"{label}: evidence names the step",
        failing.get("step") == step,
        f"failing step {step}",
        f"failing step {failing.get('step')} ({failing.get('detail')})",
    )
    if code is not None:
        # the failure is classified at the refresh that sees the end; Slurm's exit code can come in a
        # later sacct read than that (seen under load: the evidence said 0, the attempt 80), so the
        # attempt's own record counts too, and the words show both
        recorded = attempt.get("exit_code")
        sc.check(
            f"{label}: evidence has the exit code",
            code in (evidence.get("exit_code"), recorded),
            f"exit code {code} (in the failure's evidence or the attempt's record)",
            f"exit code {evidence.get('exit_code')} in the failure's evidence, "
            f"{recorded} in the attempt's record",
        )
    retry = failure.get("retry") or {}
    sc.check(
        f"{label}: not retried, per policy",
        retry.get("retry") is False and run["attempt_count"] == 1,
        "retry false with one attempt",
        f"retry {say(retry.get('retry'))} ({retry.get('why')}); {run['attempt_count']} attempt(s)",
    )
    sc.showed(
        f"{label} failure ({run['id']})",
        f"class {failure.get('class')}: {failure.get('summary')} Failing step {failing.get('step')} "
        f"({failing.get('detail')}), exit code {evidence.get('exit_code')}. "
        f"What to do: {failure.get('action')} Retry: {retry.get('why')}.",
    )


def run(world: World, sc: Scenario) -> None:
    """The three failures, the fixed rerun and the cost of what failed."""
    runs = {label: world.submit(spec) for label, spec in _specs(world).items()}
    sc.made("run", *(r["id"] for r in runs.values()))
    sc.did(
        "Submitted three runs that fail: one reads a dataset changed after its version was registered "
        f"({runs['data']['id']}), one loads a module that does not exist ({runs['environment']['id']}), one "
        f"trains and then passes a bad argument ({runs['code']['id']})."
    )
    ended = {label: world.wait_run(r["id"], step=f"{label}: the run ends") for label, r in runs.items()}
    for label, done in ended.items():
        # classified by the refresher right after the end; give it a few polls
        def failed(i: str = done["id"]) -> dict[str, Any] | None:
            return r if (r := world.run(i))["attempts"][-1].get("failure") else None

        def failure(i: str = done["id"]) -> str:
            return say(world.run(i)["attempts"][-1].get("failure"))

        done = world.wait_until(failed, f"{label}: failure recorded", "the attempt's failure", failure)

        # and Slurm's exit code in the attempt's record (sacct's, which may come a refresh later)
        def exited(i: str = done["id"]) -> dict[str, Any] | None:
            return r if (r := world.run(i))["attempts"][-1].get("exit_code") is not None else None

        done = world.wait_until(
            exited, f"{label}: exit code recorded", "the attempt's exit code", lambda: "no exit code yet"
        )
        _classified(sc, label, done)
    logs = world.client.logs(runs["code"]["id"], stream="stderr")
    sc.check(
        "code: the log tail kept",
        "three" in logs.get("text", ""),
        "the argparse error in stderr",
        logs.get("text", "")[-300:],
    )

    sc.showed("the code failure's log tail (stderr)", logs.get("text", "")[-300:])
    fixed = world.client.rerun(runs["code"]["id"], {"set": [f"command={FIXED_CODE}"]})
    sc.made("run", fixed["id"])
    sc.did(
        f"Reran the code failure with the argument fixed ({fixed['id']}, a rerun of {runs['code']['id']})."
    )
    world.shared.update(failed=runs["code"]["id"], fixed=fixed["id"])
    done = world.wait_run(fixed["id"], step="fix: the rerun ends")
    sc.check("fix: the rerun succeeds", done["state"] == "succeeded", "state succeeded", done["state"])
    sc.check(
        "fix: points at the failed run",
        done.get("parent_run_id") == runs["code"]["id"],
        f"parent_run_id {runs['code']['id']}",
        done.get("parent_run_id"),
    )
    sc.check(
        "fix: the diff is on record",
        any(d.get("path") == "command" for d in done.get("derived_diff") or []),
        "a derived_diff that changes command",
        "; ".join(
            f"{d.get('path')}: {d.get('before')!s} -> {d.get('after')!s}"
            for d in done.get("derived_diff") or []
        )
        or "no diff",
    )
    parent = world.run(runs["code"]["id"])
    sc.check(
        "fix: the failed run lists it",
        fixed["id"] in parent.get("children", []),
        f"{fixed['id']} among the failed run's children",
        parent.get("children"),
    )
    for label, r in runs.items():
        answer = cost.run_cost(world, sc, r["id"], f"cost of the failed {label} run", failed=True)
        if label == "code" and answer is not None:
            sc.check(
                "code: the failure midway cost money",
                (answer.get("failed_total") or 0) > 0,
                "failed_total more than 0 (the attempt trained before it failed)",
                f"failed_total {money(answer.get('failed_total'), answer.get('currency'))}",
                fatal=False,
                kind="cost",
            )
