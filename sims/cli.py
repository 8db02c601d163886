"""``trapbot sims ...``: list, run, warm and benchmark the simulations.

The bot's CLI calls ``register(subparsers)`` and then ``args.func(args)``; every sub-command
sets ``func`` to a handler that returns the exit code. ``python -m sims.cli ...`` works too.

    trapbot sims list [--json]              ids, titles and the cards that use each sim
    trapbot sims run ID [--json] [--no-cache]
    trapbot sims warm [--jobs 2]            compute every sim missing from the cache
    trapbot sims bench [--json] [--repeat 3] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def _fetch(sim_id: str) -> None:
    """What the bot does on a cache hit: find the entry and read the PNG."""
    from sims import cache

    entry = cache.lookup(sim_id)
    if entry is None:
        raise RuntimeError(f"{sim_id} vanished from the cache during the bench")
    entry.png()


def bench_rows(sim_ids: list[str], repeat: int) -> list[dict[str, Any]]:
    """Cold (cache bypassed) and cached-fetch times per sim, in this already warm process.

    CPU time is reported next to wall time: on a shared machine it is the steadier figure.
    """
    from sims import cache

    rows = []
    for sim_id in sim_ids:
        cold, cold_times, cold_cpu = _median_seconds(partial(cache.compute, sim_id), repeat)
        cache.get_or_compute(sim_id)  # make sure the entry exists before timing the fetch

        cached, _, _ = _median_seconds(partial(_fetch, sim_id), max(repeat, 5))
        rows.append(
            {
                "id": sim_id,
                "cold_median_s": cold,
                "cold_max_s": max(cold_times),
                "cold_cpu_median_s": cold_cpu,
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
    cold_total = sum(row["cold_median_s"] for row in rows)
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
        f"{'sim':<{width}}  cold median (s)  cold max (s)  cold CPU (s)  cached (ms)",
        f"{'-' * width}  ---------------  ------------  ------------  -----------",
    ]
    for row in rows:
        cold_flag = "" if row["cold_ok"] else " !"
        cached_flag = "" if row["cached_ok"] else " !"
        lines.append(
            f"{row['id']:<{width}}  {row['cold_median_s']:>13.3f}{cold_flag:2}  "
            f"{row['cold_max_s']:>12.3f}  {row['cold_cpu_median_s']:>12.3f}  "
            f"{row['cached_median_ms']:>9.2f}{cached_flag}"
        )
    lines.append(
        f"{len(rows)} sims, median of {summary['repeat']}; cold total {summary['cold_total_s']:.1f} s"
        f" + imports {summary['import_torch_matplotlib_s']:.1f} s = "
        f"{summary['warm_all_estimate_s']:.1f} s for `sims warm` (budget "
        f"{WARM_ALL_BUDGET_S:.0f} s); '!' marks a sim over budget "
        f"({COLD_BUDGET_S:.0f} s cold, {CACHED_BUDGET_S * 1000:.0f} ms cached)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.cli")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sims", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
