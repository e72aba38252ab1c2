"""Benchmark: parsing a Megatron-style log of 1,000,000 lines, time and peak memory.

Acceptance (issue 4): under 5 s, and memory that does not grow with the file. Each measurement
runs in a fresh subprocess (peak RSS from getrusage). Reported as ratios against references run
in the same invocation:
  * time: parse_log vs a plain ``for line in file`` read of the same file (the I/O floor);
  * memory: the 1,000,000-line log vs a 100,000-line log, for (a) the streaming parser alone
    (records consumed, nothing kept) and (b) the full parse that keeps every series in arrays;
    and both against an interpreter that only imported the package (the RSS floor).

Run: python bench/bench_parse_log.py [--lines 1000000] [--small 100000]
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
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
from acc_agent.io.logs import parse_log
from acc_agent.io.logs.formats import BY_NAME
from acc_agent.io.logs.source import LogSource
t0 = time.perf_counter()
c0 = time.process_time()
points = 0
if mode == "read":
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            points += 1
elif mode == "stream":
    for rec in BY_NAME["megatron"].parse(LogSource.open(path)):
        if rec.columns is not None:
            points += len(rec.columns.values) * int(rec.columns.steps.size)
        else:
            points += sum(len(b[3]) for b in rec.batch) if rec.batch is not None else len(rec.values)
elif mode == "full":
    parsed = parse_log(path)
    points = sum(len(s) for r in parsed.runs for s in r.series.values())
    assert parsed.format == "megatron"
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "cpu_seconds": time.process_time() - c0, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "points": points}))
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
                    fh.write(f"[Rank {rank}] (after {step} iterations) memory (MB) | allocated: 17975.59765625 | max allocated: 24781.76806640625 | reserved: 28276.0 | max reserved: 28276.0\n")
                    written += 1
            if step % 1000 == 0 and written < lines:
                fh.write("[W compiler_depend.ts:41] Warning: kernel [ArgSort] can not support dtype int32 or int64 on AiCore, Now this kernel is running on AiCpu.\n")
                written += 1


def run(mode: str, path: Path | str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big.log", Path(tmp) / "small.log"
        write_log(big, args.lines)
        write_log(small, args.small)
        size_mb = big.stat().st_size / 2**20
        floor = run("none", big)
        read = run("read", big)
        res = {(m, n): run(m, p) for m in ("stream", "full") for n, p in (("small", small), ("big", big))}
    print(f"log: {args.lines:,} lines ({size_mb:.0f} MiB); reference log: {args.small:,} lines")
    print(f"reference 'read': plain line loop over the big log   {read['seconds']:6.2f} s wall, {read['cpu_seconds']:6.2f} s CPU   peak RSS {read['peak_rss_mb']:6.1f} MiB")
    print(f"reference 'import only' interpreter                                   peak RSS {floor['peak_rss_mb']:6.1f} MiB")
    for mode in ("stream", "full"):
        b, s = res[(mode, "big")], res[(mode, "small")]
        print(f"{mode:>6}: big {b['seconds']:6.2f} s wall, {b['cpu_seconds']:6.2f} s CPU ({b['cpu_seconds'] / read['cpu_seconds']:.1f}x the read loop's CPU), peak RSS big {b['peak_rss_mb']:6.1f} MiB, "
              f"small {s['peak_rss_mb']:6.1f} MiB -> RSS ratio big/small {b['peak_rss_mb'] / s['peak_rss_mb']:.2f} "
              f"(file ratio {args.lines / args.small:.0f}x); above the import floor: big {b['peak_rss_mb'] - floor['peak_rss_mb']:.1f} MiB, "
              f"small {s['peak_rss_mb'] - floor['peak_rss_mb']:.1f} MiB; {int(b['points']):,} values")
    full = res[("full", "big")]
    print(f"acceptance: full parse of {args.lines:,} lines under 5 s: wall {full['seconds']:.2f} s -> {'yes' if full['seconds'] < 5 else 'NO'}, "
          f"CPU {full['cpu_seconds']:.2f} s -> {'yes' if full['cpu_seconds'] < 5 else 'NO'}  (load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
