"""Why a pending Slurm job waits, in people's words, with the numbers behind it.

``explain_wait(ctx)`` turns Slurm's pending reason (``QOSGrpGRES``, ``Resources``,
``ReqNodeNotAvail, UnavailableNodes:g[1-2]`` ...) and the facts the caller
gathered (quota use, node states, jobs ahead, Slurm's start estimate) into an
``Explanation``: a category, a one-line summary, detail lines and actions.
No I/O: every fact comes in through ``WaitContext``. Any QOS/association limit
code not named here is explained from its parts (``explain_text.parse_limit_code``);
any other unknown code gets category "unknown", never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from gateway.core.explain.model import Explanation, NodeState, QuotaUse, WaitContext
from gateway.core.explain.text import (
    FIXED,
    JOB,
    RESOURCE_NOUNS,
    FixedText,
    LimitCode,
    dependency_words,
    expand_hostlist,
    fmt_minutes,
    fmt_number,
    fmt_start,
    jobs_phrase,
    limit_label,
    limit_meaning,
    node_trouble,
    parse_limit_code,
    plural,
    quota_numbers,
)

__all__ = ["Explanation", "NodeState", "QuotaUse", "WaitContext", "explain_wait"]


def explain_wait(ctx: WaitContext) -> Explanation:
    """Explain why the job described by ``ctx`` waits. Never raises on an odd or unknown reason."""
    raw = " ".join((ctx.reason or "").split()).strip("()").strip()  # squeue %R wraps it: "(Resources)"
    head, _, tail = (part.strip() for part in raw.partition(","))
    if head in ("", "None"):
        raw, found = "none", _fixed(ctx, FIXED["none"])
    elif explainer := _EXPLAINERS.get(head.lower()):
        found = explainer(ctx, head, tail)
    elif head.lower() in FIXED:
        found = _fixed(ctx, FIXED[head.lower()])
    elif limit := parse_limit_code(head):
        found = _per_job(ctx, head, limit) if limit.per == "job" else _quota(ctx, head, limit)
    else:
        found = _fixed(ctx, FIXED["(unknown)"], head if len(head) <= 80 else head[:77] + "...")
    start = (fmt_start(ctx.start_estimate, ctx.now),) if ctx.start_estimate is not None else ()
    # One line whatever the caller passed in (a partition or dependency text with a newline).
    return replace(found, code=raw, summary=" ".join(found.summary.split()), details=found.details + start)


def _result(
    category: str,
    summary: str,
    details: Iterable[str] = (),
    actions: Iterable[str] = (),
    blocking: QuotaUse | None = None,
) -> Explanation:
    return Explanation("", category, summary, tuple(details), tuple(actions), blocking)


def _fixed(ctx: WaitContext, text: FixedText, code: str = "") -> Explanation:
    def fill(line: str) -> str:
        return line.replace("{p}", ctx.partition).replace("{code}", code)

    details = [fill(d) for d in text.details]
    if text.code == "PartitionNodeLimit":
        details += _out_of_service(ctx.nodes)
    return _result(text.category, fill(text.summary), details, [fill(a) for a in text.actions])


# ---- quotas -------------------------------------------------------------------------------------

_OWNERS = {
    "QOS": ("the QOS", "sacctmgr show qos"),
    "Assoc": ("the account", "sacctmgr show assoc where user=$USER"),
}


def _matches(limit: LimitCode, quota: QuotaUse) -> bool:
    words = quota.resource.lower()
    queue = "queue" in words or "submit" in words
    if ("per job" in words) != (limit.per == "job"):
        return False
    if limit.resource in ("submit", "jobs"):
        return queue if limit.resource == "submit" else "job" in words and not queue
    if limit.resource == "wall":
        return "wall" in words or "time" in words
    over_time = any(w in words for w in ("hour", "minute", "month"))
    key = {"gpu": "gpu", "cpu": "cpu", "mem": "mem", "node": "node", "billing": "billing"}.get(limit.resource)
    return key is not None and key in words and over_time == (limit.budget is not None)


def _requested(ctx: WaitContext, limit: LimitCode, quota: QuotaUse | None) -> float | None:
    """What this job adds to the limit, in the quota's unit (hours unless it says minutes), or None."""
    if limit.resource in ("jobs", "submit"):
        return 1
    if limit.resource == "wall":
        return ctx.requested_walltime_min
    amount = {"gpu": ctx.requested_gpus, "cpu": ctx.requested_cpus}.get(limit.resource) or None
    if amount is None or limit.budget is None:
        return amount
    if ctx.requested_walltime_min is None:
        return None
    per_minute = quota is not None and "minute" in quota.resource.lower()
    return amount * ctx.requested_walltime_min / (1 if per_minute else 60)


