"""The wheel carries the site-editable folders at the top of the repository inside the package.

``templates/sbatch/``, ``eval/`` and ``accounting/`` stay at the top (what a site edits, what runs in
jobs on compute nodes without the gateway installed); the wheel carries each as
``gateway/_builtin/<name>/``, where ``gateway.resources`` finds it. An editable install maps only
``gateway`` itself, and ``gateway.resources`` finds the folders at the top of the checkout. The
rest of the build (metadata, package data) is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

# gateway/_builtin/<name> <- folder; the names gateway.resources looks for (tests/unit/test_packaging.py)
BUILTIN = {"sbatch": "templates/sbatch", "eval": "eval", "accounting": "accounting"}


def builtin_packages() -> dict[str, str]:
    """Each carried folder and its sub-folders as packages of data (no __init__.py), by their folders."""
    found = {}
    for name, folder in BUILTIN.items():
        found[f"gateway._builtin.{name}"] = folder
        for sub in find_namespace_packages(where=folder, exclude=["*__pycache__*"]):
            found[f"gateway._builtin.{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return found


CARRIED = builtin_packages()
setup(
    packages=[*find_namespace_packages(include=["gateway*"], exclude=["*__pycache__*"]), *CARRIED],
    package_dir=CARRIED,
)
