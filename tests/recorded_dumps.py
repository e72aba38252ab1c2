"""compare_dumps on a checked-in pair of real msprobe dumps (``tests/data/<folder>/golden`` and ``target``), and the
English words a result's sentences keep in Chinese: shared by the diagnosis tests on recorded fixtures."""

from __future__ import annotations

from pathlib import Path

from acc_agent.models.compare import CompareDumpsOutput
from acc_agent.registry import call_tool
from acc_agent.render.tooltext import english_words, to_zh


def compare_recorded(folder: Path, target: str = "target", *, all_rows: bool = False) -> CompareDumpsOutput:
    """``folder/golden`` against ``folder/<target>`` in this process; the result always carries a diagnosis.
    ``all_rows``: every row inline, not only the worst."""
    out = call_tool("compare_dumps", {"golden": str(folder / "golden"), "target": str(folder / target), "workers": 1,
                                      "all_rows": all_rows})
    assert isinstance(out, CompareDumpsOutput) and out.diagnosis is not None
    return out


def untranslated(texts: list[str]) -> list[list[str]]:
    """For each sentence whose Chinese form keeps English words, those words (empty: every sentence translated)."""
    return [words for words in (english_words(to_zh(t)) for t in texts) if words]
