"""Property-based tests of the training-log readers, through the tools that read logs.

Logs are generated in the formats the readers know (Megatron, JSON lines, CSV, HF Trainer dicts,
MindSpore, MMEngine, timm, trainer_state.json) with NaN/Inf/huge/negative values and steps, and
damaged: binary bytes, NUL bytes, invalid UTF-8, a BOM, CRLF or lone CR line ends, no final
newline, garbage lines between records. A 100 MB single line is read in a child process whose
peak memory is measured. The rule (see fuzzing.py): a result or an AccAgentError with a fix.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st

from acc_agent.errors import AccAgentError
from acc_agent.registry import all_tools

REPO = Path(__file__).resolve().parents[1]
_VALUES = st.one_of(st.floats(-10, 10), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 1e-320]),
                    st.integers(-(2**70), 2**70))
_STEPS = st.one_of(st.integers(0, 300), st.integers(-5, -1), st.sampled_from([2**63, 10**30]))


def _num(v: float | int) -> str:
    return repr(v) if isinstance(v, int) else (f"{v:.6E}" if math.isfinite(v) else str(v))


@st.composite
def log_lines(draw: st.DrawFn) -> list[str]:
    """Lines of one format, with odd values, plus the odd garbage line."""
    fmt = draw(st.sampled_from(["megatron", "jsonl", "csv", "hf", "mindspore", "mmengine", "timm", "plain"]))
    lines: list[str] = []
    if fmt == "csv":
        lines.append(draw(st.sampled_from(["step,loss,lr", "epoch,train_loss,eval_loss", "step,loss,note"])))
    for _ in range(draw(st.integers(0, 30))):
        step, v, w = draw(_STEPS), draw(_VALUES), draw(_VALUES)
        lines.append({
            "megatron": f" iteration {step:>8}/ {draw(_STEPS):>7} | consumed samples: {step * 32} | elapsed time per "
                        f"iteration (ms): {_num(w)} | learning rate: {_num(v)} | global batch size: {draw(_STEPS)} | "
                        f"lm loss: {_num(v)} | loss scale: 65536.0 | grad norm: {_num(w)} |",
            "jsonl": json.dumps({"step": step if draw(st.booleans()) else v, "loss": v, "lr": w, "val_loss": w}),
            "csv": f"{step},{_num(v)},{_num(w)}",
            "hf": repr({"loss": v, "grad_norm": w, "learning_rate": 1e-5, "epoch": draw(_VALUES)}),
            "mindspore": f"epoch: {draw(st.integers(-1, 5))} step: {step}, loss is {_num(v)}",
            "mmengine": f"2024/06/19 01:21:10 - mmengine - INFO - Epoch(train)  [{draw(st.integers(0, 3))}][{step:>4}/150]  "
                        f"lr: {_num(w)}  time: 0.25  loss: {_num(v)}",
            "timm": f"Train: {draw(st.integers(0, 3))} [{step:>4}/100 ( 50%)]  Loss: {_num(v)} (6.91)  Time: 0.512s,  "
                    f"500.00/s  LR: {_num(w)}",
            "plain": f"step {step} loss {_num(v)}",
        }[fmt])
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.text(max_size=40)))
    return lines


@st.composite
def log_files(draw: st.DrawFn) -> tuple[bytes, str]:
    """(bytes, suffix) of a log file, text or JSON document, damaged or not."""
    kind = draw(st.sampled_from(["text"] * 6 + ["trainer_state", "binary"]))
    if kind == "binary":
        return draw(st.binary(max_size=400)), ".log"
    if kind == "trainer_state":
        entries = draw(st.lists(st.fixed_dictionaries({"step": _STEPS | _VALUES, "loss": _VALUES},
                                                      optional={"eval_loss": _VALUES, "epoch": _VALUES}), max_size=20))
        doc = {"log_history": entries, "global_step": draw(_STEPS | st.text(max_size=3))}
        raw = json.dumps(doc).encode()
        if draw(st.booleans()):
            raw = raw[: draw(st.integers(0, len(raw)))]
        return raw, ".json"
    lines = draw(log_lines())
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = end.join(lines) + (end if draw(st.booleans()) else "")
    raw = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none"] * 4 + ["utf8", "nul", "bom", "utf16"]))
    if damage == "utf8" and raw:
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + b"\xff\xc3\x28" + raw[cut:]
    elif damage == "nul":
        raw = raw + b"\x00\x01"
    elif damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "utf16":
        raw = text.encode("utf-16", "surrogatepass")
    suffix = draw(st.sampled_from([".log", ".txt", ".jsonl", ".csv", ""]))
    return raw, suffix


def _write(tmp: Path, name: str, content: tuple[bytes, str]) -> Path:
    raw, suffix = content
    path = tmp / (f"{name}{suffix}" if suffix != ".json" else "trainer_state.json")
    path.write_bytes(raw)
    return path


@examples(60)
@given(log=log_files())
def test_parse_and_judge_any_log(tmp_path: Path, log: tuple[bytes, str]) -> None:
    path = _write(tmp_path, "train", log)
    tools = all_tools()
    out = outcome("log parse", lambda: tools["parse_training_log"].run({"log": str(path)}), names=(path.name,))
    if not isinstance(out, AccAgentError):
        json.loads(out.model_dump_json())
    outcome("log judge", lambda: tools["judge_short_run"].run({"log": str(path), "record": False}), names=(path.name,))
    outcome("log config", lambda: tools["compare_run_configs"].run({"baseline": str(path), "target": str(path)}),
            names=(path.name,))


@examples(20)
@given(a=log_files(), b=log_files(), window=st.sampled_from([None, "1:100", "50:10", "0:0", "-5:3"]))
def test_compare_curves_and_window(tmp_path: Path, a: tuple[bytes, str], b: tuple[bytes, str], window: str | None) -> None:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    pa, pb = _write(tmp_path / "a", "base", a), _write(tmp_path / "b", "npu", b)
    tools = all_tools()
    outcome("log curves", lambda: tools["compare_loss_curves"].run({"baseline_log": str(pa), "target_log": str(pb)}))
    if window is not None:
        start, end = window.split(":")
        args = {"log": str(pa), "record": False, "window": {"start_step": int(start), "end_step": int(end)}}
        outcome("log judge window", lambda: tools["judge_short_run"].run(args), names=("window",))


_BIG_LINE_SCRIPT = """
import json, resource, sys, time
from acc_agent.errors import AccAgentError
from acc_agent.registry import all_tools
tools = all_tools()
start = time.monotonic()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    out = tools["parse_training_log"].run({"log": sys.argv[1]})
    verdict = out.verdict
    points = sum(len(s) for s in out.series.values())
