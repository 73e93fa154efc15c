"""Where the gateway finds the files it ships beside its code: sbatch templates, eval/, accounting/.

Three folders at the top of the repository hold what a site edits and what runs inside jobs on
compute nodes, where the gateway itself is not installed (docs/architecture.md):

    templates/sbatch/   the sbatch templates                    -> SBATCH_TEMPLATES
    eval/               suites, task YAMLs, prompts, job programs -> EVAL
    accounting/         the GPU telemetry sampler (telemetry/), the example rate table -> ACCOUNTING

A wheel carries each one inside the package as ``gateway/_builtin/<name>/`` (setup.py maps the
folder there); an editable install or a plain checkout (``PYTHONPATH=.``) has them beside the
package, at the top of the repository. ``builtin_dir`` looks in the package first
(``importlib.resources``), then at the top of the checkout, and takes the first place that holds
the folder's marker file; neither is a ``FileNotFoundError`` that says where it looked. A site's
own folder (``GATEWAY_TEMPLATE_DIR``, ``GATEWAY_EVAL_DIR``, ``GATEWAY_ACCOUNTING_DIR``) comes
first where the settings name one: ``chosen(setting, which)``.

No symlinks: a symlink inside the package was once turned into a plain file by a recovery and
every eval job failed; a missing folder now stops the gateway at its start, with this message.
Standard library only (the core's renderer calls it too).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PACKAGE = "gateway"
PACKAGED = "_builtin"  # below the package: where a wheel carries the folders


@dataclass(frozen=True)
class Builtin:
    """One folder the gateway ships: its name in the package, its place in a checkout, a file it holds."""

    what: str  # for messages
    name: str  # gateway/_builtin/<name> in a wheel (setup.py's BUILTIN)
    checkout: str  # below the repository's top
    marker: str  # a file the folder must hold, relative to it

    @property
    def packaged(self) -> str:
        """Its path below the installed package's folder."""
        return f"{PACKAGED}/{self.name}"


SBATCH_TEMPLATES = Builtin("the built-in sbatch templates", "sbatch", "templates/sbatch", "single.sbatch.j2")
EVAL = Builtin(
    "the built-in eval/ folder (suites, task YAMLs, eval job programs)", "eval", "eval", "jobs/run_eval.py"
)
ACCOUNTING = Builtin(
    "the built-in accounting/ folder (the GPU telemetry sampler)",
    "accounting",
    "accounting",
    "telemetry/gpu_sampler.py",
)
ALL = (SBATCH_TEMPLATES, EVAL, ACCOUNTING)


def candidates(which: Builtin) -> list[Path]:
    """Where ``which`` may be, in the order looked at: inside the package, then the checkout's top."""
    package = Path(str(resources.files(PACKAGE)))
    return [package / which.packaged, package.parent / which.checkout]


@functools.cache
def builtin_dir(which: Builtin) -> Path:
    """The folder ``which`` is in (absolute); FileNotFoundError naming every place looked at."""
    places = candidates(which)
    for place in places:
        if (place / which.marker).is_file():
            return place.resolve()
    looked = " or ".join(str(p / which.marker) for p in places)
    raise FileNotFoundError(
        f"{which.what} not found: no {looked}. A wheel carries it as gateway/{which.packaged}/, a "
        f"checkout as {which.checkout}/ at its top; reinstall the gateway, or restore {which.checkout}/ "
        "from git (a plain file where a folder should be is a broken copy)"
    )


def chosen(setting: Path | None, which: Builtin) -> Path:
    """The site's folder where the settings name one, else the built-in one."""
    return setting if setting is not None else builtin_dir(which)
