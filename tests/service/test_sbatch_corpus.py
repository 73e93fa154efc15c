"""gw sbatch against raw sbatch on real scripts (tests/data/sbatch_corpus, each with its source).

Every script is submitted held, once by raw ``sbatch --hold`` and once by
``gw sbatch --hold``, from the same directory; the two jobs' ``scontrol show
job`` fields must be identical (then both are cancelled). A script that gw
refuses must say ``# gw-expect: refused OPTION`` and be refused by that name.
The only edits to a script are its account (``@ACCOUNT@``: the Slurm account
for sbatch, the project for gw), its partition, and sizes scaled to this
cluster's nodes, as each script's ``# adapted:`` line says. A ``# gw-args:``
line gives command-line options, passed to both. The directories the scripts
write their output to (``log/``, ``slurm/`` ...) are made first, as their users
would have made them.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm

CORPUS = Path(__file__).resolve().parent.parent / "data" / "sbatch_corpus"
SCRIPTS = sorted(p.name for p in CORPUS.iterdir() if p.is_file())
FIELDS = (
    "JobName", "Partition", "Account", "QOS", "NumNodes", "NumTasks", "CPUs/Task", "ReqTRES",
    "MinMemoryNode", "MinMemoryCPU", "TimeLimit", "ArrayTaskId", "ArrayTaskThrottle", "StdOut", "StdErr",
    "WorkDir", "Dependency", "MailUser", "MailType", "Requeue", "OverSubscribe", "Features",
    "TresPerNode", "TresPerJob", "TresPerTask", "ReqNodeList", "ExcNodeList", "TimeMin", "Reservation",
)  # fmt: skip
_FIELD = re.compile(r"(\S+?)=(.*?)(?= \S+?=|$)")


@pytest.fixture(scope="module")
def serve(tmp_path_factory, slurm) -> Iterator:
    with gw_serve(tmp_path_factory.mktemp("serve"), prefix="sbc") as serve:
        yield serve


def job_fields(job_id: str, own_id: str) -> dict[str, str]:
    """``scontrol show job -o`` of a job (the first record of an array), as field -> value, with the
    job's own id in its file names written JOBID (the two jobs compared have different ids)."""
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    )
    fields = dict(_FIELD.findall(out.stdout.splitlines()[0]))
    for key in ("StdOut", "StdErr"):
        if key in fields:
            # the file name only: a directory (pytest-5) may hold a young cluster's job id
            head, sep, name = fields[key].rpartition("/")
            fields[key] = head + sep + re.sub(rf"(?<![0-9]){own_id}(?![0-9])", "JOBID", name)
    return fields


OUTPUT_DIRS = ("sub", "watch_folder", "log", "logs", "slurm", "slurm_logs")


def prepare(name: str, where: Path, account: str) -> Path:
    text = (CORPUS / name).read_text()
    sub = where / "sub"
    for directory in OUTPUT_DIRS:
        (where / directory).mkdir(exist_ok=True)
    path = where / name
    path.write_text(text.replace("@ACCOUNT@", account).replace("@SUBDIR@", str(sub)))
    return path