except AccAgentError as err:
    verdict, points = "error:" + err.code, 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"verdict": verdict, "points": points, "seconds": time.monotonic() - start,
                  "base_mib": base / 1024, "peak_mib": peak / 1024}))
"""


def _big_line_log(path: Path, opening: bytes, filler: bytes, closing: bytes) -> Path:
    """A log with one 100 MB line between real records, written in 1 MiB pieces (the test holds none of it)."""
    with path.open("wb") as fh:
        fh.write(opening)
        piece = filler * (1 << 20)
        for _ in range(100):
            fh.write(piece)
        fh.write(closing)
    return path


def test_one_100_mb_line_keeps_memory_and_time_bounded(tmp_path: Path) -> None:
    """A 100 MB line (no newline inside) is skipped in bounded pieces: memory stays far below its size."""
    cases = {
        "megatron.log": (b" iteration 1/ 10 | lm loss: 1.0E+00 |\n", b"x",
                         b"\n iteration 2/ 10 | lm loss: 5.0E-01 |\n iteration 3/ 10 | lm loss: 4.0E-01 |\n"),
        "metrics.jsonl": (b'{"step": 1, "loss": 1.0, "note": "', b"y",
                          b'"}\n{"step": 2, "loss": 0.5}\n{"step": 3, "loss": 0.4}\n'),
        "no_newline.txt": (b"loss: 1.0 ", b"z", b""),
    }
    for name, (opening, filler, closing) in cases.items():
        path = _big_line_log(tmp_path / name, opening, filler, closing)
        proc = subprocess.run([sys.executable, "-c", _BIG_LINE_SCRIPT, str(path)], capture_output=True, text=True,
                              timeout=120, cwd=REPO, check=False)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        growth = got["peak_mib"] - got["base_mib"]
        print(f"{name}: {got}")
        assert growth < 48, f"{name}: reading a 100 MB line took {growth:.0f} MiB more memory"
        assert got["seconds"] < 60, got
        if name != "no_newline.txt":
            assert got["points"] >= 2, got  # the records around the long line are still read
        path.unlink()


# --------------------------------------------------------------------------- TensorBoard event files


@st.composite
def event_files(draw: st.DrawFn) -> bytes:
    """A TFRecord event file of scalar, tensor (with any claimed shape) and odd summaries, then damaged."""
    import io

    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    buf = io.BytesIO()
    writer = RecordWriter(buf)
    for _ in range(draw(st.integers(0, 12))):
        tag = draw(st.sampled_from(["loss", "train/loss", "Loss/val", "lr", "", "a/b/c", "x" * 300]))
        if draw(st.booleans()):
            value = summary_pb2.Summary.Value(tag=tag, simple_value=draw(st.floats(width=32)))
        else:
            dims = draw(st.lists(st.sampled_from([0, 1, 2, 10**5, 10**9, -1]), max_size=3))
            tensor = tensor_pb2.TensorProto(
                dtype=draw(st.sampled_from([types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_INT64, types_pb2.DT_STRING])),
                float_val=draw(st.lists(st.floats(width=32), max_size=2)),
                tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]))
            value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
        event = event_pb2.Event(step=draw(st.integers(-(2**63), 2**63 - 1)), summary=summary_pb2.Summary(value=[value]))
        writer.write(event.SerializeToString())
    data = buf.getvalue()
    cut = draw(st.sampled_from(["none", "none", "truncate", "flip", "garbage"]))
    if cut == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif cut == "flip" and data:
        raw = bytearray(data)
        raw[draw(st.integers(0, len(raw) - 1))] ^= 0xFF
        data = bytes(raw)
    elif cut == "garbage":
        data = draw(st.binary(max_size=300))
    return data


@examples(25)
@given(data=event_files())
def test_tensorboard_event_files(tmp_path: Path, data: bytes) -> None:
    """Binary logs: a claimed tensor shape of 10^9 elements must not be filled in (a 4 GB allocation)."""
    path = tmp_path / "events.out.tfevents.1700000000.host"
    path.write_bytes(data)
    tools = all_tools()
    outcome("tensorboard", lambda: tools["parse_training_log"].run({"log": str(path)}), names=(path.name,), peak_mib=256)
    outcome("tensorboard", lambda: tools["judge_short_run"].run({"log": str(tmp_path), "record": False}), peak_mib=256)


_PY_PIECES = st.sampled_from(["x = ", "lr = 0.1", "dict(", ")", "[", "]", "{", "}", "1+", "'a'", ":", ",", "\n",
                              "lambda: __import__('os').system('touch PWNED')", "\x00", "optimizer = dict(type='SGD', lr=",
                              "train_cfg = dict(max_iters=", "1e400", "None", "**", "#", '"""'])


@examples(30)
@given(pieces=st.lists(_PY_PIECES, max_size=60), deep=st.sampled_from([0, 0, 300, 30000]),
       suffix=st.sampled_from([".py", ".json", ".yaml"]))
def test_config_files(tmp_path: Path, pieces: list[str], deep: int, suffix: str) -> None:
    """Run configs (.py read with ast, never executed; .json; .yaml) of any shape, nested deep or not."""
    text = "".join(pieces)
    if deep:
        text += "\ny = " + ("[" * deep + "]" * deep if suffix == ".py" else "1+" * deep + "1")
    if suffix == ".json":
        text = '{"a": ' * (deep or 1) + json.dumps(text) + "}" * (deep or 1)
    path = tmp_path / f"train{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    spec = all_tools()["compare_run_configs"]
    outcome("run config", lambda: spec.run({"baseline": str(path), "target": str(path)}), names=(path.name,))
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()
