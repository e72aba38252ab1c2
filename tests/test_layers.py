"""The package's layering holds: import-linter's contract in pyproject.toml, and it covers every module.

Why both: the contract only constrains the modules it names, so a new top-level module left out of
it would escape the layering silently; the second test makes adding one a deliberate choice.
"""

from __future__ import annotations

import pkgutil
import sys
from pathlib import Path

import pytest
import tomllib

import acc_agent

REPO = Path(__file__).resolve().parents[1]


def _contract() -> dict[str, object]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = [c for c in contracts if c["type"] == "layers"]
    assert len(layered) == 1, "expected one layers contract in pyproject.toml"
    return layered[0]


def test_import_linter_contract_is_kept(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from importlinter import cli

    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    code = cli.lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True)
    report = capsys.readouterr().out
    assert code == cli.EXIT_STATUS_SUCCESS, report


def test_every_top_level_module_has_a_layer() -> None:
    layers = _contract()["layers"]
    assert isinstance(layers, list)
    named = {part.strip().removeprefix("acc_agent.") for layer in layers for part in str(layer).replace(":", "|").split("|")}
    modules = {info.name for info in pkgutil.iter_modules(acc_agent.__path__)}
    missing = sorted(modules - named)
    assert not missing, f"modules outside the layering (add each to a layer in pyproject.toml): {missing}"
    unknown = sorted(named - modules)
    assert not unknown, f"layers name modules that do not exist: {unknown}"


def test_contract_rejects_an_upward_import(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker is live: a copy of the package with one tool importing the registry breaks it."""
    import shutil

    from importlinter import cli

    copy = tmp_path / "acc_agent"
    shutil.copytree(REPO / "acc_agent", copy, ignore=shutil.ignore_patterns("__pycache__"))
    tool = copy / "tools" / "training_log.py"
    tool.write_text(tool.read_text(encoding="utf-8") + "\nfrom acc_agent.registry import all_tools  # noqa\n",
                    encoding="utf-8")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = {name: mod for name, mod in sys.modules.items() if name == "acc_agent" or name.startswith("acc_agent.")}
    for name in saved:
        del sys.modules[name]
    try:
        code = cli.lint_imports(config_filename=str(tmp_path / "pyproject.toml"), no_cache=True)
    finally:
        for name in [n for n in sys.modules if n == "acc_agent" or n.startswith("acc_agent.")]:
            del sys.modules[name]
        sys.modules.update(saved)
    report = capsys.readouterr().out
    assert code != cli.EXIT_STATUS_SUCCESS
    assert "acc_agent.tools.training_log -> acc_agent.registry" in report


def test_no_private_name_is_imported_from_another_module() -> None:
    """A leading underscore means "this module's own": importing it elsewhere couples the two silently.

    A private module (``tools/_stat_rows.py``) may be imported by modules of its own package only.
    """
    import ast

    found: list[str] = []
    for path in sorted((REPO / "acc_agent").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("acc_agent")):
                continue
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            found += [f"{where}: {node.module}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
            parts = node.module.split(".")
            for i, part in enumerate(parts):
                owner = ".".join(parts[:i])
                if part.startswith("_") and not part.startswith("__") and not (package + ".").startswith(owner + "."):
                    found.append(f"{where}: private module {node.module}")
    assert not found, "private names imported across modules:\n" + "\n".join(found)
