"""The secret scrubber's time on hostile host text, per doubling (issue 49). Figures, never assertions.

    python3 bench/scrub_cost.py                      # the current fleet/facts/scrub.py
    python3 bench/scrub_cost.py --sizes 1000,2000,4000 --module /tmp/old_scrub.py   # an older copy, small sizes

Each family is a shape one of the patterns once re-read from many starts; a linear scrubber's time ratio per
doubling stays near 2 (the old patterns: ~4 and ~8). No lab, no root. tests/unit/test_scrub_linear.py counts the
same families' work instead of timing them.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from test_scrub_linear import HOSTILE  # noqa: E402  (the test's families, one list)


def _module(path: str | None):
    if not path:
        from fleet.facts import scrub
        return scrub
    spec = importlib.util.spec_from_file_location("scrub_under_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _best(fn, text: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16000,32000,64000,128000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--module", help="a scrub.py to time instead of fleet's own")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scrub_all = _module(args.module)._scrub_all
    print(f"{'family':60s} " + " ".join(f"{n:>9d}" for n in sizes) + "   x/doubling (last)")
    for name, make in HOSTILE.items():
        times = [_best(scrub_all, make(n), args.rounds) for n in sizes]
        ratio = times[-1] / times[-2] if times[-2] else float("nan")
        print(f"{name[:60]:60s} " + " ".join(f"{t * 1000:7.1f}ms" for t in times) + f"   {ratio:5.1f}")


if __name__ == "__main__":
    main()
