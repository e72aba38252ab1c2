"""No tensor content crashes the diagnosis: Inf, NaN, empty, 0-d, integer, bool, unreadable files.

Each case is a flat dump (msprobe-style names, one .npy per tensor) of a three-call chain whose
middle call's output is replaced by the hostile content on the target side; the result must be a
valid answer (JSON, a category) and the hostile row is the one named where it is a divergence.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from acc_agent.cli import main

CHAIN = ("Functional.linear.0.forward", "Functional.gelu.0.forward", "Functional.linear.1.forward")


def _write(root: Path, calls: list[tuple[str, list[np.ndarray | bytes], list[np.ndarray | bytes]]]) -> Path:
    """An msprobe-layout tensor dump (dump.json in execution order + dump_tensor_data/*.npy)."""
    data_dir = root / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    data: dict[str, dict[str, list[dict[str, object]]]] = {}
    for key, ins, outs in calls:
        entry: dict[str, list[dict[str, object]]] = {"input_args": [], "output": []}
        for part, tensors in (("input", ins), ("output", outs)):
            for i, arr in enumerate(tensors):
                name = f"{key}.{part}.{i}.npy"
                if isinstance(arr, bytes):
                    (data_dir / name).write_bytes(arr)
                    leaf: dict[str, object] = {"type": "numpy.ndarray", "dtype": "float32", "shape": [4, 8]}
                else:
                    np.save(data_dir / name, arr)
                    leaf = {"type": "numpy.ndarray", "dtype": str(arr.dtype), "shape": list(arr.shape)}
                leaf["data_name"] = name
                entry["input_args" if part == "input" else "output"].append(leaf)
        data[key] = entry
    (root / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return root


def _chain(root: Path, middle: np.ndarray | bytes | None, flows: bool = False) -> Path:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w0 = (rng.standard_normal((8, 8)) / 3).astype(np.float32)
    h = x @ w0
    a = np.tanh(h)
    stored: np.ndarray | bytes = a if middle is None else middle
    passed = stored if flows and isinstance(stored, np.ndarray) else a
    y = passed @ w0
    return _write(root, [(CHAIN[0], [x, w0], [h]), (CHAIN[1], [h], [stored]), (CHAIN[2], [passed, w0], [y])])


def _inf() -> np.ndarray:
    a = np.tanh(np.random.default_rng(0).standard_normal((4, 8))).astype(np.float32)
    a[0, 0] = np.inf
    return a


HOSTILE: dict[str, np.ndarray | bytes] = {
    "inf": _inf(),
    "nan": np.full((4, 8), np.nan, np.float32),
    "empty": np.zeros((0, 8), np.float32),
    "zero_d": np.array(1.5, np.float32),
    "integer": np.arange(32, dtype=np.int64).reshape(4, 8),
    "bool": np.ones((4, 8), bool),
    "float16_overflow": np.full((4, 8), np.inf, np.float16),
    "truncated": b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }",
    "not_npy": b"hello, this is not a tensor",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_tensor_gives_an_answer(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    golden = _chain(tmp_path / "g", None)
    with np.errstate(over="ignore"):
        target = _chain(tmp_path / "t", HOSTILE[kind])
    with pytest.raises(SystemExit) as exc:
        main(["compare-dumps", str(golden), str(target), "--json", "--all-rows"])
    out = json.loads(capsys.readouterr().out)
    assert exc.value.code in (0, 1, 3), out
    assert out["diagnosis"]["category"] in ("input_mismatch", "precision_accumulation", "layer_mismatch",
                                            "operator_fault", "no_layer_fault")
    bad = f"{CHAIN[1]}.output.0"
    row = next(r for r in out["rows"] if r["name"] == bad)
    assert row["status"] in ("error", "warning", "skipped"), row
    if kind in ("inf", "nan", "float16_overflow"):
        # the next call received the golden data: a stored tensor that does not flow on
        assert out["first_divergence"]["name"] == bad, out["diagnosis"]


def test_inf_that_flows_on_is_an_overflow_at_its_first_call(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    golden = _chain(tmp_path / "g", None)
    with np.errstate(invalid="ignore", over="ignore"):
        target = _chain(tmp_path / "t", _inf(), flows=True)
    with pytest.raises(SystemExit):
        main(["compare-dumps", str(golden), str(target), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["diagnosis"]["category"] == "operator_fault", out["diagnosis"]
    fd = out["first_divergence"]
    assert fd["module"] == CHAIN[1] and fd["enters_through"] == "overflow", fd


def _stats_dump(root: Path, leaves: list[dict[str, object]]) -> Path:
    root.mkdir(parents=True)
    data = {f"Functional.op.{i}.forward": {"input_args": [], "output": [leaf]} for i, leaf in enumerate(leaves)}
    (root / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return root


def test_bulk_statistics_measure_equals_the_per_row_one(tmp_path: Path) -> None:
    """The diagnosis measures statistics rows in bulk (numpy); every figure equals the per-row reference."""
    from acc_agent.io.dumps import open_dump
    from acc_agent.io.pairing import pair_entries
    from acc_agent.models.compare import DumpRow
    from acc_agent.numerics.diagnosis.measure import measure_row, measure_rows

    def leaf(mx: object, mn: object, mean: object, norm: object, dtype: str = "torch.float32",
             md5: str | None = None) -> dict[str, object]:
        out: dict[str, object] = {"type": "torch.Tensor", "dtype": dtype, "shape": [4, 8], "Max": mx, "Min": mn,
                                  "Mean": mean, "Norm": norm}
        if md5:
            out["md5"] = md5
        return out

    gold = [leaf(1.0, -1.0, 0.1, 3.0), leaf(2.0, 0.0, 1.0, 6.0), leaf(0.0, 0.0, 0.0, 0.0),
            leaf(True, False, None, None, "torch.bool", "aa"), leaf(1.0, -1.0, 0.0, 2.0, md5="bb"),
            leaf(5.0, 1.0, 2.0, 9.0)]
    targ = [leaf(1.0, -1.0, 0.1, 3.0), leaf(2.1, 0.0, 1.05, 6.3), leaf(0.0, 0.0, 0.0, 1e-3),
            leaf(True, False, None, None, "torch.bool", "ab"), leaf(1.0, -1.0, 0.0, 2.0, md5="bc"),
            leaf("Infinity", 1.0, 2.0, "Infinity")]
    g = open_dump(_stats_dump(tmp_path / "g", gold))
    t = open_dump(_stats_dump(tmp_path / "t", targ))
    assert not isinstance(g, type(None)) and hasattr(g, "by_name") and hasattr(t, "by_name")
    rows = [DumpRow(name=p.target_name, golden_name=p.golden_name, golden_shape=[4, 8], target_shape=[4, 8],
                    status="skipped") for p in pair_entries(g, t).pairs]  # type: ignore[arg-type]
    bulk = measure_rows(rows, g, t, None, None)  # type: ignore[arg-type]
    one = [measure_row(r, g, t, None, None) for r in rows]  # type: ignore[arg-type]
    assert len(bulk) == len(one) == len(rows) == 6
    for b, o, r in zip(bulk, one, rows, strict=True):
        assert (b.err, b.measure, b.target_nonfinite, b.same_stats_other_bytes) == \
            (pytest.approx(o.err) if o.err is not None else None, o.measure, o.target_nonfinite,
             o.same_stats_other_bytes), r.name
    assert bulk[0].err == 0.0 and bulk[1].err == pytest.approx(0.05)
    assert bulk[3].err == float("inf")  # a bool mask whose bytes differ
    assert bulk[5].target_nonfinite and bulk[5].err == float("inf")


@pytest.mark.parametrize("folder", ["msprobe_tp_shard_swapped/golden/step0/rank1:msprobe_tp_shard_swapped/target/step0/rank1",
                                    "msprobe_group_norm/fp16_stats_sparse/golden:msprobe_group_norm/fp16_stats_sparse/target"])
def test_bulk_measure_of_rows_msprobe_calls_errors(folder: str) -> None:
    """Between two float types msprobe's rules make every statistics row an "error" (the dtype differs); the bulk
    measure takes them too, and gives what the per-row reference gives, field by field (real msprobe dumps)."""
    from acc_agent.io.dumps import open_dump
    from acc_agent.io.pairing import pair_entries
    from acc_agent.numerics.diagnosis.measure import measure_and_fingerprint, measure_row
    from acc_agent.tools._stat_rows import statistics_rows

    data = Path(__file__).parent / "data"
    golden, target = (data / part for part in folder.split(":"))
    g, t = open_dump(golden), open_dump(target)
    assert g is not None and t is not None
    rows = statistics_rows(g, t, pair_entries(g, t).pairs).rows  # type: ignore[arg-type]
    errors = [r for r in rows if r.status == "error"]
    assert len(errors) >= 0.8 * len(rows) >= 8, "a float-type change: msprobe's dtype rule flags (nearly) every row"
    bulk, prints = measure_and_fingerprint(rows, g, t, None, None)  # type: ignore[arg-type]
    one = [measure_row(r, g, t, None, None) for r in rows]  # type: ignore[arg-type]
    assert [repr(m) for m in bulk] == [repr(m) for m in one]
    assert sum(p is not None for p in prints) >= len(errors) // 2  # fingerprinted on the way, for the dataflow links
