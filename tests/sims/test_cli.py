"""``trapbot sims``: the argparse wiring and each sub-command's output."""

import argparse
import json

import pytest

from sims import cli, registry

SIM = "pg_baseline"


@pytest.fixture
def fast_compute(monkeypatch):
    """Replace the simulation itself by a stub; the cache and the CLI stay real."""
    from sims import cache

    calls = []

    def stub(sim_id, config=None):
        calls.append(sim_id)
        return cache.Computed(
            metrics={"calls": float(len(calls))}, png=b"\x89PNG stub", seconds=0.001
        )

    monkeypatch.setattr(cache, "compute", stub)
    return calls


@pytest.fixture
def run_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRAPBOT_SIM_CACHE_DIR", str(tmp_path))
    parser = argparse.ArgumentParser(prog="trapbot")
    cli.register(parser.add_subparsers(dest="command"))

    def invoke(*argv):
        args = parser.parse_args(["sims", *argv])
        code = args.func(args)
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_list_json(run_cli):
    code, out, _ = run_cli("list", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [row["id"] for row in rows] == registry.sim_ids()
    by_id = {row["id"]: row for row in rows}
    assert by_id[SIM]["title"] == registry.title(SIM)
    assert by_id[SIM]["cards"] == registry.cards_for(SIM)


def test_list_text(run_cli):
    code, out, _ = run_cli("list")
    assert code == 0 and SIM in out and registry.title(SIM) in out


def test_run_json_then_cached_then_no_cache(run_cli, fast_compute, tmp_path):
    code, out, _ = run_cli("run", SIM, "--json")
    first = json.loads(out)
    assert code == 0
    assert set(first) == {"id", "metrics", "png", "seconds", "cached"}
    assert first["id"] == SIM and first["cached"] is False
    assert first["png"].startswith(str(tmp_path)) and first["png"].endswith(".png")
    second = json.loads(run_cli("run", SIM, "--json")[1])
    assert second["cached"] is True and second["metrics"] == first["metrics"]
    third = json.loads(run_cli("run", SIM, "--json", "--no-cache")[1])
    assert third["cached"] is False and fast_compute == [SIM, SIM]


def test_run_text_with_the_real_simulation(run_cli):
    code, out, _ = run_cli("run", SIM)
    assert code == 0 and "plot:" in out and "failures_up_no_baseline" in out


def test_run_unknown_id(run_cli):
    code, _, err = run_cli("run", "no_such_sim")
    assert code == 2 and "known ids" in err and SIM in err


def test_warm_reports_what_it_did(run_cli, fast_compute, monkeypatch):
    monkeypatch.setattr(registry, "sim_ids", lambda: [SIM])
    code, out, _ = run_cli("warm", "--jobs", "1")
    assert code == 0 and f"computed  {SIM}" in out and "1 computed, 0 already cached" in out
    code, out, _ = run_cli("warm", "--jobs", "1")
    assert f"cached    {SIM}" in out and "0 computed, 1 already cached" in out


def test_bench_json(run_cli, fast_compute):
    code, out, _ = run_cli("bench", "--json", "--repeat", "1", SIM)
    report = json.loads(out)
    assert code == 0
    [row] = report["sims"]
    assert row["id"] == SIM
    assert row["cold_median_s"] > 0 and row["cached_median_ms"] > 0
    assert report["repeat"] == 1 and "warm_all_estimate_s" in report


def test_bench_table(run_cli, fast_compute):
    code, out, _ = run_cli("bench", "--repeat", "1", SIM)
    assert code == 0 and SIM in out and "cold median" in out


def test_bare_sims_prints_usage(run_cli):
    code, _, err = run_cli()
    assert code == 2 and "list" in err
