"""tools/napi-audit.py on tests/fixtures/napi-audit: a few fake drivers
that each show some of the patterns; clean.c shows none, with near misses
(comments, strings, macros, napi_complete_done(), RTNL taken, an early
unlock, napi_if_scheduled_mark_missed(), a page pool without a NAPI)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, TOP

SCRIPT = os.path.join(TOP, "tools", "napi-audit.py")
TREE = os.path.join(FIXTURES, "napi-audit")

ACME = "drivers/net/ethernet/acme/"
ACMEVF = "drivers/net/ethernet/acme/acmevf"
LEGACY = "drivers/net/ethernet/acme/acme_legacy.c"
CLEAN = "drivers/net/ethernet/clean/clean.c"
THREADER = "drivers/net/wireless/threader/"
FAKEIB = "drivers/infiniband/ulp/fakeib/"
STORMY = "drivers/net/ethernet/stormy/stormy.c"
UNSLOT = "drivers/net/ethernet/unslot/unslot.c"
PAIRQ = "drivers/net/ethernet/pairq/pairq.c"

EXPECTED = {
    "napi-enable": [FAKEIB, ACME, LEGACY, ACMEVF, CLEAN, THREADER],
    "sync-no-disable": [ACME, ACMEVF],
    "enable-atomic": [LEGACY, THREADER],
    "outside-rtnl": [ACME, LEGACY, THREADER],
    "del-no-disable": [ACME],
    "napi-complete": [FAKEIB, LEGACY],
    "xsk-wakeup-schedule": [ACME],
    "netpoll-controller": [LEGACY, ACMEVF, STORMY],
    "netpoll-controller-rings": [ACMEVF],
    "page-pool-napi": [FAKEIB, ACME],
    "dev-set-threaded": [THREADER],
    "tx-only-napi": [FAKEIB, ACME],
    "no-busy-poll": [FAKEIB, ACME, THREADER],
    "complete-ignored": [FAKEIB, ACME, LEGACY, STORMY],
    "poll-after-complete": [STORMY],
    "irq-handler-rings": [STORMY],
    "netpoll-disable-irq": [STORMY],
    "link-outside-rtnl": [STORMY],
    "set-irq-shared": [STORMY],
    "poll-this-cpu": [STORMY],
    "napi-state-read": [STORMY],
    "consume-fixed-budget": [STORMY],
    "tx-napi-plain-add": [UNSLOT],
    "napi-per-queue-collision": [ACME, PAIRQ],
}


def audit(tmp_path, *args):
    out = tmp_path / "audit.json"
    run = subprocess.run([sys.executable, SCRIPT, *args, "--json", str(out)],
                         capture_output=True, text=True)
    results = json.loads(out.read_text()) if out.exists() else None
    return run, results


def by_id(results):
    return {p["id"]: p for p in results["patterns"]}


@pytest.fixture(scope="module")
def fixture_audit(tmp_path_factory):
    return audit(tmp_path_factory.mktemp("audit"), "--tree", TREE)


def test_every_pattern_counts_its_drivers(fixture_audit):
    run, results = fixture_audit
    assert run.returncode == 0, run.stderr
    found = {pid: p["drivers"] for pid, p in by_id(results).items()}
    assert found == {pid: sorted(drivers) for pid, drivers in EXPECTED.items()}
    for p in results["patterns"]:
        assert p["count"] == len(p["drivers"]) == len(p["sites"])
        assert p["description"] and p["approximate"]


def test_clean_driver_shows_no_pattern(fixture_audit):
    _, results = fixture_audit
    shown = [p["id"] for p in results["patterns"] if CLEAN in p["drivers"]]
    assert shown == ["napi-enable"]


def test_sites_name_functions_and_helpers(fixture_audit):
    _, results = fixture_audit
    patterns = by_id(results)
    assert patterns["outside-rtnl"]["sites"][ACME] == [
        "drivers/net/ethernet/acme/acme_main.c:33 acme_reset_task(): "
        "work: acme_napi_stop() -> napi_disable"]
    assert patterns["enable-atomic"]["sites"][LEGACY] == [
        "drivers/net/ethernet/acme/acme_legacy.c:34 legacy_open(): napi_enable",
        "drivers/net/ethernet/acme/acme_legacy.c:46 legacy_set_ringparam(): "
        "legacy_start() -> napi_enable"]
    assert patterns["del-no-disable"]["sites"][ACME] == [
        "drivers/net/ethernet/acme/acme_main.c:74 acme_remove(): tx_napi"]
    assert patterns["netpoll-controller-rings"]["sites"][ACMEVF] == [
        "drivers/net/ethernet/acme/acme_vf.c:40 acmevf_netpoll(): acmevf_clean_tx_irq"]
    threader = patterns["outside-rtnl"]["sites"][THREADER]
    assert not any("slot_reset" in site for site in threader)
    assert any("threader_error_detected(): pci-error: napi_disable" in s for s in threader)


def test_sites_of_the_review_patterns(fixture_audit):
    _, results = fixture_audit
    sites = {pid: p["sites"].get(STORMY) for pid, p in by_id(results).items()}
    poll = "drivers/net/ethernet/stormy/stormy.c:15 stormy_poll()"
    assert sites["complete-ignored"] == [f"{poll}: napi_complete_done"]
    assert sites["poll-after-complete"] == [f"{poll}: virtqueue_poll"]
    assert sites["poll-this-cpu"] == [f"{poll}: this_cpu_ptr"]
    assert sites["napi-state-read"] == [f"{poll}: NAPI_STATE_SCHED"]
    assert sites["consume-fixed-budget"] == [f"{poll}: napi_consume_skb(..., 64)"]
    assert sites["irq-handler-rings"] == [
        "drivers/net/ethernet/stormy/stormy.c:33 stormy_intr(): stormy_clean_tx_ring"]
    assert sites["link-outside-rtnl"] == [
        "drivers/net/ethernet/stormy/stormy.c:51 stormy_relink_task(): "
        "work: netif_queue_set_napi"]


def test_sites_of_the_config_slot_patterns(fixture_audit):
    """The poll a variable holds (unslot's, as ena's), a helper's poll
    parameter and its TX and RX callers (pairq's, as gve's), and the
    chain from .set_channels to the re-add."""
    _, results = fixture_audit
    patterns = by_id(results)
    assert patterns["tx-napi-plain-add"]["sites"][UNSLOT] == [
        "drivers/net/ethernet/unslot/unslot.c:36 unslot_init_napis(): "
        "netif_napi_add(..., unslot_xdp_tx_poll)"]
    collisions = patterns["napi-per-queue-collision"]["sites"]
    assert collisions[ACME] == [
        "drivers/net/ethernet/acme/acme_main.c:64 acme_probe(): "
        "rx: netif_napi_add(&priv->ring.napi)",
        "drivers/net/ethernet/acme/acme_main.c:64 acme_probe(): "
        "tx: netif_napi_add_tx(&priv->ring.tx_napi)"]
    pairq = "drivers/net/ethernet/pairq/pairq.c"
    assert collisions[PAIRQ] == [
        f"{pairq}:38 pairq_tx_start_ring(): tx: pairq_add_napi()",
        f"{pairq}:43 pairq_rx_start_ring(): rx: pairq_add_napi()",
        f"{pairq}:66 pairq_set_channels(): set_channels: pairq_start_rings() -> "
        "pairq_rx_start_ring() -> pairq_add_napi() -> netif_napi_add"]


def test_table_truncates_lists(tmp_path):
    run, results = audit(tmp_path, "--tree", TREE, "--max", "2")
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("napi-enable "))
    assert line.split() == ["napi-enable", "6", "infiniband/ulp/fakeib/,",
                            "net/ethernet/acme/,", "..."]
    assert len(by_id(results)["napi-enable"]["drivers"]) == 6


def test_git_revision_reads_the_same(tmp_path, fixture_audit):
    repo = tmp_path / "repo"
    shutil.copytree(TREE, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@invalid"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "base"], check=True)
    subprocess.run(git + ["tag", "base-test"], check=True)
    (repo / "drivers/net/ethernet/clean/clean.c").write_text("/* not committed */\n")
    run, results = audit(tmp_path, "--git", str(repo), "--rev", "base-test")
    assert run.returncode == 0, run.stderr
    assert results["patterns"] == fixture_audit[1]["patterns"]


def test_expect_names_the_patterns_whose_drivers_changed(tmp_path, fixture_audit):
    """--expect: the check make test makes against the audit that
    docs/testing.md's table is generated from."""
    results = json.loads(json.dumps(fixture_audit[1]))  # a copy to change
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(results))
    run, _ = audit(tmp_path, "--tree", TREE, "--expect", str(expected), "--name", "fixtures")
    assert run.returncode == 0, run.stderr
    patterns = by_id(results)
    patterns["napi-complete"]["drivers"].append("drivers/net/gone.c")
    patterns["tx-napi-plain-add"]["drivers"] = []
    expected.write_text(json.dumps(results))
    run, fresh = audit(tmp_path, "--tree", TREE, "--expect", str(expected), "--name", "fixtures")
    assert run.returncode == 3
    assert run.stderr.splitlines() == [
        "napi-complete: -drivers/net/gone.c",
        f"tx-napi-plain-add: +{UNSLOT}",
        f"napi-audit: the drivers of napi-complete, tx-napi-plain-add differ from {expected}: "
        "regenerate it and docs/testing.md's table (make docs)"]
    assert fresh["source"] == "fixtures"


def test_exit_status_without_napi_drivers(tmp_path):
    (tmp_path / "drivers").mkdir()
    run, results = audit(tmp_path, "--tree", str(tmp_path))
    assert run.returncode == 1 and "calls napi_enable()" in run.stderr
    assert by_id(results)["napi-enable"]["count"] == 0
    run, _ = audit(tmp_path, "--git", str(tmp_path / "nothing"))
    assert run.returncode == 2
