"""Benchmark of ``acc-agent compare-dumps`` on msprobe's DEFAULT dumps (task statistics) against ``msprobe compare``.

msprobe's default config (``task: statistics``, ``level: L1``) writes only Max/Min/Mean/Norm per
tensor, and a real training step logs ~100k API calls: dump.json files of ~90 MB with ~300k tensor
leaves. msprobe's own compare takes minutes on such a pair (114 s on an idle 16-core machine, 214 s on a
2-core VM, 1.6-2.4 GB peak); this bench checks that ours stays interactive on it.

One invocation:

1. generates a synthetic msprobe L1 statistics dump pair (``golden/`` and ``target/``, each
   ``step0/rank0/dump.json`` + ``stack.json`` in msprobe's layout and number format) of ``--calls``
   API calls (Functional.linear / Functional.gelu / Tensor.add / Tensor.__mul__ / Torch.softmax /
   Functional.layer_norm, ~3 tensor leaves per call, scalar arguments included). As in a real
   dump, each call's first input is the previous call's output and weights are the same on both
   sides; each output carries fp32-rounding-sized noise (1e-7 relative) on the target, and call
   ``#--inject`` (default: 60 % of the way through) has its output Max and Norm 20 % off;
2. times ``acc-agent compare-dumps GOLDEN TARGET --csv OUT --json`` (fresh subprocess) and its peak
   RSS (``ru_maxrss`` of that child, from ``os.wait4``);
3. times ``msprobe compare -tp TARGET/dump.json -gp GOLDEN/dump.json -o OUT`` (fresh subprocess;
   ``--skip-msprobe`` leaves it out);
4. prints both wall times, the ratio, our peak RSS, the verdict, whether our worst row and our
   ``first_divergence`` name the injected call, and checks that msprobe's CSV flags that call too.

Run: ``python bench/bench_statistics_compare.py [--calls 100000] [--workdir DIR] [--skip-msprobe]``.
Acceptance (exit code 1 if missed, full size only): ours >= 20x faster than msprobe, our peak RSS < 1 GB,
and our worst row is the injected call's output.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# (api, tensor inputs, scalar kwargs or args) cycled to look like a transformer block's L1 dump.
_CYCLE = [
    ("Functional.linear", 3, None),
    ("Functional.gelu", 1, ("kw", "approximate", "str", "none")),
    ("Functional.linear", 3, None),
    ("Tensor.add", 2, None),
    ("Tensor.__mul__", 1, ("arg", 1, "float", 0.125)),
    ("Torch.softmax", 1, ("kw", "dim", "int", -1)),
    ("Functional.layer_norm", 3, None),
]
_SHAPES = [[8, 2048, 4096], [4096, 4096], [4096], [8, 2048, 11008], [11008, 4096], [8, 32, 2048, 2048]]


def _f32(x: float) -> float:
    """A float32-rounded value, printed like msprobe prints it (Python repr of the float32)."""
    import struct

    return struct.unpack("f", struct.pack("f", x))[0]


def _bf16(x: float) -> float:
    """``x`` rounded to bfloat16 (to nearest, ties to even), as a target run in bfloat16 records its statistics."""
    import ml_dtypes
    import numpy as np

    return float(np.float32(x).astype(ml_dtypes.bfloat16))


def _leaf(stats: tuple[float, float, float, float], shape: list[int], requires_grad: bool, ind: str,
          dtype: str = "float32") -> str:
    mx, mn, mean, norm = stats
    pad = ind + " "
    shape_txt = ",\n".join(f"{pad} {s}" for s in shape)
    return (f"{ind}{{\n{pad}\"type\": \"torch.Tensor\",\n{pad}\"dtype\": \"torch.{dtype}\",\n"
            f"{pad}\"shape\": [\n{shape_txt}\n{pad}],\n{pad}\"Max\": {mx!r},\n{pad}\"Min\": {mn!r},\n"
            f"{pad}\"Mean\": {mean!r},\n{pad}\"Norm\": {norm!r},\n"
            f"{pad}\"requires_grad\": {'true' if requires_grad else 'false'}\n{ind}}}")


def _scalar(kind: str, value: Any, ind: str) -> str:
    pad = ind + " "
    return f"{ind}{{\n{pad}\"type\": \"{kind}\",\n{pad}\"value\": {json.dumps(value)}\n{ind}}}"


def _stats(rng: random.Random) -> tuple[float, float, float, float]:
    scale = 10 ** rng.uniform(-3, 1)
    return (_f32(scale * rng.uniform(1, 4)), _f32(-scale * rng.uniform(1, 4)), _f32(scale * rng.uniform(-0.1, 0.1)),
            _f32(scale * rng.uniform(50, 5000)))


def _perturb(stats: Any, eps: float, rng: random.Random) -> tuple[float, float, float, float]:
    # A fixed magnitude per call (only the sign is random): msprobe's warning rule compares an output's
    # NormRelativeErr with its inputs', so noise of very different sizes within a call would flag it.
    return tuple(_f32(v * (1 + eps * rng.choice((-1.0, 1.0)))) for v in stats)  # type: ignore[return-value]


def _entry(key: str, inputs: list[str], kwargs: list[str], outputs: list[str]) -> str:
    def block(name: str, items: list[str], opener: str, closer: str) -> str:
        if not items:
            return f"   \"{name}\": {opener}{closer}"
        return f"   \"{name}\": {opener}\n" + ",\n".join(items) + f"\n   {closer}"

    return (f"  \"{key}\": {{\n" + block("input_args", inputs, "[", "]") + ",\n"
            + block("input_kwargs", kwargs, "{", "}") + ",\n" + block("output", outputs, "[", "]") + "\n  }")


def generate(root: Path, calls: int, inject: int, seed: int, target_dtype: str = "float32") -> tuple[Path, Path, str]:
    """Write golden and target rank folders; returns them and the injected call's key.

    ``target_dtype`` "bfloat16": the target's tensors are bfloat16 (the usual migration check against a float32
    golden), their statistics rounded to it and each output off by up to one bfloat16 rounding."""
    low = target_dtype == "bfloat16"
    rng = random.Random(seed)
    dirs = {side: root / side / "step0" / "rank0" for side in ("golden", "target")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    files = {side: (d / "dump.json").open("w", encoding="utf-8") for side, d in dirs.items()}
    stacks: dict[str, Any] = {}
    head = '{\n "task": "statistics",\n "level": "L1",\n "framework": "pytorch",\n "dump_data_dir": null,\n "data": {\n'
    for fh in files.values():
        fh.write(head)
    counts: dict[str, int] = {}
    injected = ""
    prev: tuple[Any, Any, list[int]] | None = None  # last call's output: (golden stats, target stats, shape)
    for i in range(calls):
        api, n_in, scalar = _CYCLE[i % len(_CYCLE)]
        key = f"{api}.{counts.get(api, 0)}.forward"
        counts[api] = counts.get(api, 0) + 1
        shapes = [rng.choice(_SHAPES) for _ in range(n_in + 1)]
        # weights and other inputs are the same in both runs; the activation is the previous output
        g_stats = [_stats(rng) for _ in range(n_in + 1)]
        t_stats = list(g_stats)
        if prev is not None:
            g_stats[0], t_stats[0], shapes[0] = prev
        eps = (2.0**-9 if low else 1e-7) * rng.uniform(0.5, 1.0)  # rounding-sized noise, one size per call
        t_stats[-1] = _perturb(g_stats[-1], eps, rng)
        if low:  # the weights are the golden's cast; the activation came in rounded already
            t_stats[1:] = [tuple(_bf16(v) for v in st) for st in t_stats[1:]]  # type: ignore[misc]
        if i == inject:
            injected = key
            mx, mn, mean, norm = t_stats[-1]
            t_stats[-1] = (_f32(mx * 1.2), mn, mean, _f32(norm * 1.2))
            if low:
                t_stats[-1] = tuple(_bf16(v) for v in t_stats[-1])  # type: ignore[assignment]
        prev = (g_stats[-1], t_stats[-1], shapes[-1])
        for side, stats in (("golden", g_stats), ("target", t_stats)):
            dtype = target_dtype if side == "target" else "float32"
            inputs = [_leaf(stats[k], shapes[k], k > 0, "    ", dtype) for k in range(n_in)]
            kwargs: list[str] = []
            if scalar is not None and scalar[0] == "arg":
                inputs.append(_scalar(scalar[2], scalar[3], "    "))
            elif scalar is not None:
                kwargs.append(f"    \"{scalar[1]}\": " + _scalar(scalar[2], scalar[3], "    ").lstrip())
            outputs = [_leaf(stats[-1], shapes[-1], True, "    ", dtype)]
            files[side].write(("" if i == 0 else ",\n") + _entry(key, inputs, kwargs, outputs))
        stacks[str(i)] = [[key], [f"File /work/model.py, line {100 + i % 700}, in forward, \n y = {api}(x)"]]
    for fh in files.values():
        fh.write("\n }\n}")
        fh.close()
    for d in dirs.values():
        (d / "stack.json").write_text(json.dumps(stacks, indent=1), encoding="utf-8")
        (d / "construct.json").write_text("{}", encoding="utf-8")
    return dirs["golden"], dirs["target"], injected


def _run_measured(cmd: list[str]) -> tuple[float, int, int, str]:
    """(wall s, exit code, peak RSS bytes of the child, stdout) of one fresh subprocess."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return wall, proc.returncode, usage.ru_maxrss * 1024, text


