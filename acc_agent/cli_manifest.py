"""A cached, plain-data copy of what the CLI needs to know about every tool, so that start-up
(``--help``, argument errors) imports neither pydantic nor any tool module.

Why a cache: the CLI's commands are generated from the tools' pydantic input models, and
importing pydantic plus the twenty tool modules costs 0.3-0.6 s on every call, more than the
rest of start-up together. The manifest holds, per tool, the names, types, help strings and
flag defaults that the models give (computed by :func:`acc_agent.cli.tool_entry` from the real
models, so it says exactly what they say) plus the module that registers the tool; the command
itself still runs through the real registry and input model.

It can never be stale: it is keyed by a fingerprint of every ``.py`` file of the package
(path, size, modification time), the package version and the Python version, checked on each
start (one ``stat`` per file, about a millisecond). A missing, stale or unreadable manifest is
rebuilt from the registry, and a cache folder that cannot be written only costs the speed-up.
``ACC_AGENT_CACHE_DIR`` chooses the folder (default ``$XDG_CACHE_HOME/acc-agent`` or
``~/.cache/acc-agent``); ``ACC_AGENT_NO_CLI_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TypedDict


class _FieldEntryRequired(TypedDict):
    name: str
    type: str  # the name of the scalar typer parses: bool, int, float or str
    required: bool
    help: str
    positional: bool


class FieldEntry(_FieldEntryRequired, total=False):
    """One argument or option of a tool's command."""

    default: bool  # a flag's default (flags only)


class ToolEntry(TypedDict):
    """What the CLI knows of one tool without importing it: one entry of the manifest."""

    name: str
    cli_name: str
    module: str
    description: str
    fields: list[FieldEntry]


CACHE_DIR_ENV = "ACC_AGENT_CACHE_DIR"
DISABLE_ENV = "ACC_AGENT_NO_CLI_CACHE"
#: Bumped when the manifest's own layout changes.
FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """Where the manifest lives (not created here)."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "acc-agent" if xdg else Path.home() / ".cache" / "acc-agent"


def manifest_path() -> Path:
    """One file per installed copy of the package: two checkouts or venvs never share a manifest."""
    tag = hashlib.sha1(str(_PACKAGE).encode()).hexdigest()[:12]
    return cache_dir() / f"cli-manifest-{tag}.json"


def fingerprint() -> str:
    """Hash of every ``.py`` under the package (relative path, size, mtime) and the versions.

    Any edit of a tool, model or help string changes an mtime, so the manifest is rebuilt."""
    from acc_agent import __version__

    h = hashlib.sha1(f"{FORMAT}|{__version__}|{sys.version_info[:3]}".encode())
    stack = [_PACKAGE]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == "__pycache__" or entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.name.endswith(".py"):
                st = entry.stat()
                h.update(f"{entry.path}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def load() -> list[ToolEntry] | None:
    """The tools' CLI entries if a manifest for exactly this code is cached, else None."""
    if os.environ.get(DISABLE_ENV):
        return None
    try:
        doc = json.loads(manifest_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("fingerprint") != fingerprint():
        return None
    tools = doc.get("tools")
    return tools if isinstance(tools, list) else None


def store(tools: list[ToolEntry]) -> None:
    """Write the manifest atomically (a concurrent reader sees the old file or the new one, whole)."""
    if os.environ.get(DISABLE_ENV):
        return
    path = manifest_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cli-manifest-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"fingerprint": fingerprint(), "tools": tools}, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only home only costs the faster start-up
