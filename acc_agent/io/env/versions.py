"""Versions of the Ascend stack (CANN toolkit, driver, firmware) and of the Python frameworks.

Version files are read under a caller-given root so that a recorded or copied tree can be checked
like a live one; paths that resolve outside that root (a symlink pointing elsewhere) are refused.
Package versions come from installed metadata (no import: importing torch costs seconds) or from a
recorded ``pip list`` / ``pip freeze``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ASCEND = "/usr/local/Ascend"
DRIVER_FILE = "usr/local/Ascend/driver/version.info"
FIRMWARE_FILE = "usr/local/Ascend/firmware/version.info"
# Toolkit homes, most specific first: ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME when set, then the
# classic `ascend-toolkit/latest` and the CANN 8.5+ `cann` layout.
TOOLKIT_HOMES = ("usr/local/Ascend/ascend-toolkit/latest", "usr/local/Ascend/cann")
SET_ENV_CANDIDATES = ("usr/local/Ascend/ascend-toolkit/set_env.sh", "usr/local/Ascend/cann/set_env.sh")
FRAMEWORK_PACKAGES = ("torch", "torch_npu", "mindspore", "torchvision", "numpy")


@dataclass(frozen=True)
class VersionFile:
    """A key=value version file that was found (or why it was not)."""

    version: str | None
    path: str
    fields: dict[str, str]
    problem: str | None = None


def under_root(root: Path, absolute: str) -> Path | None:
    """``root`` + ``absolute`` if that stays inside ``root`` after resolving symlinks, else None."""
    base = root.resolve()
    candidate = (base / absolute.lstrip("/")).resolve()
    try:
        candidate.relative_to(base)
    except ValueError:
        return None
    return candidate


def read_key_values(path: Path, max_bytes: int = 65536) -> dict[str, str]:
    """Parse ``key=value`` lines (the format of every Ascend *.info file)."""
    out: dict[str, str] = {}
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        text = fh.read(max_bytes)
    for line in text.splitlines():
        if "=" in line:
            key, _, value = line.strip().partition("=")
            if key and key not in out:
                out[key.strip()] = value.strip()
    return out


def _shown(root: Path, absolute: str) -> str:
    """How a path is named in messages: as on disk, i.e. with the --root prefix when there is one."""
    return str(root / absolute.lstrip("/"))


def read_version_file(root: Path, rel: str, key: str = "Version") -> VersionFile:
    display = "/" + rel.lstrip("/")
    shown = _shown(root, rel)
    path = under_root(root, rel)
    if path is None:
        return VersionFile(None, display, {}, f"{shown} resolves outside {root}; not followed")
    if not path.is_file():
        return VersionFile(None, display, {}, f"{shown} not found")
    try:
        fields = read_key_values(path)
    except OSError as exc:
        return VersionFile(None, display, {}, f"{shown} unreadable: {exc.strerror}")
    version = fields.get(key) or fields.get(key.lower())
    if not version:
        return VersionFile(None, display, fields, f"{shown} has no {key}= line")
    return VersionFile(version, display, fields)


def find_toolkit(root: Path, env: dict[str, str]) -> VersionFile:
    """CANN toolkit version from ``ascend_toolkit_install.info`` (or ``version.cfg``) under the toolkit home."""
    homes = [env[k] for k in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME") if env.get(k)]
    homes += ["/" + h for h in TOOLKIT_HOMES]
    tried: list[str] = []
    for home in dict.fromkeys(homes):
        base = under_root(root, home)
        if base is None or not base.is_dir():
            tried.append(home)
            continue
        candidates = sorted(base.glob("*-linux/ascend_toolkit_install.info")) + [base / "ascend_toolkit_install.info"]
        root_r = root.resolve()
        for cand in candidates:
            if not cand.is_file() or not cand.resolve().is_relative_to(root_r):
                continue
            fields = read_key_values(cand)
            if fields.get("version"):
                return VersionFile(fields["version"], "/" + str(cand.relative_to(root_r)), fields)
        cfg = base / "version.cfg"
        if cfg.is_file():
            text = cfg.read_text(encoding="utf-8", errors="replace")[:65536]
            m = re.search(r"^toolkit_running_version=\[[^\]:]*:([^\]]+)\]", text, re.M) or re.search(
                r"^\w+_running_version=\[[^\]:]*:([^\]]+)\]", text, re.M
            )
            if m:
                return VersionFile(m.group(1), home.rstrip("/") + "/version.cfg", {})
        tried.append(home)
    places = ", ".join(_shown(root, t) for t in tried)
    return VersionFile(None, ", ".join(tried), {}, "no ascend_toolkit_install.info or version.cfg under " + places)


def find_set_env(root: Path) -> str | None:
    for rel in SET_ENV_CANDIDATES:
        path = under_root(root, rel)
        if path is not None and path.is_file():
            return "/" + rel
    return None


_PIP_LINE = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(?:==|\s)\s*([0-9][^\s;]*)")


def parse_pip_list(text: str) -> dict[str, str]:
    """Package -> version from ``pip list`` (columns) or ``pip freeze`` (``name==ver``) text."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[pip3] ") or line.startswith("[conda] "):
            line = line.split(" ", 1)[1].strip()  # vLLM's collect_env.py prefix
        m = _PIP_LINE.match(line)
        if m:
            out.setdefault(canonical(m.group(1)), m.group(2))
    return out


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions(names: tuple[str, ...] = FRAMEWORK_PACKAGES) -> dict[str, str | None]:
    """Versions from this interpreter's installed metadata; None when not installed."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in names:
        version: str | None = None
        for dist in (name, name.replace("_", "-")):
            try:
                version = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        out[name] = version
    return out
