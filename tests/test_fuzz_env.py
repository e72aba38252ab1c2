"""Property-based tests of the environment readers: npu-smi / nvidia-smi text, env dumps, pip lists,
snapshots — read through check_environment and diff_environments as a user passes them.

Inputs are the real recorded outputs (tests/fixtures/env) damaged line by line (cells dropped,
numbers replaced by text or huge values, lines duplicated, cut, shuffled), plus empty, binary and
oversized files. The rule (see fuzzing.py): a result or an AccAgentError with a fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from fuzzing import examples, outcome
from hypothesis import given
from hypothesis import strategies as st

from acc_agent.errors import AccAgentError
from acc_agent.io.env.npu_smi import parse_npu_smi
from acc_agent.io.env.nvidia_smi import parse_nvidia_smi
from acc_agent.registry import all_tools

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "env"
_SAMPLES = {kind: sorted(p.read_text(encoding="utf-8", errors="replace") for p in (FIXTURES / kind).iterdir())
            for kind in ("npu_smi", "nvidia_smi", "pip", "env")}
_TOKENS = st.sampled_from(["", "-", "NA", "OK", "Alarm", "99999999999999999999", "-1", "1e400", "nan", "|", "||",
                           "0000:00:00.0", "65536 / 0", "0 / 0", "x" * 300, "\x00", "\t"])


@st.composite
def damaged_text(draw: st.DrawFn, kind: str) -> str:
    """A recorded output of ``kind`` with line-level damage, or a degenerate file."""
    shape = draw(st.sampled_from(["damaged"] * 5 + ["empty", "garbage", "repeated"]))
    if shape == "empty":
        return draw(st.sampled_from(["", "\n", " ", "\r\n\r\n"]))
    if shape == "garbage":
        return draw(st.text(max_size=300))
    lines = draw(st.sampled_from(_SAMPLES[kind])).splitlines()
    if shape == "repeated":
        return "\n".join(lines * draw(st.integers(2, 50)))
    for _ in range(draw(st.integers(1, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["cell", "drop", "dup", "cut", "swap", "token"]))
        line = lines[i]
        if op == "cell" and "|" in line:
            cells = line.split("|")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(_TOKENS)
            lines[i] = "|".join(cells)
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, line)
        elif op == "cut":
            lines[i] = line[: draw(st.integers(0, len(line)))]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            words = line.split()
            if words:
                words[draw(st.integers(0, len(words) - 1))] = draw(_TOKENS)
            lines[i] = " ".join(words)
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines)


@examples(60)
@given(text=damaged_text("npu_smi"))
def test_npu_smi_text(text: str) -> None:
    info = outcome("npu-smi parse", lambda: parse_npu_smi(text, "npu-smi.txt"))
    assert not isinstance(info, AccAgentError)
    json.loads(info.model_dump_json())


@examples(30)
@given(text=damaged_text("nvidia_smi"))
def test_nvidia_smi_text(text: str) -> None:
    info = outcome("nvidia-smi parse", lambda: parse_nvidia_smi(text, "nvidia-smi.txt"))
    assert not isinstance(info, AccAgentError)
    json.loads(info.model_dump_json())


@examples(25)
@given(npu=damaged_text("npu_smi"), gpu=damaged_text("nvidia_smi"), pip=damaged_text("pip"), env=damaged_text("env"),
       target=st.sampled_from(["npu", "gpu"]), binary=st.sampled_from([None, "npu", "pip"]))
def test_check_environment_on_recorded_files(tmp_path: Path, npu: str, gpu: str, pip: str, env: str, target: str,
                                             binary: str | None) -> None:
    """The whole check on damaged recordings (the device probe off: it is a subprocess of its own)."""
    files = {"npu_smi_output": npu, "nvidia_smi_output": gpu, "pip_list_output": pip, "env_file": env}
    args: dict[str, str] = {"root": str(tmp_path / "root"), "probe": "off", "target": target,
                            "snapshot_out": str(tmp_path / "snap.json")}
    (tmp_path / "root").mkdir(exist_ok=True)
    for field, text in files.items():
        path = tmp_path / f"{field}.txt"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        if binary and field.startswith(binary):
            path.write_bytes(bytes(range(256)) * 4)
        args[field] = str(path)
    spec = all_tools()["check_environment"]
    out = outcome("check_environment", lambda: spec.run(args))
    if not isinstance(out, AccAgentError):
        assert out.verdict in ("auto", "manual_stop", "unknown")
        snap = json.loads((tmp_path / "snap.json").read_text(encoding="utf-8"))
        assert snap["verdict"] == out.verdict
        diff = all_tools()["diff_environments"]
        outcome("diff_environments", lambda: diff.run({"baseline": args["snapshot_out"], "target": args["snapshot_out"]}))


def test_huge_and_odd_recorded_files(tmp_path: Path) -> None:
    """Over the 4 MiB cap, a directory, a FIFO, a missing file: each a structured error naming the argument."""
    import os

    big = tmp_path / "big.txt"
    big.write_bytes(b"| 0 910B4 | OK | 1 2 3 |\n" * 200_000)
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    spec = all_tools()["check_environment"]
    for value in (big, tmp_path, fifo, tmp_path / "missing.txt"):
        err = outcome("check_environment files", lambda v=value: spec.run({"probe": "off", "npu_smi_output": str(v)}),  # type: ignore[misc]
                      names=("npu_smi_output",))
        assert isinstance(err, AccAgentError), value


@examples(20)
@given(doc=st.recursive(st.one_of(st.none(), st.booleans(), st.floats(), st.text(max_size=6)),
                        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                        max_leaves=20),
       keep=st.booleans())
def test_diff_environments_on_any_json(tmp_path: Path, doc: object, keep: bool) -> None:
    """A snapshot file holding any JSON (or a real one with its sections replaced)."""
    if keep and isinstance(doc, dict):
        doc = {"checks": doc.get("checks", []), "versions": doc.get("versions", doc), "system": doc.get("system", 1),
               "npu_smi": doc.get("npu_smi", {"chips": doc}), "nvidia_smi": doc}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    spec = all_tools()["diff_environments"]
    outcome("diff_environments json", lambda: spec.run({"baseline": str(path), "target": str(path)}), names=("snap.json",))
