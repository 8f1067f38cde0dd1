"""bench/rr/napi_rr over loopback UDP: a client that cannot keep its
schedule gives up after a bounded time and reports what it never sent."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

RR = os.path.join(os.path.dirname(__file__), "..", "bench", "rr")
SERVER, CLIENT = "127.0.0.2", "127.0.0.1"


@pytest.fixture(scope="module")
def napi_rr():
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    build = subprocess.run(["make", "-C", RR], capture_output=True, text=True)
    if build.returncode:
        pytest.skip(f"napi_rr does not build here: {build.stderr.strip()[-200:]}")
    return os.path.join(RR, "napi_rr")


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


def run_client(napi_rr, port, tmp_path, rate, duration, warmup):
    result = tmp_path / "client.json"
    started = time.monotonic()
    subprocess.run([napi_rr, "client", "--transport", "udp", "--ifname", "lo",
                    "--src", CLIENT, "--dst", SERVER, "--port", str(port),
                    "--rate", str(rate), "--duration", str(duration),
                    "--warmup", str(warmup), "--poll", "block", "--json", str(result)],
                   check=True, capture_output=True, timeout=60)
    with open(result) as f:
        return json.load(f), time.monotonic() - started


def test_a_sender_a_whole_run_behind_gives_up(napi_rr, server, tmp_path):
    # 30 M requests in 0.6 s: the sender gives up after 2.2 s (twice the
    # run, plus 1 s), and would have to send 13.6 M a second to finish
    # (3 M pps on a 0.6 s schedule was finished in time by a fast host).
    client, took = run_client(napi_rr, server, tmp_path, 50000000, 0.5, 0.1)
    assert client["unsent"] > 0
    assert client["sent"] + client["unsent"] == 25000000
    # The give-up time, the grace period (at most 2 s) and start-up.
    assert took < 2.2 + 2 + 3


def test_a_sender_on_schedule_sends_everything(napi_rr, server, tmp_path):
    client, _ = run_client(napi_rr, server, tmp_path, 1000, 0.3, 0.1)
    assert (client["unsent"], client["sent"], client["lost"]) == (0, 300, 0)
