"""Run every benchmark (each ``benchmarks/bench_*.py`` module's ``main()``), or those named.

    python -m benchmarks            # all
    python -m benchmarks forward    # only bench_forward.py
"""

import importlib
import sys
from pathlib import Path


def main(names):
    here = Path(__file__).parent
    available = sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    for name in names or available:
        if name not in available:
            sys.exit(f"no benchmark {name!r}; available: {', '.join(available)}")
        print(f"== {name}", flush=True)
        importlib.import_module(f"benchmarks.bench_{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
