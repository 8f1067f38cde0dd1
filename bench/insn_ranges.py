#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The arguments of bench/qemu-plugin/napi_insn.so for one kernel: the
NAPI core's functions as address ranges from its System.map, and the
marker (bench/include/window.h enters sethostname() at each window edge).

usage: insn_ranges.py SYSTEM_MAP PLUGIN OUT_JSONL [SYMBOLS_JSON]
prints the QEMU option value "PLUGIN,out=OUT_JSONL,mark=0x...,sym=..."
and writes to SYMBOLS_JSON which functions were found, their sizes and
which were not (inlined into their callers in this build: their
instructions count in the caller's range if that is one of ours).
"""

import json
import sys

# The NAPI core that schedules and polls a NAPI, where the series adds
# its checks (issue 29, item 4), and the scheduling helpers between them;
# not GRO or the drivers, which the series leaves alone. The series'
# own helpers that these call out of line count too (absent from the
# base): a range that left them out would hide what they execute.
NAPI_CORE = ("napi_complete_done", "__napi_poll", "napi_poll", "net_rx_action",
             "napi_schedule_prep", "__napi_schedule", "__napi_schedule_irqoff",
             "____napi_schedule", "napi_watchdog", "busy_poll_stop", "napi_busy_loop",
             "napi_irq_suspension_left", "napi_complete_done_slow")
MARKER = "__x64_sys_sethostname"


def text_symbols(lines):
    """(address, name) of System.map's text symbols, by address."""
    syms = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return sorted(syms)


def ranges(syms, names):
    """{name: (start, end)} of NAMES, end the next higher symbol's
    address, and the names not found."""
    found, missing = {}, []
    for name in names:
        at = [i for i, (_, n) in enumerate(syms) if n == name]
        if not at:
            missing.append(name)
            continue
        start = syms[at[0]][0]
        end = next((a for a, _ in syms[at[0] + 1:] if a > start), None)
        if end is None:
            missing.append(name)
        else:
            found[name] = (start, end)
    return found, missing


def plugin_option(plugin, out, syms):
    """The -plugin value, or raise ValueError without a marker or range."""
    marker, _ = ranges(syms, [MARKER])
    if not marker:
        raise ValueError(f"no {MARKER} in System.map")
    found, missing = ranges(syms, NAPI_CORE)
    if not found:
        raise ValueError("none of the NAPI core's functions in System.map")
    args = [plugin, f"out={out}", f"mark={marker[MARKER][0]:#x}"]
    args += [f"sym={n}:{s:#x}:{e:#x}" for n, (s, e) in found.items()]
    return ",".join(args), found, missing


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    with open(argv[1]) as f:
        syms = text_symbols(f)
    try:
        option, found, missing = plugin_option(argv[2], argv[3], syms)
    except ValueError as exc:
        sys.exit(f"insn_ranges.py: {exc}")
    if len(argv) == 5:
        with open(argv[4], "w") as f:
            json.dump({"found": {n: {"start": hex(s), "bytes": e - s} for n, (s, e) in found.items()},
                       "inlined_or_absent": missing}, f, indent=1)
    print(option)


if __name__ == "__main__":
    main(sys.argv)
