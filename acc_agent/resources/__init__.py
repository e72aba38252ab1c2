"""The data acc-agent ships: report templates, agent skill folders and the demo project.

Why a package of its own: the data lives at the top of the repository (``templates/``, ``skills/``,
``samples/``: the layout the project promises), yet an installed wheel must carry it. pyproject.toml
maps each folder onto a sub-package of this one (``acc_agent.resources.templates`` is
``templates/`` and so on), so a wheel holds the files under ``acc_agent/resources/`` and an
editable install's import hook points the same names at the checkout. :func:`importlib.resources.files`
then finds the data the same way in both, where the old lookup beside the package's own source file
only worked in a checkout.

Callers need real folders (Jinja2's loader, :func:`shutil.copytree`), so every lookup returns a
:class:`~pathlib.Path`; when the package is imported from a zip, the tree is copied out once per
process (see :func:`_materialise`). A missing resource raises :class:`AccAgentError` with the same
code as before the data moved into the package.
"""

from __future__ import annotations

import atexit
import importlib
import shutil
import sys
import tempfile
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent.errors import AccAgentError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: The data sub-packages, as mapped in pyproject.toml's ``[tool.setuptools.package-dir]``.
TEMPLATES = "acc_agent.resources.templates"
SKILLS = "acc_agent.resources.skills"
SAMPLES = "acc_agent.resources.samples"

_REINSTALL = ("Reinstall acc-agent (`python3 -m pip install --force-reinstall acc-agent`, or "
              "`python3 -m pip install -e .` in a checkout): the installed package lacks its data files.")


def _package_root(package: str) -> Traversable | None:
    """The root of a data sub-package, or None when it cannot be imported.

    Imported with bytecode writing off: in an editable install the package's ``__init__.py`` sits
    in the checkout's ``templates/`` (or ``skills/``, ``samples/``), and a ``__pycache__`` folder
    there would be copied or read as if it were data.
    """
    if package not in sys.modules:
        saved = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            importlib.import_module(package)
        except ImportError:
            return None
        finally:
            sys.dont_write_bytecode = saved
    return files(package)


def _copy_tree(tree: Traversable, dest: Path) -> None:
    """Copy a resource tree that is not on disk (a zip member) into ``dest``, file by file."""
    dest.mkdir(parents=True, exist_ok=True)
    for child in tree.iterdir():
        if child.is_dir():
            _copy_tree(child, dest / child.name)
        else:
            (dest / child.name).write_bytes(child.read_bytes())


def _materialise(tree: Traversable) -> Path:
    """A real folder holding ``tree``: itself when installed as files, else a copy removed at exit.

    Why not :func:`importlib.resources.as_file`: it extracts whole folders only from Python 3.12 on,
    and acc-agent supports 3.10.
    """
    if isinstance(tree, Path):
        return tree
    target = Path(tempfile.mkdtemp(prefix="acc-agent-data-"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    _copy_tree(tree, target / tree.name)
    return target / tree.name


@cache
def _locate(package: str, *parts: str) -> tuple[Path | None, str]:
    """(folder, where it was looked for): the folder is None when it is not installed.

    Cached so that a zip-imported package is extracted once per process, not once per render.
    """
    root = _package_root(package)
    if root is None:
        return None, f"{package} (the package is not installed)"
    node = root
    for part in parts:
        node = node / part
    where = str(node) if isinstance(node, Path) else f"{package}/{'/'.join(parts)}"
    if not node.is_dir():
        return None, where
    return _materialise(node), where


def templates_dir() -> Path:
    """The Jinja2 report templates (``en/``, ``zh/``) and the commented ``mig.yaml`` that init writes."""
    path, where = _locate(TEMPLATES)
    if path is None or not (path / "mig.yaml").is_file():
        raise AccAgentError("missing_templates", f"templates folder not found at {where}", hint=_REINSTALL,
                            path=where)
    return path


def skills_dir() -> Path:
    """The agent skill folders (one ``<name>/SKILL.md`` each) that ``skills install`` copies."""
    path, where = _locate(SKILLS)
    if path is None or not any(path.glob("*/SKILL.md")):
        raise AccAgentError("skills_not_found", f"no skill folders found at {where}", hint=_REINSTALL, path=where)
    return path


def demo_project_dir() -> Path:
    """The bundled demo migration project that ``acc-agent demo`` copies and renders."""
    path, where = _locate(SAMPLES, "demo_project")
    if path is None or not (path / "mig.yaml").is_file():
        raise AccAgentError("missing_samples", f"demo project not found at {where}",
                            hint=_REINSTALL + " In a checkout, `python3 samples/make_samples.py` regenerates it.",
                            path=where)
    return path
