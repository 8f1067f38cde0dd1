"""bench/qemu-plugin/napi_insn.so in QEMU itself: a 64 KiB firmware whose
loop runs a known number of instructions between two passes over a
marker; the plugin's snapshots must count them exactly, and it must
refuse malformed arguments."""
import json
import os
import shutil
import subprocess
import time

import pytest

PLUGIN_DIR = os.path.join(os.path.dirname(__file__), "..", "bench", "qemu-plugin")
QEMU = shutil.which("qemu-system-x86_64")

# Real mode, loaded at 0xf0000; the reset vector jumps to 0xf0100.
#   f0100: xor bx, bx
#   f0102: nop                 <- the marker, entered on each pass
#   f0103: jmp f0106           (ends the marker's block)
#   f0106: mov cx, 1000        <- "setup": 1 instruction per pass
#   f0109: dec cx; jnz f0109   <- "loop": 2000 instructions per pass
#   f010c: inc bx; cmp bx, 2; jnz f0102
#   f0112: hlt; jmp f0112
FIRMWARE = {0x0100: "31db", 0x0102: "90eb0190", 0x0106: "b9e803", 0x0109: "4975fd",
            0x010c: "4383fb0275f0", 0x0112: "f4ebfd", 0xfff0: "ea000100f0"}


@pytest.fixture(scope="module")
def plugin():
    if not QEMU or not shutil.which("gcc"):
        pytest.skip("no qemu-system-x86_64 or gcc")
    subprocess.run(["make", "-C", PLUGIN_DIR], check=True, capture_output=True)
    return os.path.abspath(os.path.join(PLUGIN_DIR, "napi_insn.so"))


def qemu_argv(plugin_args, firmware):
    return [QEMU, "-M", "pc", "-accel", "tcg", "-display", "none", "-nodefaults",
            "-bios", firmware, "-plugin", plugin_args]


def test_counts_exactly_between_marks(plugin, tmp_path):
    image = bytearray(b"\xf4" * 0x10000)
    for offset, code in FIRMWARE.items():
        image[offset:offset + len(code) // 2] = bytes.fromhex(code)
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(image)
    out = tmp_path / "insn.jsonl"
    qemu = subprocess.Popen(qemu_argv(f"{plugin},out={out},mark=0xf0102,"
                                      "sym=loop:0xf0109:0xf010c,sym=setup:0xf0106:0xf0109",
                                      str(firmware)), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while '"mark": 2' not in (out.read_text() if out.exists() else ""):
            assert time.monotonic() < deadline and qemu.poll() is None, "no second mark"
            time.sleep(0.05)
        # The second pass ends in hlt microseconds later; QEMU's exit
        # (SIGTERM) writes the last snapshot.
        time.sleep(1)
    finally:
        qemu.terminate()
        qemu.communicate(timeout=30)
    snaps = [json.loads(line) for line in out.read_text().splitlines()]
    assert [s.get("mark") for s in snaps] == [1, 2, None]
    assert snaps[1]["insns"] == {"loop": [2000], "setup": [1]}
    # After the second pass, counted at QEMU's exit.
    assert snaps[2]["exit"] == 3 and snaps[2]["insns"] == {"loop": [4000], "setup": [2]}


@pytest.mark.parametrize("args,error", [
    ("mark=0x10,sym=a:0x1000", "bad sym=a:0x1000"),
    ("sym=a:0x1000:0x2000", "out=, mark= and at least one sym= are required"),
    ("mark=0x10,sym=a:0x2000:0x1000", "bad sym=a:0x2000:0x1000"),
    ("mark=0x10,sym=a:0x1000:0x2000,colour=red", "unknown argument colour=red")])
def test_refuses_malformed_arguments(plugin, tmp_path, args, error):
    done = subprocess.run(["timeout", "30"] + qemu_argv(f"{plugin},out={tmp_path / 'o.jsonl'},{args}",
                                                        "/dev/null"), capture_output=True, text=True)
    assert done.returncode not in (0, 124)
    assert error in done.stderr