def _pick_quota(ctx: WaitContext, limit: LimitCode) -> QuotaUse | None:
    """The matching cap, preferring one that blocks, then one of the limit's scope (user or project).

    A per-user limit only takes a cap whose scope names a user, a per-account one only one that does not;
    a cap with a NaN or infinite number is skipped.
    """

    def rank(quota: QuotaUse) -> tuple[bool, bool]:
        blocks = quota.used >= quota.cap or quota.used + (_requested(ctx, limit, quota) or 0) > quota.cap
        return (not blocks, quota.scope.lower().startswith("user") != (limit.per == "user"))

    def in_scope(quota: QuotaUse) -> bool:
        user = "user" in quota.scope.lower()
        finite = math.isfinite(quota.used) and math.isfinite(quota.cap)
        return finite and {"user": user, "account": not user}.get(limit.per or "", True)

    found = [q for q in ctx.quotas if _matches(limit, q) and in_scope(q)]
    return min(found, key=rank, default=None)


def _quota(ctx: WaitContext, head: str, limit: LimitCode) -> Explanation:
    """A total (Grp) or per-user/account (Max) limit that frees up as jobs end or budgets reset."""
    quota = _pick_quota(ctx, limit)
    owner, show = _OWNERS[limit.owner]
    many, label = RESOURCE_NOUNS[limit.resource][1], limit_label(limit)
    details, actions = [limit_meaning(limit, head)], []
    if quota is None:
        summary = f"waiting for a {label} set in Slurm on {owner}; the gateway has no numbers for it"
        actions.append(f"See the limit and its use in Slurm: {show}.")
    else:
        scope = quota.scope.lower()
        whose = (
            "the project's" if scope.startswith("project") else "the per-user" if "user" in scope else "the"
        )
        summary = f"waiting for {whose} {label}: {quota_numbers(quota.used, quota.cap, quota.resource)}"
        summary += f" ({quota.scope})"
        if limit.budget is None and ctx.running_in_scope:
            summary += f" by {jobs_phrase(ctx.running_in_scope)}"
        details += _room(ctx, limit, quota, actions)
    if limit.budget is not None and ctx.running_in_scope:
        details.append(f"Running now in this scope: {jobs_phrase(ctx.running_in_scope)}.")
    if limit.budget == "minutes":
        actions.append(f"Wait for the budget to reset, or ask the admins to raise the {label}.")
    elif limit.budget == "run_minutes":
        actions.insert(0, "Wait: room comes back as the running jobs use up their time.")
    elif limit.resource == "submit":
        actions.append("Cancel queued jobs you no longer need, or wait for some to finish.")
    elif limit.resource == "jobs":
        actions.insert(0, "Wait: it starts by itself when a running job in this scope ends.")
    else:
        actions.insert(0, f"Wait: it starts by itself when enough {many} free up in this scope.")
    if limit.budget is not None and ctx.requested_walltime_min:
        actions.append("A shorter time limit (--time) lowers what Slurm sets aside from the budget.")
    if limit.kind == "Grp" and limit.budget is None:
        actions.append("If the cap is too small for the project's work, ask the admins to raise it.")
    return _result("quota", summary, details, actions, quota)


def _room(ctx: WaitContext, limit: LimitCode, quota: QuotaUse, actions: list[str]) -> list[str]:
    """Detail lines on how far this job is from fitting under ``quota``; adds the actions that follow."""
    requested = _requested(ctx, limit, quota)
    one = RESOURCE_NOUNS[limit.resource][0]
    left = max(quota.cap - quota.used, 0)
    if not requested:
        return []
    if quota.used + requested <= quota.cap:
        return [
            f"By the gateway's numbers there is room; Slurm keeps its own count ({_OWNERS[limit.owner][1]})."
        ]
    if limit.budget is not None:
        unit = quota.resource.partition(" this ")[0]
        amount = plural(ctx.requested_gpus or ctx.requested_cpus, one)
        size = f"{amount} for {fmt_minutes(ctx.requested_walltime_min or 0)}"
        return [f"This job may use up to {fmt_number(requested)} {unit} ({size}); {fmt_number(left)} left."]
    if requested > quota.cap:
        actions.append(
            f"Ask for at most {plural(quota.cap, one)}: as it is, the job can never fit under the cap."
        )
        return [
            f"This job asks for {plural(requested, one)}, more than the whole cap of {fmt_number(quota.cap)}."
        ]
    if left > 0 and limit.resource in ("gpu", "cpu"):
        actions.append(f"Ask for at most {plural(left, one)} to fit in what is free now.")
    verb = "must end first" if limit.resource == "jobs" else "must free up before it fits"
    short = quota.used + requested - quota.cap
    return [f"This job needs {plural(requested, one)}; {plural(short, one)} {verb}."]


