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
A function counts with every part GCC made of it: its clones
(.constprop.N, .isra.N, .part.N) and its .cold part, each a range of its
own under its symbol name; logical_name() maps a part to its function.
"""

import json
import re
import sys

# The NAPI core that schedules and polls a NAPI, where the series adds
# its checks (what they cost with every feature off is the measure),
# and the scheduling helpers between them; not GRO or the drivers, but
# the functions elsewhere that hold the series' always-taken tests. The
# series' own helpers that these call out of line count too (absent
# from the base): a range that left them out would hide what they execute.
NAPI_CORE = ("napi_complete_done", "__napi_poll", "napi_poll", "net_rx_action",
             "napi_schedule_prep", "__napi_schedule", "__napi_schedule_irqoff",
             "____napi_schedule", "napi_watchdog", "busy_poll_stop", "napi_busy_loop",
             "__napi_busy_loop",
             "napi_irq_suspension_left", "napi_complete_done_slow", "napi_gro_flush_normal",
             "napi_arm_watchdog", "napi_disabled_or_disabling", "napi_schedule_prep_slow",
             "napi_watchdog_slow",
             # Outside the core, where the series adds a test every request
             # passes: virtqueue_napi_complete()'s suspension test (inlined
             # into virtio_net's polls) and ep_poll()'s suspend call.
             "virtqueue_napi_complete", "virtnet_poll", "virtnet_poll_tx", "ep_poll",
             "ep_busy_loop", "ep_suspend_napi_irqs", "ep_resume_napi_irqs")
# The series' own helpers among them: absent from the base by design, so
# left out when the two kernels' sets of counted functions are compared.
SERIES_HELPERS = ("napi_irq_suspension_left", "napi_complete_done_slow",
                  "napi_gro_flush_normal", "napi_arm_watchdog", "napi_disabled_or_disabling",
                  "napi_schedule_prep_slow", "napi_watchdog_slow",
                  "ep_suspend_napi_irqs", "ep_resume_napi_irqs")
MARKER = "__x64_sys_sethostname"
# What bench/qemu-plugin/napi_insn.c takes: MAX_SYMS ranges, names
# shorter than its 64-byte buffer: room for every function of NAPI_CORE
# with a clone or .cold part.
PLUGIN_MAX_SYMS = 64
PLUGIN_MAX_NAME = 63
# The suffixes GCC gives the parts it splits off or specialises.
GCC_PART = re.compile(r"(?P<function>[^.]+)(?:\.(?:constprop|isra|part|cold|lto_priv)(?:\.\d+)?)+")


def logical_name(symbol):
    """The function a System.map symbol is part of: "napi_poll.cold" and
    "__napi_poll.constprop.0" are napi_poll's and __napi_poll's."""
    m = GCC_PART.fullmatch(symbol)
    return m.group("function") if m else symbol


def text_symbols(lines):
    """(address, name) of System.map's text symbols, by address."""
    syms = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return sorted(syms)


def ranges(syms, names):
    """{symbol: (start, end)} of every part of the functions NAMES (see
    logical_name()), end the next higher symbol's address, and the names
    none of whose parts was found."""
    found, missing = {}, []
    by_function = {}
    for i, (_, symbol) in enumerate(syms):
        by_function.setdefault(logical_name(symbol), []).append(i)
    for name in names:
        parts = 0
        for i in by_function.get(name, []):
            start, symbol = syms[i]
            if symbol in found:
                continue
            end = next((a for a, _ in syms[i + 1:] if a > start), None)
            if end is not None:
                found[symbol] = (start, end)
                parts += 1
        if not parts:
            missing.append(name)
    return found, missing


def functions(found):
    """{function: [its symbols]} of ranges()' FOUND."""
    out = {}
    for symbol in found:
        out.setdefault(logical_name(symbol), []).append(symbol)
    return out


def plugin_option(plugin, out, syms):
    """The -plugin value, or raise ValueError without a marker or range."""
    marker, _ = ranges(syms, [MARKER])
    if not marker:
        raise ValueError(f"no {MARKER} in System.map")
    found, missing = ranges(syms, NAPI_CORE)
    if not found:
        raise ValueError("none of the NAPI core's functions in System.map")
    # The plugin refuses what it cannot hold: say which, here.
    if len(found) > PLUGIN_MAX_SYMS:
        raise ValueError(f"{len(found)} ranges, napi_insn.so counts at most {PLUGIN_MAX_SYMS}")
    too_long = [n for n in found if len(n) > PLUGIN_MAX_NAME]
    if too_long:
        raise ValueError(f"symbol names longer than napi_insn.so takes: {', '.join(too_long)}")
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
                       "functions": functions(found), "inlined_or_absent": missing}, f, indent=1)
    print(option)


if __name__ == "__main__":
    main(sys.argv)
