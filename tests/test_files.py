"""Nothing the engineer wrote is lost: kept blocks, backups of hand edits, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acc_agent.render import files
from acc_agent.render.files import hand_edited, write_document

DOC = ("# Title\n\nGenerated text v{v}.\n\n<!-- acc-agent:keep notes -->\ndefault notes\n"
       "<!-- acc-agent:end notes -->\n\nMore generated text.\n")


def test_kept_block_survives_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "Compare.md"
    write_document(path, DOC.format(v=1))
    human = "My notes | with a pipe,\r\ntrailing spaces   \n\n  and *markdown* ✓"
    text = path.read_text(encoding="utf-8").replace("default notes", human)
    path.write_bytes(text.encode("utf-8"))
    report = write_document(path, DOC.format(v=2))
    new = path.read_bytes().decode("utf-8")
    assert human in new and "Generated text v2." in new
    assert report.kept_blocks == ["notes"] and report.backup is None  # edit was inside the block only


def test_edit_outside_blocks_is_backed_up(tmp_path: Path) -> None:
    path = tmp_path / "Mig_report.md"
    write_document(path, DOC.format(v=1))
    edited = path.read_text(encoding="utf-8").replace("More generated text.", "A reviewer changed this.")
    path.write_text(edited, encoding="utf-8")
    assert hand_edited(edited)
    report = write_document(path, DOC.format(v=2))
    assert report.backup is not None and report.backup.read_text(encoding="utf-8") == edited
    assert "A reviewer changed this." not in path.read_text(encoding="utf-8")
    assert not hand_edited(path.read_text(encoding="utf-8"))


def test_unchanged_document_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "Summary.md"
    write_document(path, DOC.format(v=1))
    assert write_document(path, DOC.format(v=1)).written is False


def test_interrupted_write_leaves_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "Mig_Readme.md"
    write_document(path, DOC.format(v=1))
    before = path.read_bytes()

    real_fdopen = os.fdopen

    class Boom:
        """A file object that dies half-way through the write, like a full disk or a kill."""

        def __init__(self, fh: object) -> None:
            self.fh = fh

        def __enter__(self) -> Boom:
            return self

        def __exit__(self, *a: object) -> None:
            self.fh.close()  # type: ignore[attr-defined]

        def write(self, text: str) -> None:
            self.fh.write(text[: len(text) // 2])  # type: ignore[attr-defined]
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: Boom(real_fdopen(fd, *a, **k)))
    with pytest.raises(OSError):
        write_document(path, DOC.format(v=2))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["Mig_Readme.md"]  # no temp file left behind


def test_written_documents_get_ordinary_permissions(tmp_path: Path) -> None:
    """mkstemp makes 0600 files; a report must be readable like any file open() would create."""
    old_mask = os.umask(0o022)
    try:
        target = tmp_path / "Compare.md"
        files.atomic_write(target, "# Compare\n")
        assert target.stat().st_mode & 0o777 == 0o644
        os.chmod(target, 0o640)
        files.atomic_write(target, "# Compare v2\n")
        assert target.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old_mask)
