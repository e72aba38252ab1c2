"""A wheel install carries its data: ``init``, ``demo`` and ``skills install`` work away from the checkout.

Why a real wheel in a fresh virtual environment: the editable install that runs the rest of the
suite finds ``templates/``, ``skills/`` and ``samples/`` in the checkout whatever the packaging
says, so only a built wheel, installed where the checkout cannot be imported, shows whether the
data travels with the package.

Why the dependencies are borrowed and not installed: installing them into the new environment
takes about a minute even from pip's cache. The environment is made without system packages and
gets the test interpreter's site-packages folders through a ``.pth`` file instead. A folder named
in a ``.pth`` file is only added to ``sys.path``: the ``.pth`` files inside it are not run, so the
editable install's import hook (which maps ``acc_agent`` onto this checkout) never loads there.
:func:`venv_probe` checks exactly that in the new environment's own interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import setuptools

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: What the wheel is built from (everything pyproject.toml packages); copied so that the build's
#: build/ and *.egg-info never land in the checkout, where other runs may build at the same time.
BUILD_INPUTS = ("pyproject.toml", "README.md", "MANIFEST.in", "acc_agent", "templates", "skills", "samples")
#: Top-level data folder -> the package it is installed as (pyproject.toml's package-dir).
DATA_PACKAGES = {"templates": "acc_agent.resources.templates", "skills": "acc_agent.resources.skills",
                 "samples": "acc_agent.resources.samples"}

PROBE = """
import json, os, sys
import acc_agent
from acc_agent import resources
print(json.dumps({
    "acc_agent": acc_agent.__file__,
    "templates": str(resources.templates_dir()),
    "skills": str(resources.skills_dir()),
    "samples": str(resources.demo_project_dir()),
    "meta_path": [repr(finder) for finder in sys.meta_path],
    "sys_path": sys.path,
    "prefix": sys.prefix,
    "pythonpath": os.environ.get("PYTHONPATH"),
}))
"""


@dataclass(frozen=True)
class WheelEnv:
    """A virtual environment outside the checkout with acc-agent installed from its wheel."""

    root: Path
    wheel: Path
    work: Path
    env: dict[str, str]

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def cli(self) -> Path:
        return self.root / "bin" / "acc-agent"

    def run(self, *args: str | Path, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(a) for a in args], cwd=cwd or self.work, env=self.env, capture_output=True,
                              text=True, timeout=timeout)


def _inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def _clean_env(cache: Path) -> dict[str, str]:
    """The caller's environment without any PYTHON* variable (PYTHONPATH above all) and user site."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PYTHONNOUSERSITE"] = "1"
    env["ACC_AGENT_CACHE_DIR"] = str(cache)  # the CLI manifest cache stays in tmp, not in ~/.cache
    return env


def _dependency_folders() -> list[str]:
    """Where this interpreter imports acc-agent's dependencies from; never a folder of the checkout."""
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return [f for f in dict.fromkeys(folders) if Path(f).is_dir() and not _inside(f, REPO)]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    """Build the wheel from a copy of the checkout and install it into a new venv (about 15 s, once)."""
    base = tmp_path_factory.mktemp("wheel")
    assert not _inside(base, REPO), "the wheel test must run outside the checkout"
    src, dist, work = base / "src", base / "dist", base / "work"
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif (REPO / name).is_file():
            src.mkdir(exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    env = _clean_env(base / "cache")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                            "-w", str(dist), "-q"], env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = dist.glob("acc_agent-*.whl")

    root = base / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(root)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    purelib = subprocess.run([str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             env=env, capture_output=True, text=True, timeout=60).stdout.strip()
    assert _inside(purelib, root)
    (Path(purelib) / "_acc_agent_test_dependencies.pth").write_text("\n".join(_dependency_folders()) + "\n",
                                                                    encoding="utf-8")
    install = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index",
                              "--ignore-installed", "-q", str(wheel)], env=env, capture_output=True, text=True,
                             timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    work.mkdir()
    return WheelEnv(root=root, wheel=wheel, work=work, env=env)


@pytest.fixture(scope="module")
def venv_probe(wheel_env: WheelEnv) -> dict[str, Any]:
    """What the new environment's interpreter imports, run from outside the checkout."""
    res = wheel_env.run(wheel_env.python, "-c", PROBE)
    assert res.returncode == 0, res.stdout + res.stderr
    probe: dict[str, Any] = json.loads(res.stdout)
    return probe


def test_code_and_data_come_from_the_venv_not_the_checkout(wheel_env: WheelEnv, venv_probe: dict[str, Any]) -> None:
    assert "PYTHONPATH" not in wheel_env.env and venv_probe["pythonpath"] is None
    assert not _inside(wheel_env.work, REPO)
    assert Path(venv_probe["prefix"]).resolve() == wheel_env.root.resolve()
    for key in ("acc_agent", "templates", "skills", "samples"):
        assert _inside(venv_probe[key], wheel_env.root), (key, venv_probe[key])
        assert not _inside(venv_probe[key], REPO), (key, venv_probe[key])
    # the editable install's hook would resolve acc_agent.resources.* into the checkout: it must not be there
    assert not [f for f in venv_probe["meta_path"] if "editable" in f.lower()], venv_probe["meta_path"]
    assert not [p for p in venv_probe["sys_path"] if p and _inside(p, REPO)], venv_probe["sys_path"]
    shebang = wheel_env.cli.read_text(encoding="utf-8").splitlines()[0]
    assert shebang == f"#!{wheel_env.python}", shebang  # the console script runs the venv's interpreter


