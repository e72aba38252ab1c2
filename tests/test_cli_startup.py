"""The CLI's cached manifest: commands built from it help, parse and run exactly like commands built
from the input models, and ``--help`` with a manifest imports no heavy module. (Start-up time
itself is measured in bench/bench_startup.py, not asserted here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from acc_agent import cli, cli_manifest

HEAVY = ("pydantic", "numpy", "jinja2", "acc_agent.registry", "acc_agent.tools", "acc_agent.models")


def _json_round_trip(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(json.dumps(entries))
    return loaded


@pytest.fixture(scope="module")
def apps() -> tuple[typer.Typer, typer.Typer]:
    """(app from the live registry, app from a manifest that went through JSON as on disk)."""
    return cli.build_app(), cli.build_app(_json_round_trip(cli.tool_entries()))


def _invoke(app: typer.Typer, args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, prog_name="acc-agent")
    return result.exit_code, result.output


def test_help_of_every_command_is_identical(apps: tuple[typer.Typer, typer.Typer]) -> None:
    live, cached = apps
    assert _invoke(live, ["--help"]) == _invoke(cached, ["--help"])
    names = [e["cli_name"] for e in cli.tool_entries()]
    assert "compare-dumps" in names
    for name in names:
        assert _invoke(live, [name, "--help"]) == _invoke(cached, [name, "--help"]), name


@pytest.mark.parametrize("args", [
    ["compare-dumps"],
    ["compare-dumps", "a", "b", "--bogus"],
    ["compare-dumps", "a", "b", "--top", "many"],
    ["compare-tensors", "a"],
    ["no-such-command"],
    ["judge-short-run", "--window"],
])
def test_argument_errors_are_identical(apps: tuple[typer.Typer, typer.Typer], args: list[str]) -> None:
    live, cached = apps
    code, text = _invoke(live, args)
    assert code == 2
    assert (code, text) == _invoke(cached, args)


def test_a_command_from_the_manifest_runs_like_the_live_one(apps: tuple[typer.Typer, typer.Typer],
                                                            tmp_path: Path) -> None:
    live, cached = apps
    np.save(tmp_path / "g.npy", np.linspace(-1, 1, 64, dtype=np.float32))
    np.save(tmp_path / "t.npy", np.linspace(-1, 1, 64, dtype=np.float32).astype(np.float16))
    args = ["compare-tensors", str(tmp_path / "g.npy"), str(tmp_path / "t.npy"), "--precision", "fp16", "--json"]
    first, second = _invoke(live, args), _invoke(cached, args)
    assert first == second and first[0] == 0
    assert json.loads(first[1])["verdict"] == "pass"


def test_manifest_is_keyed_by_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cli_manifest.CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(cli_manifest.DISABLE_ENV, raising=False)
    assert cli_manifest.load() is None
    cli_manifest.store([{"name": "x"}])
    assert cli_manifest.load() == [{"name": "x"}]
    doc = json.loads(cli_manifest.manifest_path().read_text())
    doc["fingerprint"] = "edited-since"
    cli_manifest.manifest_path().write_text(json.dumps(doc))
    assert cli_manifest.load() is None  # stale: rebuilt from the registry
    cli_manifest.manifest_path().write_text("{not json")
    assert cli_manifest.load() is None
    monkeypatch.setenv(cli_manifest.DISABLE_ENV, "1")
    cli_manifest.store([{"name": "y"}])
    assert cli_manifest.load() is None


def test_unwritable_cache_only_costs_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(cli_manifest.CACHE_DIR_ENV, str(blocker / "sub"))  # a folder that cannot be made
    cli_manifest.store([{"name": "x"}])
    assert cli_manifest.load() is None


_PROBE = """
import sys
from acc_agent.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "numpy", "jinja2")
               or m.startswith(("acc_agent.registry", "acc_agent.tools", "acc_agent.models")))
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
print("CODE=" + str(code), file=sys.stderr)
"""


def _probe(args: list[str], cache: Path) -> tuple[str, str, str]:
    env = {**os.environ, cli_manifest.CACHE_DIR_ENV: str(cache)}
    env.pop(cli_manifest.DISABLE_ENV, None)
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, timeout=120)
    lines = dict(line.split("=", 1) for line in proc.stderr.splitlines() if line.startswith(("HEAVY=", "CODE=")))
    return proc.stdout, lines.get("HEAVY", "?"), lines.get("CODE", "?")


def test_help_and_usage_errors_import_nothing_heavy_once_the_manifest_exists(tmp_path: Path) -> None:
    first_out, first_heavy, _ = _probe(["--help"], tmp_path)  # builds and stores the manifest
    assert "pydantic" in first_heavy and list(tmp_path.glob("cli-manifest-*.json"))
    out, heavy, code = _probe(["--help"], tmp_path)
    assert out == first_out and heavy == "" and code in ("0", "None")
    _, heavy, code = _probe(["compare-dumps", "--bogus"], tmp_path)
    assert heavy == "" and code == "2"
    _, heavy, code = _probe(["compare-dumps", "--help"], tmp_path)
    assert heavy == "" and code in ("0", "None")


_VARIANT = """
import contextlib, io, json, sys
import typer
from acc_agent import cli
if sys.argv[1] == "eager":  # the CLI as it was: every command converted up front, typer's own coercion
    cli._defer_typer_coercion = lambda: None
    cli.main_command = lambda: typer.main.get_command(cli.build_app())
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append([argv, code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def test_lazy_commands_and_deferred_coercion_change_no_output(tmp_path: Path) -> None:
    """The same command lines through ``main`` as it runs (manifest, commands converted when used,
    coercion deferred) and through an eager app from the registry: same exit codes, stdout, stderr."""
    np.save(tmp_path / "g.npy", np.linspace(-1, 1, 64, dtype=np.float32))
    np.save(tmp_path / "t.npy", np.linspace(-1, 1, 64, dtype=np.float32).astype(np.float16))
    g, t = str(tmp_path / "g.npy"), str(tmp_path / "t.npy")
    lines = [["--help"], ["compare-dumps", "--help"], ["compare-dumps"], ["compare-dumps", "a"],
             ["compare-dumps", "a", "b", "--bogus"], ["compare-dumps", "a", "b", "--top", "many"],
             ["compare-dumps", "a", "b", "--top", "0", "--json"], ["compare-tensors", g, t, "--rtol", "x"],
             ["compare-tensors", g, t, "--rtol", "1e-2", "--precision", "fp16", "--json"],
             ["compare-tensors", g, t, "--precision", "fp64"], ["judge-short-run", "--window"], ["no-such"],
             ["compare-dumps", "a", "b", "--json"], ["--version"], ["schema", "--format", "nope"],
             ["compare-dumps", "--bogus", "--json"], []]
    lines += [[entry["cli_name"], "--help"] for entry in cli.tool_entries()]
    env = {**os.environ, cli_manifest.CACHE_DIR_ENV: str(tmp_path / "cache")}
    got = {}
    for variant in ("eager", "lazy"):
        proc = subprocess.run([sys.executable, "-c", _VARIANT, variant, json.dumps(lines)], capture_output=True,
                              text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got[variant] = json.loads(proc.stdout)
    assert got["eager"] == got["lazy"]
    assert [r[1] for r in got["eager"]][:3] == [0, 0, 2]