def _per_job(ctx: WaitContext, head: str, limit: LimitCode) -> Explanation:
    """A per-job Max or Min limit: the job's own size breaks it, so it will not start as it is."""
    quota = _pick_quota(ctx, limit)
    owner, show = _OWNERS[limit.owner]
    one, many = RESOURCE_NOUNS[limit.resource]
    wall, least = limit.resource == "wall", limit.kind == "Min"
    bound = "at least" if least else "at most"
    what = (
        "its time limit is longer than" if wall else f"it asks for {'fewer' if least else 'more'} {many} than"
    )
    summary = f"will not start as it is: {what} {owner} {'requires' if least else 'allows'} per job"

    def size(amount: float) -> str:
        return fmt_minutes(int(amount)) if wall else plural(amount, one)

    asked = _requested(ctx, limit, quota)
    asks = [f"{size(asked)} asked"] if asked else []
    if quota is None:
        summary += "".join(f" ({a})" for a in asks) + "; the limit is set in Slurm, its value unknown here"
        resubmit = f"Cancel it and resubmit asking for {'more' if least else 'fewer'} {many}."
        lower = f"Lower its time limit: scontrol update JobId={JOB} TimeLimit=<minutes>."
        actions = [lower if wall else resubmit, f"See the limit in Slurm: {show}."]
    else:
        cap = int(quota.cap) if wall else quota.cap
        summary += f" ({', '.join([*asks, f'{bound} {size(cap)}'])})"
        change = f"scontrol update JobId={JOB} TimeLimit={cap}, or resubmit with --time={cap}"
        actions = [
            f"Ask for at most {cap} min: {change}." if wall else f"Resubmit asking for {bound} {size(cap)}."
        ]
    category = "time_limit" if wall else "quota"
    return _result(category, summary, [limit_meaning(limit, head)], actions, quota)


# ---- resources, priority, nodes -----------------------------------------------------------------


def _out_of_service(nodes: Iterable[NodeState]) -> list[str]:
    out = [(n, node_trouble(n.state)) for n in nodes]
    words = [f"{n.name} {why}" + (f" ({n.reason})" if n.reason else "") for n, why in out if why]
    return ["Out of service: " + ", ".join(words) + "."] if words else []


def _resources(ctx: WaitContext, head: str, tail: str) -> Explanation:
    gpu = bool(ctx.requested_gpus)
    unit, need = ("GPU", ctx.requested_gpus) if gpu else ("CPU", ctx.requested_cpus)
    free = [
        (
            n.name,
            max(n.gpus - n.gpus_alloc, 0) if gpu else max(n.cpus - n.alloc_cpus, 0),
            n.gpus if gpu else n.cpus,
        )
        for n in ctx.nodes
        if node_trouble(n.state) is None
    ]
    summary, details = f"waiting for free resources in partition {ctx.partition}", []
    if need:
        summary += f": needs {plural(need, unit)}"
        per_node = [f"{name} {f} of {total}" for name, f, total in free]
        if ctx.nodes and not free:
            summary += "; no node in the partition is in service"
        elif 0 < len(free) <= 4:
            summary += "; free now: " + ", ".join(per_node)
        elif free:
            total_free, best = sum(f for _, f, _ in free), max(f for _, f, _ in free)
            summary += f"; free now: {plural(total_free, unit)} on {len(free)} nodes, at most {best} on one"
            more = f" and {len(per_node) - 12} more" if len(per_node) > 12 else ""
            details.append(f"Free {unit}s per node: " + ", ".join(per_node[:12]) + more + ".")
        if ctx.nodes and need > (capacity := sum(total for _, _, total in free)):
            details.append(
                f"Only {plural(capacity, unit)} in service in the partition: it waits until more return."
            )
    details += _out_of_service(ctx.nodes)
    if ctx.jobs_ahead:
        ahead = f"{plural(len(ctx.jobs_ahead), 'job')} ahead in partition {ctx.partition}"
        details.append(f"{ahead}; first: {jobs_phrase(ctx.jobs_ahead)}.")
    actions = ["Wait: it starts when enough resources free up."]
    if need:
        actions.append(f"Asking for fewer {unit}s may start it sooner.")
    actions.append(_BACKFILL)
    return _result("resources", summary, details, actions)