def test_wheel_lists_every_data_file(wheel_env: WheelEnv) -> None:
    """The package-data globs miss nothing: each data file of the checkout is in the wheel where pyproject maps it."""
    names = set(zipfile.ZipFile(wheel_env.wheel).namelist())
    expected: list[str] = []
    for folder, package in DATA_PACKAGES.items():
        root = REPO / folder
        tree = root / "demo_project" if folder == "samples" else root
        for path in tree.rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and not any(p.startswith(".") for p in rel.parts):
                expected.append("/".join([*package.split("."), *rel.parts]))
    assert len(expected) > 80
    assert not sorted(set(expected) - names)


def test_pyproject_lists_every_package() -> None:
    """pyproject.toml names the packages by hand (package-dir mappings rule out packages.find): none forgotten."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    code = {p for p in setuptools.find_namespace_packages(str(REPO), include=["acc_agent*"])
            if "__pycache__" not in p and any((REPO / p.replace(".", "/")).glob("*.py"))}
    assert set(config["packages"]) == code | set(DATA_PACKAGES.values())
    assert config["package-dir"] == {package: folder for folder, package in DATA_PACKAGES.items()}


def test_init_writes_the_packaged_template(wheel_env: WheelEnv) -> None:
    project = wheel_env.work / "init-project"
    res = wheel_env.run(wheel_env.cli, "init", project)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "wrote" in res.stdout
    written = (project / "mig.yaml").read_text(encoding="utf-8")
    template = (REPO / "templates" / "mig.yaml").read_text(encoding="utf-8")
    assert written.splitlines()[0] == template.splitlines()[0]
    # the untouched file renders documents from the packaged Jinja2 templates
    report = wheel_env.run(wheel_env.cli, "report", project / "mig.yaml", "--out", project / "docs", cwd=project)
    assert report.returncode == 0, report.stdout + report.stderr
    for name in ("Mig_Readme.md", "Compare.md", "Mig_report.md"):
        assert (project / "docs" / name).stat().st_size > 0, name


def test_demo_writes_the_three_deliverables(wheel_env: WheelEnv) -> None:
    res = wheel_env.run(wheel_env.cli, "demo", "--out", "demo-out")
    assert res.returncode == 0, res.stdout + res.stderr
    out = wheel_env.work / "demo-out"
    for name in ("Mig_Readme.md", "Compare.md", "Mig_report.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert text.startswith("#") and len(text) > 1000, name
    assert (out / "demo_project" / "mig.yaml").is_file()
    assert "Deliverables written to" in res.stdout
    check = wheel_env.run(wheel_env.cli, "report", "--check", "--out", "demo-out")
    assert check.returncode == 0 and "all checks passed" in check.stdout, check.stdout + check.stderr


def test_skills_install_copies_the_packaged_skills(wheel_env: WheelEnv) -> None:
    target = wheel_env.work / "agent-project"
    target.mkdir()
    res = wheel_env.run(wheel_env.cli, "skills", "install", "--target", target)
    assert res.returncode == 0, res.stdout + res.stderr
    skills = sorted(p.parent.name for p in (REPO / "skills").glob("*/SKILL.md"))
    assert len(skills) == 6
    for layout in (".claude/skills", ".agents/skills"):
        installed = target / layout
        assert sorted(p.name for p in installed.iterdir()) == skills
        for name in skills:
            for source in (REPO / "skills" / name).rglob("*"):
                if source.is_file():
                    copy = installed / name / source.relative_to(REPO / "skills" / name)
                    assert copy.read_bytes() == source.read_bytes(), copy
        assert not list(installed.rglob("__init__.py")) and not list(installed.rglob("__pycache__"))


def test_zip_import_extracts_the_data_once_and_cleans_up(wheel_env: WheelEnv) -> None:
    """Imported straight from the wheel (a zip), the data is copied out to real folders, removed at exit."""
    script = (f"import sys; sys.path.insert(0, {str(wheel_env.wheel)!r})\n"
              "import json, acc_agent\nfrom acc_agent import resources\n"
              "t, s, d = resources.templates_dir(), resources.skills_dir(), resources.demo_project_dir()\n"
              "assert resources.templates_dir() == t  # extracted once per process\n"
              "print(json.dumps({'acc_agent': acc_agent.__file__, 'templates': str(t), 'skills': str(s),"
              " 'samples': str(d), 'j2': len(list(t.glob('*/*.j2'))), 'skill_md': len(list(s.glob('*/SKILL.md'))),"
              " 'yaml': (d / 'mig.yaml').is_file()}))\n")
    res = wheel_env.run(wheel_env.python, "-c", script)
    assert res.returncode == 0, res.stdout + res.stderr
    seen = json.loads(res.stdout)
    assert seen["acc_agent"].startswith(str(wheel_env.wheel) + os.sep)
    assert seen["j2"] == len(list((REPO / "templates").glob("*/*.j2"))) > 0
    assert seen["skill_md"] == len(list((REPO / "skills").glob("*/SKILL.md"))) > 0 and seen["yaml"]
    for key in ("templates", "skills", "samples"):
        assert not _inside(seen[key], wheel_env.root) and not Path(seen[key]).exists(), seen[key]
