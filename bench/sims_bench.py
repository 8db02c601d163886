"""Time every simulation cold and cached: ``python bench/sims_bench.py [--repeat 3] [--json]``.

A thin wrapper around ``trapbot sims bench`` (see sims/cli.py) for running without the bot's
CLI. Budgets: each sim <= 3 s cold (median, in a fresh Python process from spawn to exit),
cached fetch <= 20 ms, warming the whole deck < 40 s.
"""

import sys

from sims.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", *sys.argv[1:]]))
