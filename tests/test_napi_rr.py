"""The benchmarks' C tools: bench/rr/napi_rr over loopback UDP (a client
that cannot keep its schedule gives up after a bounded time and reports
what it never sent), bench/memcached/mc_load against a stand-in
memcached, and their shared headers bench/include/hist.h and window.h
(the window edge lines, parsed by bench/benchlib.py)."""
import json
import os
import shutil
import socket
import socketserver
import subprocess
import threading
import time

import pytest

from conftest import FIXTURES, load_script

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")
RR = os.path.join(BENCH, "rr")
MEMCACHED = os.path.join(BENCH, "memcached")
SERVER, CLIENT = "127.0.0.2", "127.0.0.1"


def load_benchlib():
    return load_script("benchlib", os.path.join(BENCH, "benchlib.py"))


benchlib = load_benchlib()


def edges(stdout):
    """The window edge lines of a tool's STDOUT, by edge."""
    said = [benchlib.window_edge(line) for line in stdout.splitlines()]
    return {e["edge"]: e for e in said if e}


def build(directory, binary):
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    done = subprocess.run(["make", "-C", directory], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"{binary} does not build here: {done.stderr.strip()[-200:]}")
    return os.path.join(directory, binary)


@pytest.fixture(scope="module")
def napi_rr():
    return build(RR, "napi_rr")


@pytest.fixture(scope="module")
def mc_load():
    return build(MEMCACHED, "mc_load")