def _compile_bytecode() -> None:
    """Compile acc_agent's modules to bytecode once, as pip does when it installs a wheel (msprobe's are): an editable
    install run with PYTHONDONTWRITEBYTECODE set (as on some CI machines) would otherwise compile its ~190 modules
    again in every timed run (about 0.5 s here)."""
    import compileall

    import acc_agent

    compileall.compile_dir(str(Path(acc_agent.__file__).parent), quiet=1)


def _acc_agent() -> list[str]:
    exe = shutil.which("acc-agent")
    return [exe] if exe else [sys.executable, "-m", "acc_agent"]


def _msprobe_flags(csv_dir: Path, injected: str) -> tuple[int, list[str]]:
    """Rows msprobe compared, and the non-pass rows' names (it should flag the injected call)."""
    found = sorted(csv_dir.glob("compare_result_*.csv"))
    if not found:
        return 0, []
    with found[-1].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return len(rows), [r["NPU Name"] for r in rows if r["Result"] not in ("pass", "")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000, help="API calls per dump (default 100000)")
    ap.add_argument("--inject", type=int, default=None, help="call index with the divergence (default 60%%)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None, help="keep the dumps and CSVs here")
    ap.add_argument("--skip-msprobe", action="store_true", help="time ours only")
    ap.add_argument("--target-dtype", choices=("float32", "bfloat16"), default="float32",
                    help="the target's dtype (bfloat16: every row is an error under msprobe's dtype rule, as in a real "
                         "bfloat16 migration; the acceptance bar is judged on float32)")
    args = ap.parse_args(argv)
    inject = args.inject if args.inject is not None else int(args.calls * 0.6)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench_stat_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _bench(work, args.calls, inject, args.seed, args.skip_msprobe, full=args.calls >= 100_000,
                      target_dtype=args.target_dtype)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def _bench(work: Path, calls: int, inject: int, seed: int, skip_msprobe: bool, full: bool,
           target_dtype: str = "float32") -> int:
    t0 = time.perf_counter()
    golden, target, injected = generate(work, calls, inject, seed, target_dtype)
    low = target_dtype != "float32"
    size = (golden / "dump.json").stat().st_size
    n_leaves = sum(1 for line in (golden / "dump.json").open(encoding="utf-8") if '"type": "torch.Tensor"' in line)
    print(f"generated {calls} calls, {n_leaves} tensor leaves, dump.json {size / 1e6:.1f} MB each "
          f"({time.perf_counter() - t0:.1f} s); injected divergence: {injected} output")
    for p in (golden / "dump.json", target / "dump.json"):  # warm the page cache for both tools alike
        p.read_bytes()

    _compile_bytecode()
    ours_csv = work / "ours.csv"
    wall, code, rss, out = _run_measured(_acc_agent() + ["compare-dumps", str(golden), str(target), "--csv",
                                                         str(ours_csv), "--json"])
    result = json.loads(out) if out.strip().startswith("{") else {}
    # in bfloat16 every row is an error under msprobe's dtype rule (and its 10x warning fires on rounding here and
    # there, for both tools): what the diagnosis adds is the first divergence, which is what is judged there
    flagged = [r for r in result.get("rows") or [] if r.get("status") not in ("pass", "skipped")
               and not (low and r.get("message") == "error: The dtype of NPU and Bench are inconsistent.")]
    fd = (result.get("first_divergence") or {}).get("name")
    print(f"acc-agent compare-dumps: {wall:.2f} s wall, peak RSS {rss / 2**20:.0f} MB, exit {code}, "
          f"verdict {result.get('verdict')!r}, {result.get('rows_total')} rows")
    for r in flagged[:3]:
        print(f"  flagged: {r['name']} ({r['status']}: {r.get('message', '')[:90]})")
    names_it = [r["name"] for r in flagged] == [f"{injected}.output.0"]
    print(f"  names the injected call: flagged rows exactly it: {names_it}; first_divergence {fd!r} "
          f"({'yes' if fd and injected in fd else 'no'})")
    ok = (names_it or low) and code == 1 and bool(fd) and injected in (fd or "")
    if full:
        ok = ok and rss < 2**30
    if not skip_msprobe:
        ms_out = work / "msprobe_out"
        shutil.rmtree(ms_out, ignore_errors=True)
        ms_out.mkdir()
        ms_wall, ms_code, ms_rss, _ = _run_measured(["msprobe", "compare", "-tp", str(target / "dump.json"), "-gp",
                                                     str(golden / "dump.json"), "-o", str(ms_out)])
        n_rows, flagged = _msprobe_flags(ms_out, injected)
        print(f"msprobe compare: {ms_wall:.2f} s wall, peak RSS {ms_rss / 2**20:.0f} MB, exit {ms_code}, "
              f"{n_rows} rows, flagged {flagged[:3]}{' ...' if len(flagged) > 3 else ''}")
        ratio = ms_wall / wall if wall > 0 else float("inf")
        print(f"ratio msprobe / ours: {ratio:.1f}x")
        if full and not low:
            ok = ok and ratio >= 20
    print("acceptance:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
