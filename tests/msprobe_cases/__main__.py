"""``cd tests && python -m msprobe_cases [NAME ...]``: generate (or reuse) cases and print their answers.

Handy to warm the cache before a test run and to read what each case expects; exits 1 when a case
could not be generated.
"""

from __future__ import annotations

import sys
import time

from . import CASE_NAMES, default_cache_root
from .fixtures import generate_all


def main(argv: list[str]) -> int:
    names = tuple(argv) or CASE_NAMES
    started = time.monotonic()
    results = generate_all(names)
    failed = 0
    for name, case in results.items():
        if isinstance(case, BaseException):
            failed += 1
            print(f"{name}: FAILED {type(case).__name__}: {case}\n")
        else:
            print(f"{name}: {case.category} first_op={case.first_op} pass={case.pass_} rank={case.rank} "
                  f"argument={case.argument}\n  {case.description}\n")
    print(f"{len(names)} cases in {time.monotonic() - started:.1f} s under {default_cache_root()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
