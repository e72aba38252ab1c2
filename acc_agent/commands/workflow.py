"""The workflow commands: ``init`` (write mig.yaml), ``report`` (render, or ``--check``), ``demo``.

Why commands and not tools: they talk to a person in the words a shell user types; the reusable
parts are the ``init_project`` and ``render_deliverables`` tools they call, which agents reach
through MCP without a shell. ``report`` is the one command that writes the documents; the
generated ``render-deliverables`` command is the same tool, kept for scripts written against it.

Exit codes follow the tool commands: 0 written (complete or with gaps that say N/A and why) or
every check passed, 1 a check failed, 2 bad input or usage (a bad --lang, a project file that does
not load, an --out folder holding no documents to check).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from acc_agent.errors import AccAgentError


def _fail(err: AccAgentError) -> None:
    sys.stderr.write(f"error: {err.message}\n" + (f"hint: {err.hint}\n" if err.hint else ""))
    raise typer.Exit(2)


def _find_config(folder: Path, config: Path | None) -> Path | None:
    """The project file to re-compute from: the one given, else the one the documents recorded."""
    if config is not None:
        path = config / "mig.yaml" if config.is_dir() else config
        if not path.is_file():
            _fail(AccAgentError("missing_project", f"project file not found: {path}",
                                hint="Pass mig.yaml (or its folder), or leave it out to use the one the documents name."))
        return path
    from acc_agent.render.deliverables import DOCUMENTS, read_meta

    for name in DOCUMENTS:
        doc = folder / f"{name}.md"
        if doc.is_file():
            recorded = read_meta(doc.read_text(encoding="utf-8")).get("config")
            if recorded:
                path = Path(recorded) if Path(recorded).is_absolute() else folder / recorded
                return path if path.is_file() else None
    default = Path("mig.yaml")
    return default if default.is_file() else None


def _check_lang(lang: str) -> None:
    """Refuse a language before anything is copied or run, naming the command the user typed."""
    if lang not in ("en", "zh"):
        _fail(AccAgentError("invalid_input", f"--lang {lang!r}: the documents are written in en or zh",
                            hint="Pass --lang en or --lang zh."))


def _print_check(folder: Path, config: Path | None, recompute: bool) -> int:
    from acc_agent.render.checks import check_folder, user_strings
    from acc_agent.render.deliverables import DOCUMENTS

    if not any((folder / f"{name}.md").is_file() for name in DOCUMENTS):
        # nothing to check is a wrong --out (bad input), not documents that failed their checks
        _fail(AccAgentError("missing_documents", f"no acc-agent documents in {folder} "
                            f"({', '.join(f'{n}.md' for n in DOCUMENTS)})",
                            hint="Pass --out with the folder `acc-agent report` wrote, or run `acc-agent report` first."))
    strings = None
    path = _find_config(folder, config)
    if path is not None:  # with the project file, also verify its strings were printed escaped
        from acc_agent.io.project_file import load_project

        try:
            strings = user_strings(load_project(path).model_dump(mode="json"))
        except AccAgentError as err:
            _fail(err)
    problems, matrix = check_folder(folder, strings)
    docs = sorted({d for row in matrix for d in row.values})
    typer.echo("Document consistency matrix (" + str(folder) + "):")
    typer.echo("  fact".ljust(26) + "".join(d.ljust(14) for d in docs) + "agree  value")
    for row in matrix:
        cells = "".join(("—" if d not in row.values else ("missing" if row.values[d] is None else "stated"))
                        .ljust(14) for d in docs)
        shown = next((v for v in row.values.values() if v is not None), "")
        typer.echo(f"  {row.fact}".ljust(26) + cells + ("yes" if row.agree else "NO").ljust(7) + shown[:60])
    if recompute and path is not None:
        from acc_agent.app.check import recompute as recompute_docs

        try:
            found = recompute_docs(folder, path)
        except AccAgentError as err:
            _fail(err)
        notes = [p for p in found if p.check == "not_recomputable"]
        if notes:  # documents of an older acc-agent: the footers were checked, the lines cannot be
            typer.echo(f"Not re-computed: {notes[0].message}.")
        else:
            typer.echo(f"Re-computed from {path}: every generated line compared with what the inputs give.")
        problems += [p for p in found if p.check != "not_recomputable"]
    elif recompute:
        typer.echo("Not re-computed: no project file found (pass mig.yaml as CONFIG); the sha256 footers were checked.")
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
    from acc_agent.app.deliverables import render_text

    typer.echo(render_text(result))  # type: ignore[arg-type]
    return 1 if result.is_failure() else 0


def register(app: typer.Typer) -> None:
    @app.command("init", help="Write a commented mig.yaml (the migration project file) into a folder; the same "
                              "as `acc-agent init-project`, which also fills in dumps, logs and precision.",
                 short_help="Write a commented mig.yaml into a folder.")
    def init(
        folder: Annotated[Path, typer.Argument(help="Project folder.", metavar="FOLDER")] = Path("."),
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing mig.yaml.")] = False,
    ) -> None:
        from acc_agent.registry import call_tool

        try:
            result = call_tool("init_project", {"folder": str(folder), "force": force})
        except AccAgentError as err:
            _fail(err)
        path = getattr(result, "path", str(folder / "mig.yaml"))
        typer.echo(f"wrote {path}: fill in the artefacts, then run `acc-agent report {path}`")

    @app.command("report", help="Render Mig_Readme.md, Compare.md, Mig_report.md and Summary.md from mig.yaml into "
                                "--out (default: mig.yaml's folder). With --check, write nothing and verify the "
                                "documents in --out instead: markdown checks, the document consistency matrix, the "
                                "sha256 footers (a hand edit outside the kept blocks fails, naming file and line), "
                                "placeholders left in a document marked complete, and a re-computation from the "
                                "inputs that names every line that no longer follows from them.",
                 short_help="Write the deliverables from mig.yaml, or --check them.")
    def report(
        config: Annotated[Path | None, typer.Argument(
            help="mig.yaml or its folder (default: ./mig.yaml; with --check, the file the documents name).",
            metavar="CONFIG", show_default=False)] = None,
        out: Annotated[Path | None, typer.Option("--out", help="Folder of the documents (default: mig.yaml's folder).")] = None,
        lang: Annotated[str, typer.Option("--lang", help="en or zh.")] = "en",
        check: Annotated[bool, typer.Option("--check", help="Only check the documents already in --out.")] = False,
        recompute: Annotated[bool, typer.Option("--recompute/--no-recompute",
                                                help="With --check: also re-compute the documents from the inputs "
                                                     "(runs the tools again).")] = True,
    ) -> None:
        _check_lang(lang)
        if check:
            base = config if config is not None and config.is_dir() else (config.parent if config is not None else Path("."))
            folder = out if out is not None else base
            raise typer.Exit(_print_check(folder, config, recompute))
        raise typer.Exit(_render(config if config is not None else Path("mig.yaml"), out, lang))

    @app.command("demo", help="Run the whole workflow on the bundled demo migration project (a small network "
                              "trained in FP32 vs emulated FP16 with one real porting fault): copies the project "
                              "into --out/demo_project and writes the deliverables and plots into --out.",
                 short_help="Run the workflow on the bundled demo project.")
    def demo(
        out: Annotated[Path, typer.Option("--out", help="Folder for the documents.")] = Path("demo-out"),
        lang: Annotated[str, typer.Option("--lang", help="en or zh.")] = "en",
    ) -> None:
        from acc_agent.resources import demo_project_dir

        _check_lang(lang)
        try:
            samples = demo_project_dir()
        except AccAgentError as err:
            _fail(err)
        out.mkdir(parents=True, exist_ok=True)
        project = out / "demo_project"
        # the demo works on its own copy, kept beside the documents so `report --check` can re-compute them
        shutil.rmtree(project, ignore_errors=True)
        shutil.copytree(samples, project)
        code = _render(project / "mig.yaml", out.resolve(), lang)
        typer.echo(f"\nDeliverables written to {out.resolve()}: Mig_Readme.md, Compare.md, Mig_report.md, Summary.md"
                   f" (+ plots/), from the project copied to {project.resolve()}. The demo's target carries one "
                   "genuine fault; Compare §3.2 shows where it was found. Check them with "
                   f"`acc-agent report --check --out {out}`.")
        raise typer.Exit(code)
