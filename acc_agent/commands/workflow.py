"""The workflow commands: ``init`` (write mig.yaml), ``report`` (render or --check), ``demo``.

Why commands and not tools: they talk to a person in the words a shell user types; the reusable
parts are the ``init_project`` and ``render_deliverables`` tools they call, which agents reach
through MCP without a shell.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from acc_agent.errors import AccAgentError


def _fail(err: AccAgentError) -> None:
    sys.stderr.write(f"error: {err.message}\n" + (f"hint: {err.hint}\n" if err.hint else ""))
    raise typer.Exit(2)


def _print_check(folder: Path, config: Path) -> int:
    from acc_agent.render.checks import check_folder, user_strings

    strings = None
    path = config / "mig.yaml" if config.is_dir() else config
    if path.is_file():  # with the project file, also verify its strings were printed escaped
        from acc_agent.models.project import load_project

        try:
            strings = user_strings(load_project(path).model_dump(mode="json"))
        except AccAgentError as err:
            _fail(err)
    problems, matrix = check_folder(folder, strings)
    docs = sorted({d for row in matrix for d in row.values})
    typer.echo("Document consistency matrix (" + str(folder) + "):")
    typer.echo("  fact".ljust(24) + "".join(d.ljust(14) for d in docs) + "agree  value")
    for row in matrix:
        cells = "".join(("—" if d not in row.values else ("missing" if row.values[d] is None else "stated"))
                        .ljust(14) for d in docs)
        shown = next((v for v in row.values.values() if v is not None), "")
        typer.echo(f"  {row.fact}".ljust(24) + cells + ("yes" if row.agree else "NO").ljust(7) + shown[:60])
    for p in problems:
        typer.echo(f"problem: {p}")
    typer.echo("all checks passed" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def _render(config: Path, out: Path | None, lang: str) -> int:
    from acc_agent.registry import call_tool

    args = {"config": str(config), "lang": lang}
    if out is not None:
        args["out"] = str(out)
    try:
        result = call_tool("render_deliverables", args)
    except AccAgentError as err:
        _fail(err)
    from acc_agent.tools.deliverables import _text

    typer.echo(_text(result))  # type: ignore[arg-type]
    return 1 if result.is_failure() else 0


def register(app: typer.Typer) -> None:
    @app.command("init", help="Write a commented mig.yaml (the migration project file) into a folder; the same "
                              "as `acc-agent init-project`, which also fills in dumps, logs and precision.")
    def init(
        folder: Annotated[Path, typer.Argument(help="Project folder.")] = Path("."),
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing mig.yaml.")] = False,
    ) -> None:
        from acc_agent.registry import call_tool

        try:
            result = call_tool("init_project", {"folder": str(folder), "force": force})
        except AccAgentError as err:
            _fail(err)
        path = getattr(result, "path", str(folder / "mig.yaml"))
        typer.echo(f"wrote {path}: fill in the artefacts, then run `acc-agent report {path}`")

    @app.command("report", help="Render Mig_Readme.md, Compare.md, Mig_report.md and Summary.md from mig.yaml; "
                                "with --check, verify the existing documents instead (markdown checks and the "
                                "document consistency matrix) without writing anything.")
    def report(
        config: Annotated[Path, typer.Argument(help="mig.yaml or its folder.")] = Path("mig.yaml"),
        out: Annotated[Path | None, typer.Option("--out", help="Folder of the documents (default: mig.yaml's folder).")] = None,
        lang: Annotated[str, typer.Option("--lang", help="en or zh.")] = "en",
        check: Annotated[bool, typer.Option("--check", help="Only check the documents already in --out.")] = False,
    ) -> None:
        if check:
            folder = out if out is not None else (config if config.is_dir() else config.parent)
            raise typer.Exit(_print_check(folder, config))
        raise typer.Exit(_render(config, out, lang))

    @app.command("demo", help="Run the whole workflow on the bundled demo migration project (a small network "
                              "trained in FP32 vs emulated FP16 with one real porting fault) and write the "
                              "deliverables and plots into --out.")
    def demo(
        out: Annotated[Path, typer.Option("--out", help="Folder for the documents.")] = Path("demo-out"),
        lang: Annotated[str, typer.Option("--lang", help="en or zh.")] = "en",
    ) -> None:
        import acc_agent

        samples = Path(acc_agent.__file__).resolve().parents[1] / "samples" / "demo_project"
        if not (samples / "mig.yaml").is_file():
            _fail(AccAgentError("missing_samples", f"demo project not found at {samples}",
                                hint="Install from a checkout (`pip install -e .`), or regenerate it with "
                                     "`python3 samples/make_samples.py`."))
        with tempfile.TemporaryDirectory(prefix="acc-agent-demo-") as tmp:
            project = Path(tmp) / "demo_project"
            shutil.copytree(samples, project)
            out.mkdir(parents=True, exist_ok=True)
            code = _render(project / "mig.yaml", out.resolve(), lang)
        typer.echo(f"\nDeliverables written to {out.resolve()}: Mig_Readme.md, Compare.md, Mig_report.md, Summary.md"
                   " (+ plots/). The demo's target carries one genuine fault; Compare §3.2 shows where it was found.")
        raise typer.Exit(code)
