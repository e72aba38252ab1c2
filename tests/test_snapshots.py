"""What agents receive, compared with committed snapshots: a changed tool name, field or description fails here.

The other contract tests compare the code with itself (the MCP list with the registry, the
openai-responses schema with the openai one), so a renamed field passes them. These compare the live
``tools/list`` of ``acc-agent mcp`` and every ``acc-agent schema --format`` export with the files under
tests/snapshots/, which tests/update_snapshots.py writes on purpose (see its docstring for what is
normalised). The en/zh deliverable snapshots in the same folder are checked by
tests/test_report_contract.py::test_demo_documents_match_their_snapshots.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from update_snapshots import (  # tests/ is on sys.path under pytest
    MCP_TOOLS_LIST,
    SCHEMA_FORMATS,
    SNAPSHOTS,
    UPDATE_HINT,
    json_snapshots,
    normalise,
    schema_snapshot,
)

from acc_agent import __version__
from acc_agent.render.deliverables import DOCUMENTS
from acc_agent.schemas import FORMATS

#: Most diff lines shown on a mismatch: enough to see what changed, short enough to read in CI.
DIFF_LINES = 40


def _short_diff(want: str, got: str, rel: str) -> str:
    """A unified diff of the snapshot against the live text, cut to :data:`DIFF_LINES` lines."""
    lines = list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                      f"snapshots/{rel}", f"live {rel}", n=2))
    shown = "".join(lines[:DIFF_LINES])
    if len(lines) > DIFF_LINES:
        shown += f"... ({len(lines) - DIFF_LINES} more diff lines)\n"
    return shown


def test_every_schema_format_has_a_snapshot() -> None:
    """A format added to acc_agent.schemas must get its own snapshot, or its output goes unchecked."""
    assert set(SCHEMA_FORMATS) == set(FORMATS), f"snapshot formats {SCHEMA_FORMATS} != schemas.FORMATS {FORMATS}"


def test_the_update_script_owns_every_snapshot_file() -> None:
    """No stale file: everything under tests/snapshots/ is one the update script rewrites."""
    expected = set(json_snapshots()) | {f"{lang}/{doc}.md" for lang in ("en", "zh") for doc in DOCUMENTS}
    present = {p.relative_to(SNAPSHOTS).as_posix() for p in SNAPSHOTS.rglob("*") if p.is_file()}
    assert not present - expected, (
        f"not written by tests/update_snapshots.py, so never checked: {sorted(present - expected)}. Delete "
        "them, or teach the update script and a test to produce and compare them."
    )
    assert not expected - present, f"missing: {sorted(expected - present)}. {UPDATE_HINT}"


@pytest.mark.parametrize("rel", [MCP_TOOLS_LIST, *(schema_snapshot(f) for f in SCHEMA_FORMATS)])
def test_live_output_matches_its_snapshot(rel: str) -> None:
    got = json_snapshots()[rel]()
    path = SNAPSHOTS / rel
    if not path.is_file():
        pytest.fail(f"no snapshot tests/snapshots/{rel}. {UPDATE_HINT}", pytrace=False)
    want = path.read_text(encoding="utf-8")
    if got != want:
        pytest.fail(f"tests/snapshots/{rel} differs from the live output:\n{_short_diff(want, got, rel)}\n"
                    f"{UPDATE_HINT}", pytrace=False)


def test_mcp_snapshot_is_what_schema_mcp_exports() -> None:
    """The committed client view and the ``schema --format mcp`` export agree (one source, two routes)."""
    client = json.loads((SNAPSHOTS / MCP_TOOLS_LIST).read_text(encoding="utf-8"))
    export = json.loads((SNAPSHOTS / schema_snapshot("mcp")).read_text(encoding="utf-8"))
    assert client["tools"] == export


def test_normalisation_blanks_only_what_varies(tmp_path: Path) -> None:
    """Machine paths, the version and today's date become placeholders; fixed content stays as written."""
    import datetime as dt

    repo = str(SNAPSHOTS.parents[1])
    today = dt.date.today().isoformat()
    data = {
        "a": f"see {repo}/samples and {tmp_path}/out.json",
        "b": f"acc-agent {__version__} on {today}",
        "c": "/usr/local/Ascend/driver/version.info, 2026-01-01, 10.1.0, 0.10",
        f"{repo}/key": [f"{repo}-other"],
    }
    assert normalise(data, tmp_path) == {
        "a": "see <repo>/samples and <results>/out.json",
        "b": "acc-agent <version> on <today>",
        "c": "/usr/local/Ascend/driver/version.info, 2026-01-01, 10.1.0, 0.10",
        "<repo>/key": [f"{repo}-other"],
    }
