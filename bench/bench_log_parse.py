"""Benchmark: a 1,000,000-line Megatron log parsed in under 5 s with flat memory, against a regex loop.

What it measures, each in a fresh subprocess of the same invocation (peak RSS from getrusage):
  * ``regex``  — the reference: the loop one writes by hand, ``for line in file`` + a compiled
    regex for the iteration header + ``findall`` of the ``name: value`` fields into lists;
  * ``stream`` — acc-agent's Megatron parser with every record consumed and nothing kept: the
    memory of reading itself, which must not grow with the file;
  * ``full``   — ``parse_log`` as the tools call it: detection, runs, every series kept in 8-byte
    arrays, warm-up and device detection;
  * ``read``   — a bare ``for line in file`` over the same log (the I/O floor);
  * ``import`` — an interpreter that only imported the package (the RSS floor).
Memory flatness is read as the stream's peak RSS on the big log against a log 10x smaller.

Run: python bench/bench_log_parse.py [--lines 1000000] [--small 100000]
Exit code 1 when the full parse of the big log takes 5 s or more (wall) or the stream's RSS grows
by more than 50 % from the small log to the big one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import json, re, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
from acc_agent.io.logs import parse_log
from acc_agent.io.logs.formats import BY_NAME
from acc_agent.io.logs.source import LogSource
t0 = time.perf_counter()
c0 = time.process_time()
points = 0
if mode == "regex":
    head = re.compile(r"iteration\s+(\d+)/\s*(\d+) \|")
    field = re.compile(r"\|\s*([^|:]+?):\s*([-+0-9.eE]+)\s*(?=\|)")
    columns = {}
    steps = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = head.search(line)
            if m is None:
                continue
            steps.append(int(m.group(1)))
            for name, value in field.findall(line, m.end() - 1):
                columns.setdefault(name, []).append(float(value))
    points = sum(len(v) for v in columns.values())
elif mode == "read":
    with open(path, encoding="utf-8", errors="replace") as fh:
        for _line in fh:
            points += 1
elif mode == "stream":
    for rec in BY_NAME["megatron"].parse(LogSource.open(path)):
        if rec.columns is not None:
            points += len(rec.columns.values) * int(rec.columns.steps.size)
            points += sum(len(mem.row) for _, mem in rec.columns.memory)  # memory lines read inside the table
        elif rec.batch is not None:
            points += sum(len(b[3]) for b in rec.batch)
        else:
            points += len(rec.row) if rec.row is not None else len(rec.values)  # memory records carry a row
elif mode == "full":
    parsed = parse_log(path)
    assert parsed.format == "megatron", parsed.format
    points = sum(len(s) for r in parsed.runs for s in r.series.values())
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "cpu_seconds": time.process_time() - c0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "points": points}))
'''


def write_log(path: Path, lines: int) -> None:
    """Megatron/MindSpeed-style: iteration lines, 8 rank memory lines every 100 steps, a warning every 1000."""
    with path.open("w", encoding="utf-8") as fh:
        written = step = 0
        while written < lines:
            step += 1
            loss = 10.0 / (1.0 + step / 5000.0)
            fh.write(
                f" [2025-04-25 16:46:58] iteration {step:>8}/ 9999999 | consumed samples: {step * 8:>12} | "
                f"elapsed time per iteration (ms): {3250.0 + (step % 7):.1f} | learning rate: {1e-5 / (1 + step / 1e5):.6E} | "
                f"global batch size:     8 | lm loss: {loss:.16f} | loss scale: 1.0 | grad norm: {11.0 + (step % 13) / 10:.16f} | "
                f"num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            )
            written += 1
            if step % 100 == 0:
                for rank in range(8):
                    if written >= lines:
                        break
                    fh.write(f"[Rank {rank}] (after {step} iterations) memory (MB) | allocated: 17975.59765625 | "
                             "max allocated: 24781.76806640625 | reserved: 28276.0 | max reserved: 28276.0\n")
                    written += 1
            if step % 1000 == 0 and written < lines:
                fh.write("[W compiler_depend.ts:41] Warning: kernel [ArgSort] can not support dtype int32 or int64 on AiCore, "
                         "Now this kernel is running on AiCpu.\n")
                written += 1


def run(mode: str, path: Path | str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big.log", Path(tmp) / "small.log"
        write_log(big, args.lines)
        write_log(small, args.small)
        size_mb = big.stat().st_size / 2**20
        floor = run("import", big)
        res = {(m, n): run(m, p) for m in ("read", "regex", "stream", "full") for n, p in (("small", small), ("big", big))}
    print(f"log: {args.lines:,} lines ({size_mb:.0f} MiB); smaller log: {args.small:,} lines; "
          f"interpreter that only imported acc_agent: peak RSS {floor['peak_rss_mb']:.1f} MiB")
    ref = res[("regex", "big")]
    for mode in ("read", "regex", "stream", "full"):
        b, s = res[(mode, "big")], res[(mode, "small")]
        print(f"{mode:>6}: {b['seconds']:6.2f} s wall, {b['cpu_seconds']:6.2f} s CPU; regex loop / this: "
              f"{ref['seconds'] / b['seconds']:4.2f}x wall, {ref['cpu_seconds'] / b['cpu_seconds']:4.2f}x CPU; "
              f"peak RSS big {b['peak_rss_mb']:6.1f} MiB, small {s['peak_rss_mb']:6.1f} MiB "
              f"(big/small {b['peak_rss_mb'] / s['peak_rss_mb']:.2f}, file ratio {args.lines / args.small:.0f}x); "
              f"{int(b['points']):,} values")
    full, stream_b, stream_s = res[("full", "big")], res[("stream", "big")], res[("stream", "small")]
    fast = full["seconds"] < 5.0
    flat = stream_b["peak_rss_mb"] <= 1.5 * stream_s["peak_rss_mb"]
    print(f"acceptance: full parse of {args.lines:,} lines under 5 s: {full['seconds']:.2f} s wall -> {'yes' if fast else 'NO'}; "
          f"streaming memory flat (big <= 1.5x small): {stream_b['peak_rss_mb']:.1f} vs {stream_s['peak_rss_mb']:.1f} MiB -> "
          f"{'yes' if flat else 'NO'}  (load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return 0 if fast and flat else 1


if __name__ == "__main__":
    sys.exit(main())
