"""``trapbot sims ...``: list, run, warm and benchmark the simulations.

The bot's CLI calls ``register(subparsers)`` and then ``args.func(args)``; every sub-command
sets ``func`` to a handler that returns the exit code. ``python -m sims.cli ...`` works too.

    trapbot sims list [--json]              ids, titles and the cards that use each sim
    trapbot sims run ID [--json] [--no-cache]
    trapbot sims warm [--jobs 2]            compute every sim missing from the cache
    trapbot sims bench [--json] [--repeat 3] [--check]

The bench's cold time is what a learner waits for on a cache miss in a worker that has never
run the sim: a fresh Python process that imports torch and matplotlib, runs and plots, timed
from spawning the process to its exit. It also reports the same computation inside this warm
process (imports and first-use costs already paid), and the cached fetch.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from functools import partial
from typing import Any

#: Budgets the bench checks (from the project's spec), seconds.
COLD_BUDGET_S = 3.0
CACHED_BUDGET_S = 0.020
WARM_ALL_BUDGET_S = 40.0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``sims`` command and its sub-commands to an argparse subparsers object."""
    sims_parser = subparsers.add_parser("sims", help="list, run, warm and benchmark simulations")
    sims_parser.set_defaults(func=lambda args: _usage(sims_parser))
    commands = sims_parser.add_subparsers(dest="sims_command", metavar="COMMAND")

    listing = commands.add_parser("list", help="every simulation with its title and cards")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=cmd_list)

    run = commands.add_parser("run", help="run one simulation (from the cache when present)")
    run.add_argument("id", help="simulation id, e.g. reward_overoptimization")
    run.add_argument("--json", action="store_true", help="print JSON")
    run.add_argument("--no-cache", action="store_true", help="recompute and overwrite the entry")
    run.set_defaults(func=cmd_run)

    warm = commands.add_parser("warm", help="compute every simulation missing from the cache")
    warm.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes (default: up to 2; 1 computes in this process)",
    )
    warm.set_defaults(func=cmd_warm)

    bench = commands.add_parser("bench", help="time every simulation cold and cached")
    bench.add_argument("--json", action="store_true", help="print JSON")
    bench.add_argument("--repeat", type=int, default=3, help="cold runs per sim (median)")
    bench.add_argument("--check", action="store_true", help="exit 1 when a budget is exceeded")
    bench.add_argument("ids", nargs="*", help="only these sims (default: all)")
    bench.set_defaults(func=cmd_bench)
    return sims_parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def cmd_list(args: argparse.Namespace) -> int:
    from sims import registry

    rows = [
        {"id": sim_id, "title": registry.title(sim_id), "cards": cards}
        for sim_id, cards in registry.sim_cards().items()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        width = max((len(row["id"]) for row in rows), default=2)
        for row in rows:
            cards = ", ".join(row["cards"]) or "-"
            print(f"{row['id']:<{width}}  {row['title']}  [{cards}]")
    for name, problem in registry.problems().items():
        print(f"warning: sims/{name}.py is not usable: {problem}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from sims import cache, registry

    try:
        registry.get(args.id)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    entry = cache.get_or_compute(args.id, use_cache=not args.no_cache)
    payload = {
        "id": entry.id,
        "metrics": entry.metrics,
        "png": str(entry.png_path),
        "seconds": entry.seconds,
        "cached": entry.cached,
    }
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        source = "cache" if entry.cached else f"computed in {entry.seconds:.2f} s"
        print(f"{entry.id} ({source})\nplot: {entry.png_path}")
        for name, value in entry.metrics.items():
            print(f"  {name} = {value:.4g}")
    return 0


def cmd_warm(args: argparse.Namespace) -> int:
    from sims import cache

    start = time.perf_counter()
    computed = 0

    def report(entry: cache.CachedSim) -> None:
        nonlocal computed
        if entry.cached:
            print(f"cached    {entry.id}")
        else:
            computed += 1
            print(f"computed  {entry.id} in {entry.seconds:.2f} s", flush=True)

    entries = cache.warm(on_done=report, jobs=args.jobs)
    total = time.perf_counter() - start
    print(
        f"{computed} computed, {len(entries) - computed} already cached, {total:.1f} s total "
        f"(cache: {cache.resolve_dir()})"
    )
    return 0


def _median_seconds(action, repeat: int) -> tuple[float, list[float], float]:
    """Median wall time, all wall times, and median CPU time of this process."""
    times, cpu_times = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        action()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return statistics.median(times), times, statistics.median(cpu_times)


#: What the fresh process runs: compute the sim (cache bypassed) and report compute seconds.
_COLD_CHILD = (
    "import json, sys\n"
    "from sims import cache\n"
    "computed = cache.compute(sys.argv[1])\n"
    "print(json.dumps({'compute_s': computed.seconds}))\n"
)


def cold_in_fresh_process(sim_id: str) -> tuple[float, float, float]:
    """One fresh process: (wall seconds from spawn to exit, its CPU seconds, seconds of run +
    plot inside it). CPU time (user + system of the child) is the steadier figure on a shared
    machine: it does not count the time other processes held the cores."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    finished = subprocess.run(
        [sys.executable, "-c", _COLD_CHILD, sim_id],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if finished.returncode != 0:
        raise RuntimeError(f"{sim_id} failed in a fresh process:\n{finished.stderr[-2000:]}")
    return wall, cpu, json.loads(finished.stdout.strip().splitlines()[-1])["compute_s"]


def _fetch(sim_id: str) -> None:
    """What the bot does on a cache hit: find the entry and read the PNG."""
    from sims import cache

    entry = cache.lookup(sim_id)
    if entry is None:
        raise RuntimeError(f"{sim_id} vanished from the cache during the bench")
    entry.png()


def bench_rows(sim_ids: list[str], repeat: int) -> list[dict[str, Any]]:
    """Per sim: cold in a fresh process (budgeted), cold in this warm process, cached fetch.

    CPU time is reported next to wall time for the warm-process run: on a shared machine it is
    the steadier figure.
    """
    from sims import cache

    rows = []
    for sim_id in sim_ids:
        fresh = [cold_in_fresh_process(sim_id) for _ in range(repeat)]
        fresh_walls = [wall for wall, _, _ in fresh]
        warm, _, warm_cpu = _median_seconds(partial(cache.compute, sim_id), repeat)
        cache.get_or_compute(sim_id)  # make sure the entry exists before timing the fetch

        cached, _, _ = _median_seconds(partial(_fetch, sim_id), max(repeat, 5))
        cold = statistics.median(fresh_walls)
        rows.append(
            {
                "id": sim_id,
                "cold_median_s": cold,
                "cold_max_s": max(fresh_walls),
                "cold_cpu_median_s": statistics.median(cpu for _, cpu, _ in fresh),
                "cold_compute_median_s": statistics.median(inside for _, _, inside in fresh),
                "warm_process_median_s": warm,
                "warm_process_cpu_median_s": warm_cpu,
                "cached_median_ms": cached * 1000,
                "cold_ok": cold <= COLD_BUDGET_S,
                "cached_ok": cached <= CACHED_BUDGET_S,
            }
        )
    return rows


def cmd_bench(args: argparse.Namespace) -> int:
    from sims import registry

    sim_ids = args.ids or registry.sim_ids()
    for sim_id in sim_ids:
        registry.get(sim_id)  # fail early on a typo
    start = time.perf_counter()
    import matplotlib  # noqa: F401  (warm the process: the budgets exclude these imports)
    import torch  # noqa: F401

    import_seconds = time.perf_counter() - start
    rows = bench_rows(sim_ids, args.repeat)
    cold_total = sum(row["warm_process_median_s"] for row in rows)
    summary = {
        "repeat": args.repeat,
        "import_torch_matplotlib_s": import_seconds,
        "cold_total_s": cold_total,
        "warm_all_estimate_s": cold_total + import_seconds,
        "budgets": {
            "cold_s": COLD_BUDGET_S,
            "cached_ms": CACHED_BUDGET_S * 1000,
            "warm_all_s": WARM_ALL_BUDGET_S,
        },
    }
    all_ok = all(row["cold_ok"] and row["cached_ok"] for row in rows) and (
        summary["warm_all_estimate_s"] < WARM_ALL_BUDGET_S
    )
    if args.json:
        print(json.dumps({"sims": rows, **summary}, indent=2))
    else:
        print(_bench_table(rows, summary))
    return 1 if args.check and not all_ok else 0


def _bench_table(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    width = max([len(row["id"]) for row in rows] + [3])
    lines = [
        (
            f"{'sim':<{width}}  cold, fresh process (s)        run+plot in it (s)  "
            "warm process (s)  cached (ms)"
        ),
        f"{'':<{width}}  median      max    CPU",
        (
            f"{'-' * width}  ---------------------------   ------------------  "
            "----------------  -----------"
        ),
    ]
    for row in rows:
        cold_flag = "" if row["cold_ok"] else " !"
        cached_flag = "" if row["cached_ok"] else " !"
        lines.append(
            f"{row['id']:<{width}}  {row['cold_median_s']:>6.2f}{cold_flag:2}  "
            f"{row['cold_max_s']:>7.2f}  {row['cold_cpu_median_s']:>5.2f}        "
            f"{row['cold_compute_median_s']:>18.2f}  "
            f"{row['warm_process_median_s']:>16.2f}  {row['cached_median_ms']:>9.2f}{cached_flag}"
        )
    lines.append(
        f"{len(rows)} sims, median of {summary['repeat']}. Cold = spawn a Python process, import "
        f"torch and matplotlib, run and plot, exit (budget {COLD_BUDGET_S:.0f} s; CPU = the "
        f"child's user + system time); warm process "
        f"= the same run in this process. `sims warm` estimate: {summary['cold_total_s']:.1f} s "
        f"+ imports {summary['import_torch_matplotlib_s']:.1f} s = "
        f"{summary['warm_all_estimate_s']:.1f} s (budget {WARM_ALL_BUDGET_S:.0f} s); '!' marks "
        f"a sim over budget ({CACHED_BUDGET_S * 1000:.0f} ms cached)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.cli")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sims", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
