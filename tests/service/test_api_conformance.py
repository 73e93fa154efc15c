"""The API matches its own OpenAPI description: schemathesis, every operation, every check.

This is ``st run --checks all`` in-process (schemathesis' own engine: the
examples, coverage and fuzzing phases, positive and negative data), against
the app built on the real services. It calls as ``tester`` (lead of project
``test``, not an admin). Nothing it sends runs on the cluster: every run
and eval-run body is aimed at a queue that does not exist. Revoking tokens is
the one operation left out (a fuzzed id could revoke the very token it calls
with); it is tested on purpose in test_access.

``GW_CONFORMANCE_OPS=GET /runs,POST /runs`` limits it to some operations, and
``GW_CONFORMANCE_EXAMPLES`` sets the fuzzing budget, for a quick look.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter, defaultdict

import pytest
import schemathesis
from schemathesis.config import HealthCheck
from schemathesis.engine import Status, StopReason, events
from schemathesis.hooks import GLOBAL_HOOK_DISPATCHER

from gateway.api import create_app
from gateway.core.runs.values import RunFilter
from tests.service.conftest import BACKENDS, OPERATOR, PROJECT

NO_SUCH_QUEUE = "fuzz-no-such-queue"
FUZZER = "fuzzer"  # a lead of PROJECT (tests/service/conftest.py SITE) that only this test uses
SKIPPED = {"DELETE /tokens/{token_id}"}
MAX_EXAMPLES = int(os.environ.get("GW_CONFORMANCE_EXAMPLES", "20"))
# One fixed seed: the suite's run is the same run every time (a rare case found by another seed is a
# finding to fix, never a flake of CI); GW_CONFORMANCE_SEED draws other cases, for a search.
SEED = int(os.environ.get("GW_CONFORMANCE_SEED", "20261201"))

# What the server refuses that the description cannot say (docs/api.md, "The description and the server
# agree"): rules about more than one field, and about the gateway's state. A schema-valid request one of
# them refuses answers 422 with the issue at this place and with this message; positive_data_acceptance
# lets exactly those through, and nothing else (a rule about one field belongs in the schema).
# Resources: GPUs asked for when GPU options are set, and one way; one memory size; cpus_per_task or
# cpus_per_gpu.
RESOURCE_RULES = (
    r"gpu_type is set but gpus_per_node is 0|give one of .* Slurm takes one|not both|need GPUs"
    r"|give GPUs one way"
)
RUN_SPEC_RULES = [
    ("body", r"give exactly one of 'command' or 'script'"),
    ("body", r"script_args go with 'script'"),
    ("body", r"launcher 'torchrun' needs 'command'"),
    ("body", r"sweeps run one node per task|sweeps run each task's command once"),
    ("body", r"dataset_digests names paths that are not in datasets"),
    ("body", r"container_digest is set without container_image"),
    ("body", r"environment names what the job runs in"),
    ("body", r"semantics 'sbatch' needs a workdir Slurm's --chdir can take"),  # semantics with workdir
    (
        r"body\.resources",
        RESOURCE_RULES,
    ),
    (
        r"body\.sweep",
        r"give exactly one of 'params'|grid key .* has no values|the sweep has (no|\d+) param sets",
    ),
    (r"body\.sweep", r"indices has \d+ entries for \d+ param sets|indices repeat"),
    (r"body\.datasets", r"share the name"),
    (r"body\.params", r"are \d+ characters as JSON"),  # the size of them all
    # a secret's source: one of file, site and project (each optional in the schema)
    (r"body\.secrets\.[^.]+", r"give exactly one of file \(a file only you can read\)"),
    (r"body", r"named in both env and secrets"),
]
SERVER_ONLY_RULES: dict[str, list[tuple[str, str]]] = {
    "POST /runs": [*RUN_SPEC_RULES, (r"body\.queue", r"project \S+ has no (such )?queue")],
    "POST /runs/check": [*RUN_SPEC_RULES, (r"body\.queue", r"project \S+ has no (such )?queue")],
    "POST /runs/{run_id}/rerun": [
        *((loc.replace("body", r"body\.spec", 1), msg) for loc, msg in RUN_SPEC_RULES),
        # a fuzzed rerun is aimed at a queue that does not exist (below): refused like a submission
        (r"body\.queue", r"project \S+ has no (such )?queue"),
        # an edit's value is read as YAML, and its KEY.PATH's depth and length are bounded: the schema
        # says only the KEY.PATH=VALUE shape (gateway.core.described.ASSIGNMENT)
        (r"body(\.[^.]+)*", r"not valid YAML or JSON|KEY\.PATH (has \d+ levels|is \d+ characters)"),
        # edits of a real parent (schemathesis reuses run ids from earlier answers) are checked as the
        # spec they leave: every rule of a spec, at the edited field's path (a field of the spec, not of
        # the body), and a KEY.PATH that names no field of the spec
        *RUN_SPEC_RULES,
        (r"body\.(?!(set|spec)(\.|$)).+", r""),
        (r"body\.(set|spec)(\..+)?", r"unknown field; (valid fields here: name, project, |did you mean `)"),
    ],
    "POST /admin/site": [
        (
            "body",
            r"a (user|project) is listed twice|two projects share one Slurm account|maps to root"
            r"|project \S+ (lists a (member|queue|secret) twice|names unknown users)"
            r"|a site secret is listed twice|site secret \S+ names unknown projects"
            r"|a cluster is listed twice|two clusters are reached the same way|queue \S+ names cluster"
            r"|accounting\.clusters has rates for cluster",
        ),
        # a cluster's two ways to be reached exclude each other; rest needs its sockets and slurm.conf
        (
            r"body\.clusters\.\d+",
            r"give slurm_conf .* or slurm_name|backend rest needs|backend rest runs its slurmrestd"
            r"|restd_socket_dir is for backend rest only|restd \(a site-run slurmrestd\) needs backend: rest",
        ),
        # a site-run slurmrestd's address (http://HOST:PORT or unix:///PATH) and its key file's path
        (
            r"body\.clusters\.\d+\.restd\.(url|jwt_key)",
            r"is not a slurmrestd address|port \d+ of .* is not 1-65535|not an absolute file path",
        ),
        # a submit host's fields: a host name, absolute paths, an OS user; per_user_key's {user}
        (
            r"body\.clusters\.\d+\.submit_host(\.(host|known_hosts|service_key|user_keys|service_user))?",
            r"not a host name or address|not an absolute file path|not a valid OS user name"
            r"|must contain \{user\}",
        ),
        # a secret's source: one of file and env (each optional in the schema), and a file gw can open
        (r"body\.(projects\.\d+\.)?secrets\.\d+", r"give exactly one of file \(a file gw serve can read\)"),
        (
            r"body\.(projects\.\d+\.)?secrets\.\d+\.file",
            r"secret \S+: (gw serve cannot open|.* is not a regular)",
        ),
        # the rates' rule (each one once) and valid_from's years (1970 to 9998), a cluster's rates too
        (r"body\.accounting(\.clusters\.[^.]+)?", r"two rates for partition"),
        (r"body\.accounting(\.clusters\.[^.]+)?\.rates\.\d+\.valid_from", r"out of range"),
    ],
    # each kind's own fields, the lock's format, the archive's content, the build job's admission
    # (docs/environments.md): the description says each field, not which kind needs it
    "POST /environments/{project}/{name}/versions": [
        (r"body\.lock", r"a python environment needs|line \d+|the lock file"),
        (r"body\.build_queue", r"name the project's queue"),
        (r"body\.archive", r"image archive|not a regular file|cannot read|exactly one image"),
        (r"body\.modules", r"at least one module"),
        (r"body\.queue", r"project \S+ has no (such )?queue"),
    ],
    "GET /environments/diff": [
        (r"body\.project", r"give the project of a reference without one"),
        (r"body\.run", r"named no registered environment"),
    ],
    "POST /datasets/{project}/{name}/versions": [
        (r"body\.path", r"give the path jobs read the dataset from, or a source_uri"),
        (
            r"body\.files",
            r"duplicate path|a file dataset has exactly one entry|the files add up to more than",
        ),
    ],
    # the calendar rules a pattern cannot say (gateway/core/reports/periods.py)
    "GET /reports/{kind}": [
        (
            r"query\.period",
            r"has weeks W01 to W5|not a date of the calendar|before it starts|at most \d+ days|out of range",
        )
    ],
    # a suite, its versions and the gate's terms are the registry's to know (alias_policies.py)
    "PUT /models/{project}/{name}/policies/{alias}": [
        (r"body\.gate_suite", r"no such eval suite|has no version yet"),
        (
            r"body\.(gate_version|gate_baseline|allow_imported_results)",
            r"a version of the suite|only with gate_suite",
        ),
    ],
    "PUT /projects/{project}/alias-policies/{alias}": [
        (r"body\.gate_suite", r"no such eval suite|has no version yet"),
        (
            r"body\.(gate_version|gate_baseline|allow_imported_results)",
            r"a version of the suite|only with gate_suite",
        ),
    ],
    "PUT /eval/suites/{project}/{name}/settings": [(r"body\.versions_by", r"nothing to change")],
    # whether the files are lm-eval's output of this suite version is the import's to know (imports.py)
    "POST /eval/suites/{project}/{name}/versions/{version}/imports": [
        (r"body\.files(\.\S+)?", r"results files|not one of lm-eval's output files|each file once|at most")
    ],
    "POST /eval/suites": [
        (
            r"body\.resources",
            RESOURCE_RULES,
        ),
        (r"body\.harness", r"harness (pins its version|names its program)|'program' is for native harnesses"),
        (r"body\.datasets", r"is listed twice"),
        (r"body\.datasets\.\d+", r"project \S+ cannot read this dataset"),
        (r"body\.tasks\.\d+\.metrics", r"is listed twice"),
        # the suite's own rules about its tasks and its gate's rules (SuiteVersion._rules_name_known_metrics)
        (
            "body",
            r"task .* is listed twice; name each task once"
            r"|gate\.(thresholds|regression)\.\d+: (no task of the suite has metric"
            r"|task .* (is not in the suite|has no metric)|metric .* aggregates by|\S+ is already gated by)",
        ),
    ],
}


# A batch's items: each item's issues (at body.items.N.spec.<field>) are those of POST /runs (at
# body.<field>), refused all or none (batch_rejected); or the batch's own rules.
SERVER_ONLY_RULES["POST /runs/batch"] = [
    *SERVER_ONLY_RULES["POST /runs"],
    (r"body\.items", r"each item needs its own Idempotency-Key|a batch holds 1 to \d+ runs"),
]
RUN_BODIES = ("POST /runs", "POST /runs/check", "POST /eval/runs")  # bodies that would reach Slurm


def conformance_run(app, token: str, only: set[str] | None = None) -> dict:
    """Run schemathesis over the app; failures grouped by (check, operation), with one example each."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.update(headers={"Authorization": f"Bearer {token}"}, continue_on_failure=True)
    schema.config.generation.update(max_examples=MAX_EXAMPLES)
    schema.config.seed = SEED
    # A spec's patterns make drawing a body slow on a busy machine; slow drawing is no failure of the API.
    schema.config.update(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    schema.config.phases.stateful.enabled = False  # FastAPI writes no links; nothing to chain
    for label in SKIPPED:
        method, path = label.split(" ", 1)
        schema = schema.exclude(method=method, path=path)
    if only:
        schema = schema.include(func=lambda ctx: ctx.operation.label in only)

    def aim_nowhere(context, case, kwargs):
        # Never run fuzzed commands on the cluster (every phase calls through here, examples included).
        if case.operation.label in RUN_BODIES and isinstance(case.body, dict):
            case.body["queue"] = NO_SUCH_QUEUE
            if case.operation.label in ("POST /runs", "POST /runs/check"):
                case.body["project"] = PROJECT
        if case.operation.label == "POST /runs/batch" and isinstance(case.body, dict):
            for item in case.body.get("items") or []:
                if isinstance(item, dict) and isinstance(item.get("spec"), dict):
                    item["spec"]["queue"], item["spec"]["project"] = NO_SUCH_QUEUE, PROJECT
        if case.operation.label == "POST /runs/{run_id}/rerun" and isinstance(case.body, dict):
            given = case.body.get("set")
            if isinstance(given, list):  # a rerun that got past its checks would submit: aim it nowhere too
                kept = [s for s in given if not (isinstance(s, str) and s.startswith("queue="))]
                case.body["set"] = [*kept[:99], f"queue={NO_SUCH_QUEUE}"]  # at most 100 edits
            if isinstance(case.body.get("spec"), dict):
                case.body["spec"]["queue"] = NO_SUCH_QUEUE
            elif "set" not in case.body and case.body.get("spec") is None:
                # no edits and no spec: a plain rerun of the parent (a run id schemathesis took from
                # an earlier response) would submit the parent's spec as it is
                case.body["set"] = [f"queue={NO_SUCH_QUEUE}"]

    cases: Counter[str] = Counter()

    spent: Counter[str] = Counter()
    last = [time.monotonic()]

    @schema.hook
    def after_call(context, case, response):
        cases[case.operation.label] += 1
        now = time.monotonic()
        spent[case.operation.label] += now - last[0]  # generation and call since the previous call
        last[0] = now

    failures: dict[tuple[str, str], list[str]] = defaultdict(list)
    server_only: Counter[str] = Counter()
    errors: list[str] = []
    started = time.monotonic()
    GLOBAL_HOOK_DISPATCHER.register_hook_with_name(aim_nowhere, "before_call")  # a global-only hook
    try:
        stream = list(schemathesis.engine.from_schema(schema).execute())
    finally:
        GLOBAL_HOOK_DISPATCHER.unregister(aim_nowhere)
    for event in stream:
        if isinstance(event, events.ScenarioFinished):
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.status == Status.FAILURE and check.failure_info is not None:
                        interaction = event.recorder.interactions.get(case_id)
                        if check.name == "positive_data_acceptance" and _server_only(
                            event.recorder.label, interaction
                        ):
                            server_only[event.recorder.label] += 1
                            continue
                        failures[(check.name, event.recorder.label)].append(
                            _describe(check.failure_info.failure, interaction)
                        )
        elif isinstance(event, events.NonFatalError):
            errors.append(f"{event.label}: {event.value!r}"[:500])
        elif isinstance(event, events.FatalError):
            errors.append(f"fatal: {event.exception!r}"[:500])
        elif isinstance(event, events.EngineFinished) and event.stop_reason != StopReason.COMPLETED:
            errors.append(f"the engine stopped: {event.stop_reason}")
    return {
        "failures": failures,
        "cases": cases,
        "server_only": server_only,
        "spent": spent,
        "errors": errors,
        "seconds": time.monotonic() - started,
    }


def _server_only(label: str, interaction) -> bool:
    """Whether a 422 to schema-valid data names only rules of ``SERVER_ONLY_RULES``."""
    rules = SERVER_ONLY_RULES.get(label)
    if not rules or interaction is None or interaction.response is None:
        return False
    if interaction.response.status_code != 422:
        return False
    body = json.loads(interaction.response.content)
    issues = body["detail"]
    if body.get("error") == "batch_rejected":  # each refused item's issues
        issues = []
        for item in body["items"]:
            if not isinstance(item["error"]["detail"], list):
                return False
            issues += item["error"]["detail"]
    if label == "POST /runs/batch" and isinstance(issues, list):  # an item's spec issue, at the spec's path
        issues = [
            {**i, "loc": [i["loc"][0], *i["loc"][4:]]}
            if i["loc"][1:2] == ["items"] and i["loc"][3:4] == ["spec"]
            else i
            for i in issues
        ]
    return isinstance(issues, list) and all(
        any(
            re.fullmatch(loc, ".".join(map(str, issue["loc"]))) and re.search(msg, issue["msg"])
            for loc, msg in rules
        )
        for issue in issues
    )


def _describe(failure, interaction) -> str:
    text = f"{failure.title}: {failure.message}"
    if interaction is not None:
        request = interaction.request
        body = (request.body or b"")[:300].decode("utf-8", "replace")
        text += f"\n    {request.method} {request.uri} {body}"
        if interaction.response is not None:
            text += f"\n    -> {interaction.response.status_code} {interaction.response.content[:1000]!r}"
    return text


def report(result: dict) -> str:
    """The failures as text: counts by check, then by operation with one example each."""
    by_check = Counter()
    for (check, _op), found in result["failures"].items():
        by_check[check] += len(found)
    lines = [
        f"{sum(result['cases'].values())} cases in {result['seconds']:.0f} s; refused by a server-only rule: "
        f"{dict(result['server_only'])}; failures by check:"
    ]
    lines += [f"  {check}: {n}" for check, n in by_check.most_common()]
    lines.append("slowest: " + ", ".join(f"{op} {s:.0f} s" for op, s in result["spent"].most_common(8)))
    for (check, op), found in sorted(result["failures"].items()):
        lines.append(f"{check} / {op}: {len(found)}\n  {found[0]}")
    lines += [f"error: {e}" for e in result["errors"]]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def app(services):
    application = create_app(services=services)
    application.state.services = services  # schemathesis calls the app without its lifespan
    return application


def test_every_operation_conforms_to_the_openapi_description(app, services):
    """0 failures over every operation with every check; and nothing it sent made a run."""
    if not services.settings.database_url.startswith(BACKENDS[0]):
        pytest.skip(f"the API's conformance does not depend on the database: checked on {BACKENDS[0]}")
    # A user of its own: a run submitted by it can only come from a fuzzed request, whatever else
    # runs in this process (other tests' servers, watchers) submits meanwhile.
    token = services.auth.issue_token(OPERATOR, FUZZER, name="conformance")[0]
    only = {op.strip() for op in os.environ.get("GW_CONFORMANCE_OPS", "").split(",") if op.strip()}
    result = conformance_run(app, token, only or None)
    print(report(result))
    if os.environ.get("GW_CONFORMANCE_DUMP"):
        with open(os.environ["GW_CONFORMANCE_DUMP"], "w") as out:
            for (check, op), found in sorted(result["failures"].items()):
                for text in found:
                    out.write(f"== {check} / {op}\n{text}\n")
    assert not result["failures"] and not result["errors"], report(result)
    made = services.runs.store.list_runs(RunFilter(submitter=FUZZER, limit=5)).items
    assert not made, "a fuzzed request made a run: " + "; ".join(
        f"{run.id} {run.name!r} queue {run.queue} parent {run.parent_run_id} state {run.state.value}"
        for run in made
    )
    if not only:
        operations = {
            f"{method.upper()} {path}"
            for path, methods in app.openapi()["paths"].items()
            for method in methods
        }
        expected = operations - SKIPPED
        assert set(result["cases"]) == expected, set(result["cases"]) ^ expected
        # every operation was called, and the server-only rules were met (and let through)
        # (an operation without parameters has few distinct requests: GET /admin/site gets about 4)
        assert min(result["cases"].values()) >= 3 and sum(result["cases"].values()) > 2000, result["cases"]
        assert result["server_only"]["POST /runs"] > 0, result["server_only"]
