"""How an argument's recorded statistics are put into words: only what the four numbers show.

A position counter (one value in every element) is stated as its two values, not as a "1x" scaling; a tensor
whose Max, Min and Mean all moved by one constant is an offset; a constant factor is stated with the digits that
show it. Found on a real msprobe dump of a KV-cache decode step whose rotary positions were one off (2007
against 2006), which read as "all 1x the golden's: every element scaled by a constant factor".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acc_agent.io.dumps import Dump, DumpEntry
from acc_agent.numerics.diagnosis.leaves import _describe_stats

NAME = "Tensor.__mul__.0.forward.input.0"


@dataclass
class _Measured:
    dtype: str = "float32"
    target_nonfinite: bool = False
    golden_nonfinite: bool = False
    same_stats_other_bytes: bool = False
    measure: str = "statistics"


@dataclass
class _Row:
    golden_name: str | None = None


@dataclass
class _Tensor:
    name: str = NAME
    row: _Row = field(default_factory=_Row)
    m: _Measured = field(default_factory=_Measured)


def _dump(stats: dict[str, float]) -> Dump:
    entry = DumpEntry(NAME, None, "Tensor.__mul__.0.forward", "input", "float32", [8], stats)
    return Dump(Path("dump.json"), "msprobe", [entry], None)


def _say(golden: tuple[float, ...], target: tuple[float, ...]) -> str | None:
    keys = ("Max", "Min", "Mean", "Norm")
    return _describe_stats(_Tensor(), _dump(dict(zip(keys, golden, strict=True))),  # type: ignore[arg-type]
                           _dump(dict(zip(keys, target, strict=True))))


def test_one_value_everywhere_is_stated_as_its_two_values() -> None:
    assert _say((2006.0, 2006.0, 2006.0, 2006.0), (2007.0, 2007.0, 2007.0, 2007.0)) == (
        "one value in every element: 2007 on the target, 2006 on the golden")


def test_positions_counted_from_another_start_are_an_offset() -> None:
    # arange(2000, 2008) against arange(2001, 2009): Max, Min and Mean all +1, the Norm moved by another amount
    golden = (2007.0, 2000.0, 2003.5, 5667.3)
    target = (2008.0, 2001.0, 2004.5, 5670.1)
    text = _say(golden, target)
    assert text is not None and text.startswith("Max, Min and Mean are all +1 from the golden's")


def test_a_small_constant_factor_shows_its_digits() -> None:
    text = _say((2.0, -1.0, 0.5, 4.0), (2.002, -1.001, 0.5005, 4.004))
    assert text is not None and text.startswith("Max, Min, Mean and Norm are all 1.001x the golden's")


@pytest.mark.parametrize(("golden", "target"), [
    ((1.0, -1.0, 0.0, 2.0), (1.05, -1.0, 0.01, 2.02)),  # 5 % on part of the elements: no single constant
    ((3.0, 1.0, 2.0, 5.0), (6.0, 2.0, 4.0, 10.0)),  # x2: a factor, not an offset
])
def test_no_offset_is_claimed_where_the_numbers_do_not_show_one(golden: tuple[float, ...],
                                                              target: tuple[float, ...]) -> None:
    text = _say(golden, target)
    assert text is None or "shifted by a constant" not in text
