"""The statistics CSV prints numbers exactly as msprobe does (Python's repr), also on its fast paths.

msprobe users diff our CSV against theirs; a float printed with another exponent spelling
("1e-5" for "1e-05") would break that silently. ``float_reprs`` takes orjson's formatter where it
agrees with repr and repr elsewhere: checked here on values across the whole float64 range.
"""

from __future__ import annotations

import numpy as np
import pytest

from acc_agent.tools._compare_csv import _quoted, _quoted_all, float_reprs


def _edge_values() -> np.ndarray:
    rng = np.random.default_rng(7)
    spread = rng.standard_normal(50_000) * 10.0 ** rng.uniform(-310, 308, 50_000)
    f32 = rng.standard_normal(20_000).astype(np.float32).astype(np.float64)
    edges = np.array([1e-4, -1e-4, 9.999999999999999e-5, 1e16, 9.999999999999998e15, 1e15, 5e-324, -5e-324,
                      2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0, 100.0,
                      123456789.0, 0.1, 1 / 3, 1e21, 1e-7, 0.0001234, 65504.0, 3.0e38])
    return np.concatenate([spread[np.isfinite(spread) & (spread != 0)], f32[f32 != 0], edges])


def test_float_reprs_equal_python_repr_across_the_range() -> None:
    values = _edge_values()
    assert float_reprs(values) == [repr(v) for v in values.tolist()]


def test_float_reprs_without_orjson_is_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_orjson(name: str, *args: object, **kwargs: object) -> object:
        if name == "orjson":
            raise ImportError("no orjson")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_orjson)
    values = _edge_values()[:2000]
    assert float_reprs(values) == [repr(v) for v in values.tolist()]
    assert float_reprs(np.array([], dtype=np.float64)) == []


@pytest.mark.parametrize("texts", [
    ["Functional.linear.0.forward.input.0", "Tensor.add.3.forward.output.0"],
    ["a,b", "plain"],
    ['say "x"', "plain"],
    ["=cmd()", "plain"],
    ["line\nbreak", ""],
])
def test_bulk_quoting_equals_cell_by_cell(texts: list[str]) -> None:
    assert _quoted_all(texts) == [_quoted(t) for t in texts]
