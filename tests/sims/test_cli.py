"""``trapbot sims``: the argparse wiring and each sub-command's output, on real simulations."""

import argparse
import json
from pathlib import Path

import pytest

from sims import cache, cli, registry


@pytest.fixture
def run_cli(cache_dir, capsys):
    parser = argparse.ArgumentParser(prog="trapbot")
    cli.register(parser.add_subparsers(dest="command"))

    def invoke(*argv):
        args = parser.parse_args(["sims", *argv])
        code = args.func(args)
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_list_json(run_cli, fast_sim):
    code, out, _ = run_cli("list", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [row["id"] for row in rows] == registry.sim_ids()
    by_id = {row["id"]: row for row in rows}
    assert by_id[fast_sim]["title"] == registry.title(fast_sim)
    assert by_id[fast_sim]["cards"] == registry.cards_for(fast_sim)


def test_list_text(run_cli, fast_sim):
    code, out, _ = run_cli("list")
    assert code == 0 and fast_sim in out and registry.title(fast_sim) in out


def test_run_json_then_cached_then_no_cache(run_cli, fast_sim, cache_dir, entry_files):
    code, out, _ = run_cli("run", fast_sim, "--json")
    first = json.loads(out)
    assert code == 0
    assert set(first) == {"id", "metrics", "png", "seconds", "cached"}
    assert first["id"] == fast_sim and first["cached"] is False
    assert first["png"].startswith(str(cache_dir)) and first["png"].endswith(".png")
    png = Path(first["png"])
    computed_inode = png.stat().st_ino

    code, out, _ = run_cli("run", fast_sim, "--json")
    second = json.loads(out)
    assert code == 0 and second["cached"] is True
    assert second["metrics"] == first["metrics"] and second["png"] == first["png"]
    assert second["seconds"] == first["seconds"]  # the stored compute time
    assert png.stat().st_ino == computed_inode  # read, not rewritten

    code, out, _ = run_cli("run", fast_sim, "--json", "--no-cache")
    third = json.loads(out)
    assert code == 0 and third["cached"] is False and third["png"] == first["png"]
    assert png.stat().st_ino != computed_inode  # recomputed and replaced
    assert len(entry_files(fast_sim)) == 2  # still one entry


def test_run_text(run_cli, fast_sim):
    code, out, _ = run_cli("run", fast_sim)
    entry = cache.lookup(fast_sim)
    assert code == 0 and entry is not None
    assert f"plot: {entry.png_path}" in out and "computed in" in out
    assert entry.metrics and all(f"  {name} = " in out for name in entry.metrics)
    code, out, _ = run_cli("run", fast_sim)
    assert code == 0 and f"{fast_sim} (cache)" in out


def test_run_unknown_id(run_cli, fast_sim):
    code, _, err = run_cli("run", "no_such_sim")
    assert code == 2 and "known ids" in err and fast_sim in err


def test_warm_reports_what_it_did(run_cli, fast_sim, seed_cache):
    already = len(seed_cache(fast_sim))
    code, out, _ = run_cli("warm", "--jobs", "1")
    assert code == 0 and f"computed  {fast_sim}" in out
    assert f"1 computed, {already} already cached" in out
    code, out, _ = run_cli("warm", "--jobs", "1")
    assert code == 0 and f"cached    {fast_sim}" in out
    assert f"0 computed, {already + 1} already cached" in out


def test_bench_json(run_cli, fast_sim):
    code, out, _ = run_cli("bench", "--json", "--repeat", "1", fast_sim)
    report = json.loads(out)
    assert code == 0
    [row] = report["sims"]
    assert row["id"] == fast_sim
    assert row["cold_median_s"] > 0 and row["cached_median_ms"] > 0
    # The cold figure is a fresh process: it includes the imports the warm run does not pay.
    assert row["cold_median_s"] > row["cold_compute_median_s"] > 0
    assert row["cold_cpu_median_s"] > 0
    assert row["warm_process_median_s"] > 0
    assert report["repeat"] == 1 and "warm_all_estimate_s" in report
    assert cache.lookup(fast_sim) is not None  # the bench left the entry it timed


def test_bench_table(run_cli, fast_sim, seed_cache):
    seed_cache()  # the entry exists, so the bench computes only its one cold run
    code, out, _ = run_cli("bench", "--repeat", "1", fast_sim)
    assert code == 0 and fast_sim in out and "fresh process" in out


def test_bare_sims_prints_usage(run_cli):
    code, _, err = run_cli()
    assert code == 2 and "list" in err