_BACKFILL = "A shorter time limit (--time) lets the backfill scheduler fit it into gaps sooner."


def _priority(ctx: WaitContext, head: str, tail: str) -> Explanation:
    ahead = plural(len(ctx.jobs_ahead), "higher-priority job") if ctx.jobs_ahead else "higher-priority jobs"
    details = [f"First in line: {jobs_phrase(ctx.jobs_ahead)}."] if ctx.jobs_ahead else []
    actions = ["Nothing is wrong: it starts when the jobs ahead of it have started.", _BACKFILL]
    if ctx.requested_gpus or ctx.requested_cpus:
        actions.append("A smaller request (fewer GPUs or CPUs) can also start sooner.")
    return _result("priority", f"waiting behind {ahead} in partition {ctx.partition}", details, actions)


def _nodes_unavailable(ctx: WaitContext, head: str, tail: str) -> Explanation:
    """ReqNodeNotAvail (Slurm names down, drained and unresponsive nodes as UnavailableNodes), NodeDown."""
    listed = re.search(r"UnavailableNodes:(\S*)", tail)
    names = expand_hostlist(listed.group(1)) if listed else ()
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    nodes = [n for n in ctx.nodes if n.name in names] if names else ctx.nodes
    if head.lower() == "nodedown":
        summary = "waiting for a node it needs that is down" + (f": {shown}" if names else "")
    elif names:
        summary = f"waiting for nodes that are not available: {shown}"
    elif "maint" in tail.lower():
        summary = "waiting for nodes reserved for maintenance"
    else:
        summary = f"waiting for nodes in partition {ctx.partition} that are down, drained or reserved"
    details = _out_of_service(nodes)
    details.append(
        "Often a maintenance reservation: a job whose time limit reaches into it waits until it ends."
    )
    actions = ["Wait: it starts when the nodes return or the reservation ends."]
    if ctx.requested_walltime_min:
        actions.append(
            "A shorter time limit (--time) may let it end before a maintenance window and start now."
        )
    actions.append("If you named nodes (--nodelist), resubmit without them.")
    actions.append("See reservations and node states: scontrol show reservation; sinfo -R.")
    return _result("nodes_unavailable", summary, details, actions)


# ---- time limit, dependency ---------------------------------------------------------------------


def _partition_time(ctx: WaitContext, head: str, tail: str) -> Explanation:
    asked, cap, part = ctx.requested_walltime_min, ctx.partition_max_walltime_min, ctx.partition
    if asked and cap:
        summary = f"asks for {fmt_minutes(asked)}; partition {part} allows at most {fmt_minutes(cap)} per job"
    else:
        summary = f"asks for more run time than partition {part} allows per job"
    details = ["It will not start until its time limit fits: Slurm keeps it waiting instead of refusing it."]
    if cap:
        change = f"scontrol update JobId={JOB} TimeLimit={cap}, or resubmit with --time={cap}"
        actions = [f"Ask for at most {cap} min: {change}."]
    else:
        actions = [f"Ask for less time: see MaxTime in scontrol show partition {part}."]
    actions.append("Or submit it to a partition that allows longer jobs.")
    return _result("time_limit", summary, details, actions)


def _dependency(ctx: WaitContext, head: str, tail: str) -> Explanation:
    words = dependency_words(ctx.dependency or "")
    clear = f"scontrol update JobId={JOB} Dependency="
    if head.lower() == "dependency":
        summary = f"waiting for {words}" if words else "waiting for the jobs it depends on"
        actions = [
            "Nothing to do: it starts when its dependency is met.",
            f"To start it without waiting: {clear}",
        ]
        return _result("dependency", summary, (), actions)
    summary = "will never start: its dependency can no longer be met"
    summary += f" (it waits for {words})" if words else ""
    details = ["A job it depends on ended in a way that rules it out, e.g. afterok on a job that failed."]
    if ctx.dependency:
        details.append(f"Dependency as Slurm holds it: {' '.join(ctx.dependency.split())}.")
    actions = [
        f"Cancel it (scancel {JOB}), fix what made the earlier job fail, and submit again.",
        f"Or clear the dependency to run it anyway: {clear}",
    ]
    return _result("dependency", summary, details, actions)


_EXPLAINERS: dict[str, Callable[[WaitContext, str, str], Explanation]] = {
    "resources": _resources,
    "priority": _priority,
    "dependency": _dependency,
    "dependencyneversatisfied": _dependency,
    "partitiontimelimit": _partition_time,
    "reqnodenotavail": _nodes_unavailable,
    "nodedown": _nodes_unavailable,
}