@pytest.fixture
def server(napi_rr):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((SERVER, 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([napi_rr, "server", "--transport", "udp", "--ifname", "lo",
                             "--addr", SERVER, "--port", str(port), "--poll", "block"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield port
    proc.terminate()
    proc.communicate(timeout=10)


def run_client(napi_rr, port, tmp_path, rate, duration, warmup, extra=()):
    result = tmp_path / "client.json"
    started = time.monotonic()
    done = subprocess.run([napi_rr, "client", "--transport", "udp", "--ifname", "lo",
                           "--src", CLIENT, "--dst", SERVER, "--port", str(port),
                           "--rate", str(rate), "--duration", str(duration),
                           "--warmup", str(warmup), "--poll", "block", "--json", str(result),
                           *extra],
                          check=True, capture_output=True, text=True, timeout=60)
    with open(result) as f:
        return json.load(f), time.monotonic() - started, done.stdout


def test_a_sender_a_whole_run_behind_gives_up(napi_rr, server, tmp_path):
    # 30 M requests in 0.6 s: the sender gives up after 2.2 s (twice the
    # run, plus 1 s), and would have to send 13.6 M a second to finish
    # (3 M pps on a 0.6 s schedule was finished in time by a fast host).
    client, took, _ = run_client(napi_rr, server, tmp_path, 50000000, 0.5, 0.1)
    assert client["unsent"] > 0
    assert client["sent"] + client["unsent"] == 25000000
    # The give-up time, the grace period (at most 2 s) and start-up.
    assert took < 2.2 + 2 + 3


def test_a_sender_on_schedule_sends_everything(napi_rr, server, tmp_path):
    client, _, stdout = run_client(napi_rr, server, tmp_path, 1000, 0.3, 0.1)
    assert (client["unsent"], client["sent"], client["lost"]) == (0, 300, 0)
    # The edges count from the start of the run; "end" comes once the
    # last request is sent, before the stragglers' grace period.
    start, end = edges(stdout)["start"], edges(stdout)["end"]
    assert end["ns"] > start["ns"]
    assert end["sent"] == client["warmup_sent"] + client["sent"] == 400
    assert 0 <= start["sent"] <= end["sent"]
    assert 0 <= start["served"] <= end["served"] <= end["sent"]


def test_on_off_sends_bursts_at_the_rate_with_gaps(napi_rr, server, tmp_path):
    # 100 ms bursts at 1000 pps, 100 ms apart, over 0.5 s: bursts at 0,
    # 200 and 400 ms; the first one is the warm-up.
    client, took, _ = run_client(napi_rr, server, tmp_path, 1000, 0.4, 0.1,
                                 ["--on-off", "100:100"])
    assert (client["on_ms"], client["off_ms"]) == (100, 100)
    assert (client["warmup_sent"], client["sent"], client["unsent"]) == (100, 200, 0)
    # The last burst ends at 0.5 s: the gaps are not sent through.
    assert took >= 0.5


def test_on_off_is_a_client_option_with_both_times(napi_rr):
    for args in (["client", "--on-off", "100"], ["client", "--on-off", "0:100"],
                 ["server", "--on-off", "100:100"]):
        done = subprocess.run([napi_rr, *args, "--transport", "udp", "--ifname", "lo",
                               "--src", CLIENT, "--dst", SERVER, "--port", "9", "--rate", "1",
                               "--duration", "1"], capture_output=True, text=True)
        assert done.returncode != 0 and "on-off" in done.stderr


def build_headers_check(tmp_path):
    """tests/fixtures/bench_headers_check.c built against bench/include."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    check = str(tmp_path / "bench_headers_check")
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-I", os.path.join(BENCH, "include"),
                    "-o", check, os.path.join(FIXTURES, "bench_headers_check.c")],
                   check=True, capture_output=True, text=True)
    return check


def test_hist_and_window_headers(tmp_path):
    check = build_headers_check(tmp_path)
    done = subprocess.run([check], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
    assert edges(done.stdout)["start"]["sent"] == 3
    assert edges(done.stdout)["start"]["served"] == 2


class StandInMemcached(socketserver.StreamRequestHandler):
    """Just enough of the text protocol for mc_load: every key missing,
    every set stored."""

    def handle(self):
        for line in self.rfile:
            if line.startswith(b"set "):
                self.rfile.read(int(line.split()[4]) + 2)
                self.wfile.write(b"STORED\r\n")
            else:
                self.wfile.write(b"END\r\n")


@pytest.fixture
def memcached_port():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), StandInMemcached)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


# mc_load's --json keys (its header comment), which bench/mc_sweep.py and
# bench/bench_report.py read.
MC_LOAD_KEYS = {"mode", "server", "port", "threads", "connections", "depth", "keys",
                "value_size", "get_ratio", "seed", "warmup_s", "duration_s", "timeout_ms",
                "target_qps", "achieved_qps", "sent", "received", "gets", "sets", "get_hits",
                "get_misses", "errors", "error_replies", "lost", "dropped", "timeouts",
                "conn_failures", "latency_us", "lag_us", "lag_growing", "saturated",
                "latency_hist", "lag_hist"}


def test_mc_load_edges_and_json(mc_load, memcached_port, tmp_path):
    result = tmp_path / "mc.json"
    done = subprocess.run([mc_load, "--server", "127.0.0.1", "--port", str(memcached_port),
                           "--qps", "400", "--duration", "0.5", "--warmup", "0.2",
                           "--keys", "100", "--connections", "2", "--threads", "2",
                           "--json", str(result)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with open(result) as f:
        load = json.load(f)
    assert set(load) == MC_LOAD_KEYS
    assert set(load["latency_us"]) == {"avg", "p50", "p95", "p99", "p999", "max"}
    assert set(load["lag_us"]) == {"avg", "p99", "max", "first_half_avg", "second_half_avg"}
    lat = load["latency_us"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p999"] <= lat["max"]
    assert load["sent"] > 0 and load["errors"] == 0
    # Counted from the start of the run (not the preload), all threads.
    start, end = edges(done.stdout)["start"], edges(done.stdout)["end"]
    # 0.5 s apart, each printed on waking up a little late.
    assert 0.45e9 < end["ns"] - start["ns"] < 1.5e9
    assert 0 <= start["served"] <= start["sent"] < end["sent"]
    assert start["served"] < end["served"] <= end["sent"]


@pytest.mark.parametrize("mark", ["1", None])
def test_window_edges_enter_the_instruction_counter_marker_only_when_asked(tmp_path, mark):
    """BENCH_INSN_MARK=1: each edge enters sethostname() with an invalid
    length (the QEMU plugin's marker), which changes nothing."""
    if not shutil.which("strace"):
        pytest.skip("no strace")
    check = build_headers_check(tmp_path)
    env = dict(os.environ, BENCH_INSN_MARK=mark) if mark else \
        {k: v for k, v in os.environ.items() if k != "BENCH_INSN_MARK"}
    done = subprocess.run(["strace", "-f", "-e", "trace=sethostname", check],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout
    calls = [line for line in done.stderr.splitlines() if "sethostname(" in line]
    assert len(calls) == (len(edges(done.stdout)) if mark else 0), done.stderr
    assert all("= -1 EINVAL" in c or "= -1 EPERM" in c for c in calls), calls


def test_busy_thread_poller_runs_on_its_own_cpu(napi_rr, server, tmp_path):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    client, _, _ = run_client(napi_rr, server, tmp_path, 1000, 0.3, 0.1,
                              ["--poll", "busy-thread", "--busy-poll-usecs", "50",
                               "--poller-cpu", str(cpu)])
    assert client["poller_polls"] > 0 and client["poller_cpu"] == cpu
    client, _, _ = run_client(napi_rr, server, tmp_path, 1000, 0.3, 0.1)
    assert client["poller_cpu"] is None
    done = subprocess.run([napi_rr, "client", "--transport", "udp", "--ifname", "lo",
                           "--src", CLIENT, "--dst", SERVER, "--port", "9", "--rate", "1",
                           "--duration", "1", "--poller-cpu", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--poller-cpu needs --poll busy-thread" in done.stderr
