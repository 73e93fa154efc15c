"""Strict patterns for names that become Slurm fields, paths or variable names.

These values reach places that cannot be shell-quoted (``#SBATCH`` lines,
``--comment``, file names), so they are checked against a whitelist instead.
"""

from __future__ import annotations

import re

# Job names, projects, queues, partitions, accounts, QoS: Slurm accepts more,
# but these also become file names and sbatch directives.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
NAME_HELP = "1-63 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
ENV_NAME_HELP = "a shell variable name: letters, digits and '_', not starting with a digit"
RESERVED_ENV_PREFIXES = ("SLURM_", "GW_")

GPU_TYPE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,31}")
GPU_TYPE_HELP = "lower-case letters, digits, '_', '.' or '-' (a Slurm gres type such as a100)"

# Slurm accounts (sacctmgr lower-cases names) and OS user names (useradd's rules).
ACCOUNT = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
ACCOUNT_HELP = "1-63 characters: lower-case letters, digits, '_' or '-', starting with a letter or digit"
OS_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
OS_USER_HELP = "1-32 characters: lower-case letters, digits, '_' or '-', not starting with a digit"

# A version number as specs write it: 3 or v3 (leading zeros allowed), never 0.
VERSION_NUMBER = r"v?0{0,8}[1-9][0-9]{0,8}"
VERSION_ZERO = re.compile(r"@v?0+$")  # what a reference numbering from 0 ends with

TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:=/-]{0,127}")
TAG_HELP = "1-128 characters: letters, digits and . _ : = / -, starting with a letter or digit"

# Paths the gateway itself chooses (run directories) and puts in #SBATCH lines.
SAFE_PATH = re.compile(r"/[A-Za-z0-9._/-]{0,1023}")
SAFE_PATH_HELP = "an absolute path of letters, digits and . _ / - only"

# Output file patterns (sbatch -o/-e): a safe absolute path, plus Slurm's
# filename tokens %A %a %j %J %x %u %N %n and a literal %%.
OUTPUT_PATH = re.compile(r"/(?:[A-Za-z0-9._/+-]|%[AajJxuNn%]){0,1023}")
OUTPUT_PATH_HELP = (
    "an absolute path of letters, digits and . _ / + - only, with Slurm's tokens %A %a %j %J %x %u %N %n %%"
)

# Paths the user chooses (working directory): shell-quoted when used, but no
# control characters, which no sane path has and which hide in logs.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def is_name(value: str) -> bool:
    """True when ``value`` is a whole :data:`NAME` (users, projects, queues, datasets, Slurm names)."""
    return NAME.fullmatch(value) is not None