@pytest.mark.parametrize("name", SCRIPTS)
def test_gw_sbatch_runs_the_script_as_sbatch_does(serve, tmp_path, name):
    raw_dir, gw_dir = tmp_path / "raw", tmp_path / "gw"
    # the same directory for both: paths in the job record must match
    raw_dir.mkdir()
    gw_dir = raw_dir
    text = (CORPUS / name).read_text()
    expect = re.search(r"^# gw-expect: refused (\S+)", text, re.M)
    args = re.search(r"^# gw-args: (.*)$", text, re.M)
    words = args[1].split() if args else []
    raw = subprocess.run(
        ["sbatch", "--hold", "--parsable", *[w.replace("@ACCOUNT@", serve.account) for w in words],
         str(prepare(name, raw_dir, serve.account))],
        cwd=raw_dir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert raw.returncode == 0, f"raw sbatch refused {name}: {raw.stderr}"
    made = [raw.stdout.strip().split(";")[0]]  # every job this test made, cancelled by id at the end
    try:
        env = {
            **os.environ,
            "GW_URL": serve.url,
            "GW_TOKEN": serve.tokens["tester"],
            "GW_CONFIG": serve.config,
        }
        env.pop("GW_PROJECT", None)
        mine = subprocess.run(
            [*GW, "sbatch", "--hold", "--parsable", *[w.replace("@ACCOUNT@", "test") for w in words],
             str(prepare(name, gw_dir, "test"))],
            cwd=gw_dir, env=env, capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        gw_id = mine.stdout.strip().split(";")[0]
        if mine.returncode == 0 and gw_id.isdigit():
            made.append(gw_id)  # before any assertion, so a job gw should have refused is cancelled too
        if expect:
            assert mine.returncode == 2 and expect[1] in mine.stderr, mine.stderr
            return
        assert mine.returncode == 0, f"gw sbatch refused {name}: {mine.stderr}"
        # --parsable: "N", or "N;cluster" with -M, as sbatch prints it
        assert mine.stdout.strip().partition(";")[1:] == raw.stdout.strip().partition(";")[1:], mine.stdout
        theirs, ours = job_fields(made[0], made[0]), job_fields(gw_id, gw_id)
        differ = {f: (theirs.get(f), ours.get(f)) for f in FIELDS if theirs.get(f) != ours.get(f)}
        assert not differ, f"{name}: sbatch vs gw sbatch differ in {differ}"
    finally:
        subprocess.run(["scancel", *made], check=False)


def gw_sbatch(serve, cwd: Path, *args: str, config: Path | None = None, **env_over: str):
    """``gw sbatch ARGS`` in ``cwd`` as the tester: GW_URL and GW_TOKEN set, unless ``config``
    names the gw config file to read them (and its project) from."""
    env = {k: v for k, v in os.environ.items() if k not in ("GW_PROJECT", "GW_URL", "GW_TOKEN")}
    if config is None:
        env.update(GW_URL=serve.url, GW_TOKEN=serve.tokens["tester"], GW_CONFIG=serve.config)
    else:
        env["GW_CONFIG"] = str(config)
    env.update(env_over)
    return subprocess.run(
        [*GW, "sbatch", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120
    )


def test_the_gw_config_files_project_is_the_default(serve, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J cfg-default -t 5\necho hi\n")
    config = tmp_path / "config.toml"
    config.write_text(f'url = "{serve.url}"\ntoken = "{serve.tokens["tester"]}"\n')
    # no project anywhere: the tester is in two projects, so gw names them and how to pick one
    refused = gw_sbatch(serve, tmp_path, "--hold", str(script), config=config)
    said = " ".join(refused.stderr.split())  # as one line: the console wraps long messages
    assert refused.returncode == 2 and "yours: capped, test" in said, refused.stderr
    assert 'project = "PROJECT" in your gw config file' in said
    config.write_text(config.read_text() + 'project = "test"\n')
    done = gw_sbatch(serve, tmp_path, "--hold", "--parsable", str(script), config=config)
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip()
    try:
        assert job_fields(job, job)["Account"] == serve.account
        # -A on the line still wins over the config file
        other = gw_sbatch(serve, tmp_path, "--hold", "-A", "capped", "-p", "gpu", str(script), config=config)
        assert other.returncode == 0, other.stderr
        capped = other.stdout.split()[-1]
        subprocess.run(["scancel", capped], check=False)
    finally:
        subprocess.run(["scancel", job], check=False)


def test_a_job_name_sbatch_takes_reaches_slurm_literally(serve, tmp_path):
    """A name with spaces and brackets, and script arguments full of shell signs: the job Slurm
    holds has exactly that name, as raw sbatch gives it; the arguments stay words (see the unit
    tests for the rendered script)."""
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -A @A@ -t 5\ntouch {tmp_path}/ran\n")
    name = "my job (v2) [a]"
    raw_script = tmp_path / "raw.sh"
    raw_script.write_text(script.read_text().replace("@A@", serve.account))
    script.write_text(script.read_text().replace("@A@", "test"))
    raw = subprocess.run(
        ["sbatch", "--hold", "--parsable", "-J", name, str(raw_script)],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    mine = gw_sbatch(serve, tmp_path, "--hold", "--parsable", "-J", name, str(script), "$(id)", "a;b", "`id`")
    jobs = [raw.stdout.strip().split(";")[0], mine.stdout.strip()]
    try:
        assert mine.returncode == 0, mine.stderr
        assert job_fields(jobs[0], jobs[0])["JobName"] == name == job_fields(jobs[1], jobs[1])["JobName"]
    finally:
        subprocess.run(["scancel", *[j for j in jobs if j]], check=False)


def test_test_only_asks_slurm_as_sbatch_does_and_queues_nothing(serve, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A @A@ -p cpu -t 5\n#SBATCH --comment=probe\ntrue\n")
    raw_script = tmp_path / "raw.sh"
    raw_script.write_text(script.read_text().replace("@A@", serve.account))
    script.write_text(script.read_text().replace("@A@", "test"))
    raw = subprocess.run(
        ["sbatch", "--test-only", str(raw_script)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    mine = gw_sbatch(serve, tmp_path, "--test-only", str(script))
    assert mine.returncode == 0, mine.stderr
    started = r"^sbatch: Job \d+ to start at \S+ using \d+ processors on nodes \S+ in partition cpu$"
    assert re.search(started, raw.stderr, re.M) and re.search(started, mine.stderr, re.M), mine.stderr
    assert mine.stdout == raw.stdout == ""  # sbatch --test-only prints nothing on stdout
    assert "time limit 5 min" in " ".join(mine.stderr.split())
    left = subprocess.run(
        ["squeue", "-h", f"--account={serve.account}", "-o", "%i"], capture_output=True, text=True
    ).stdout.split()
    assert left == [], left


def test_mem_0_is_refused_by_its_line_where_the_queue_does_not_allow_it(serve, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A test -p cpu -t 5\n#SBATCH --mem=0\ntrue\n")
    refused = gw_sbatch(serve, tmp_path, "--hold", str(script))
    said = " ".join(refused.stderr.split())
    assert refused.returncode != 0 and refused.stdout == "", refused.stderr
    assert "#SBATCH line 3: --mem" in said and "(whole_node_mem): gpu" in said, said
    allowed = gw_sbatch(serve, tmp_path, "--hold", "--parsable", "-p", "gpu", str(script))
    job = allowed.stdout.strip()
    try:
        assert allowed.returncode == 0, allowed.stderr
        assert job_fields(job, job)["MinMemoryNode"] == "0"
    finally:
        if job.isdigit():
            subprocess.run(["scancel", job], check=False)


def _no_jobs_of(serve) -> list[str]:
    return subprocess.run(
        ["squeue", "-h", f"--account={serve.account}", "-o", "%i"], capture_output=True, text=True
    ).stdout.split()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-N", "3"], "option -N (resources.nodes): queue cpu has 2 nodes: ask for at most 2"),
        (["--gres=gpu:1"], "(resources.gpus_per_node): queue cpu has no GPUs; queue gpu has 4 per node"),
        (["--mem=64G"], "option --mem (resources.mem_gb): nodes of queue cpu have at most 4000 MB"),
        (["-p", "gpu", "--gpus-per-node=100"], "queue gpu has at most 4 GPUs per node: ask for at most 4"),
    ],
)
def test_a_job_no_node_could_hold_is_refused_by_gw_sbatch_in_the_gateways_words(serve, tmp_path, args, said):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A test -t 5\ntrue\n")
    refused = gw_sbatch(serve, tmp_path, "--hold", *args, str(script))
    assert refused.returncode == 2 and said in " ".join(refused.stderr.split()), refused.stderr
    assert "Requested node configuration" not in refused.stderr and _no_jobs_of(serve) == []


def test_gw_submit_of_too_many_gpus_gets_the_partitions_message_not_the_fields_bound(serve, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: big\nproject: test\nqueue: gpu\ncommand: 'true'\nhold: true\n"
        "resources: {gpus_per_node: 100, gpu_type: fake, walltime_min: 5}\n"
    )
    env = {**os.environ, "GW_URL": serve.url, "GW_TOKEN": serve.tokens["tester"], "GW_CONFIG": serve.config}
    done = subprocess.run(
        [*GW, "submit", str(spec)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "queue gpu has at most 4 GPUs per node" in said, done.stderr
    assert "less than or equal" not in said and _no_jobs_of(serve) == []
    spec.write_text(spec.read_text().replace("command:", "comand:"))
    done = subprocess.run(
        [*GW, "submit", str(spec)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert "did you mean `command`?" in " ".join(done.stderr.split()), done.stderr


def test_a_mail_user_that_is_no_address_is_passed_on_with_a_warning(serve, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A test -t 5\n#SBATCH --mail-user=<YourNetID>@site.edu\ntrue\n")
    checked = gw_sbatch(serve, tmp_path, "--test-only", str(script))
    said = " ".join(checked.stderr.split())
    assert checked.returncode == 0, checked.stderr
    assert "gw sbatch: warning: --mail-user '<YourNetID>@site.edu' is not a mail address" in said
    quiet = gw_sbatch(serve, tmp_path, "--test-only", "--quiet", str(script))
    assert quiet.returncode == 0 and "warning" not in quiet.stderr
