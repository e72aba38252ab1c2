"""Regenerate every committed snapshot under tests/snapshots/, on purpose: ``python3 tests/update_snapshots.py``.

The snapshots are what agents and reviewers actually receive, kept as files so that a renamed field, a
reworded description or a changed report sentence shows up as a diff in review instead of passing CI
silently (tests/test_snapshots.py and tests/test_report_contract.py compare the live output with them):

- ``mcp/tools_list.json``: the ``tools/list`` answer of ``acc-agent mcp`` as the MCP SDK's own client
  sees it over stdio (the server started exactly as tests/test_mcp_server.py starts it);
- ``schemas/<format>.json``: ``acc-agent schema --format <format>`` for every format acc_agent.schemas
  offers (openai, openai-responses, anthropic, mcp);
- ``en/*.md`` and ``zh/*.md``: the rendered demo deliverables. They are rewritten by running their own
  test, tests/test_report_contract.py::test_demo_documents_match_their_snapshots, in its update mode
  (``ACC_AGENT_UPDATE_SNAPSHOTS=1``), so the files come from the very code path that checks them.

JSON snapshots are written pretty (indent 2), with sorted keys and real UTF-8, so a diff shows one
changed field per line; list order is kept, since the order of tools is part of what agents see.

Normalisation (see :func:`normalise`): strings that legitimately vary between machines or runs are
replaced by placeholders before writing or comparing. Today none of them occurs in the output; the
replacement is there so that a description that one day quotes such a value does not make the
snapshot machine-dependent. Replaced, most specific first:

- the results folder the server was given (``ACC_AGENT_RESULTS_DIR``) -> ``<results>``;
- the checkout's absolute path -> ``<repo>``; the interpreter (``sys.executable``) -> ``<python>``;
  the home folder -> ``<home>``. A path is replaced only as a whole path (not followed by a name
  character), and short system folders such as ``/tmp`` or ``/usr`` are not replaced: a description
  naming ``/usr/local/Ascend`` is content, the same on every machine;
- the acc-agent version (``acc_agent.__version__``, as a whole token) -> ``<version>``;
- today's date (UTC and local, ISO form) -> ``<today>``. Other dates are left alone: a fixed date in
  a description is content, not a property of the run;
- in the MCP answer, the SDK's own envelope fields (``SDK_ENVELOPE``: caching hints and result type,
  which follow the installed mcp version) are left out.

Everything else (names, descriptions, types, defaults, required lists, the order of tools) is compared
byte for byte.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SNAPSHOTS = TESTS / "snapshots"
if str(TESTS) not in sys.path:  # run as a script from anywhere, the test modules must import
    sys.path.insert(0, str(TESTS))

#: The schema formats exported; kept in step with acc_agent.schemas.FORMATS by test_snapshots.py.
SCHEMA_FORMATS: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "mcp")
MCP_TOOLS_LIST = "mcp/tools_list.json"
#: Result fields the MCP SDK itself fills on every answer (caching hints at their defaults, the result
#: type); they follow the installed SDK version (pyproject allows mcp>=2.3,<3), not our server, so the
#: snapshot keeps only what tools/list is about: ``tools`` (and ``nextCursor`` if it ever paginates).
SDK_ENVELOPE = frozenset({"cacheScope", "resultType", "ttlMs"})
#: The deliverable snapshots' own test, run in its update mode to rewrite en/ and zh/.
DELIVERABLES_TEST = "tests/test_report_contract.py::test_demo_documents_match_their_snapshots"
UPDATE_HINT = (
    "If the change is intended, run `python3 tests/update_snapshots.py`, then review the diff "
    "(`git diff tests/snapshots`) and commit it together with the change."
)


def schema_snapshot(fmt: str) -> str:
    return f"schemas/{fmt}.json"


def _replacements(results_dir: Path | None) -> list[tuple[re.Pattern[str], str]]:
    """What varies between machines or runs, as (pattern, placeholder), most specific first."""
    from acc_agent import __version__

    paths: list[tuple[str, str]] = []
    if results_dir is not None:
        paths.append((str(results_dir), "<results>"))
    paths += [(str(ROOT), "<repo>"), (sys.executable, "<python>"), (str(Path.home()), "<home>")]
    # Longest first, so a folder inside another (the repo under home) keeps its own name.
    paths = sorted({p: name for p, name in paths if len(p) > 1}.items(), key=lambda item: -len(item[0]))
    out = [(re.compile(re.escape(p) + r"(?![\w.-])"), name) for p, name in paths]
    out.append((re.compile(r"(?<![\w.])" + re.escape(__version__) + r"(?![\w.])"), "<version>"))
    today = {dt.datetime.now(dt.timezone.utc).date().isoformat(), dt.date.today().isoformat()}
    out += [(re.compile(re.escape(day)), "<today>") for day in sorted(today)]
    return out


def normalise(data: Any, results_dir: Path | None = None) -> Any:
    """``data`` with machine- and run-dependent strings (see the module docstring) replaced, keys included."""
    rules = _replacements(results_dir)

    def text(value: str) -> str:
        for pattern, placeholder in rules:
            value = pattern.sub(placeholder, value)
        return value

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return text(node)
        if isinstance(node, Mapping):
            return {text(str(k)): walk(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    return walk(data)


def dump_json(data: Any) -> str:
    """The snapshot text: one field per line, keys sorted, UTF-8 kept readable, newline at the end."""
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def mcp_tools_list() -> str:
    """``tools/list`` of ``acc-agent mcp``, through the SDK's stdio client (a real server process)."""
    import anyio
    from mcp import ClientSession, stdio_client
    from test_mcp_server import _server_params

    async def listed(results: Path) -> dict[str, Any]:
        async with stdio_client(_server_params(results)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            answer = await session.list_tools()
            dumped: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            return {k: v for k, v in dumped.items() if k not in SDK_ENVELOPE}

    with tempfile.TemporaryDirectory(prefix="acc-agent-snapshot-") as tmp:
        results = Path(tmp) / "results"
        return dump_json(normalise(anyio.run(listed, results), results))


def schema_export(fmt: str) -> str:
    """``acc-agent schema --format fmt``, run in-process through the CLI command users run."""
    from typer.testing import CliRunner

    from acc_agent.cli import build_app

    result = CliRunner().invoke(build_app(), ["schema", "--format", fmt], prog_name="acc-agent")
    if result.exit_code != 0:
        raise RuntimeError(f"acc-agent schema --format {fmt} failed ({result.exit_code}): {result.output}")
    return dump_json(normalise(json.loads(result.stdout)))


def json_snapshots() -> dict[str, Callable[[], str]]:
    """Every JSON snapshot (path under tests/snapshots/) with the function producing its live text."""
    makers: dict[str, Callable[[], str]] = {MCP_TOOLS_LIST: mcp_tools_list}
    for fmt in SCHEMA_FORMATS:
        makers[schema_snapshot(fmt)] = functools.partial(schema_export, fmt)
    return makers


def update_deliverables() -> None:
    """Rewrite en/ and zh/ by running their own snapshot test in its update mode."""
    env = dict(os.environ) | {"ACC_AGENT_UPDATE_SNAPSHOTS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", DELIVERABLES_TEST]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:])} failed:\n{proc.stdout}{proc.stderr}")


def main() -> int:
    """Write every snapshot; say which files changed so the reviewer knows what to look at."""
    changed = []
    for rel, make in json_snapshots().items():
        path = SNAPSHOTS / rel
        text = make()
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        if text != old:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(rel)
    print(f"wrote {len(json_snapshots())} JSON snapshots ({', '.join(changed) or 'none changed'})", flush=True)
    update_deliverables()
    print("wrote the en/zh deliverable snapshots")
    print("review with: git diff --stat tests/snapshots && git diff tests/snapshots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
