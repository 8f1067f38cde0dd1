#!/usr/bin/env python3
"""Audit how the drivers of a kernel tree use the NAPI API.

For each way of using the NAPI API that the series has to cope with
(PATTERNS below: napi_synchronize() without napi_disable(),
napi_enable() under a spinlock, NAPI changes outside RTNL, ...), count
the drivers under drivers/ that show it and name them, with the
functions (sites) in the JSON output.

A driver is a module built from drivers/: a single-object module is
named by its source file (net/virtio_net.c), a composite module by the
directory of the Makefile that links it (net/ethernet/intel/e1000e/), as
dir/module when the module is not named after its directory
(net/ethernet/realtek/r8169). A file no Makefile names (a header) goes
to the module of the same name or the single module of the nearest
directory with a Makefile, else to that directory.

This is grep with C function boundaries, not a compiler: comments,
string literals and preprocessor lines are blanked, then a brace
matcher splits each file into functions. Every pattern is a heuristic
("approximate" in the JSON says how): calls through macros or more than
one helper are missed, #if branches are all read as code, and the
order of lock and unlock calls is textual, not control flow.

Usage: napi-audit.py (--tree DIR | --git REPO [--rev REV]) [--name NAME]
                     [--json FILE] [--expect FILE]
--git reads a revision (the workbench's base tag) without a checkout.
Prints a table; --json writes one object per pattern (id, description,
approximate, count, drivers, sites per driver). --expect compares the
drivers of each pattern with those of an earlier --json (the one
docs/testing.md's table is generated from). Exit status: 0 done,
1 no driver calls napi_enable() (not a kernel tree?), 2 cannot read it,
3 the drivers differ from --expect's.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

# Files that may hold NAPI code; every file of a driver that has one is read.
NAPI_HINT = re.compile(r"napi|NAPI_STATE")

# Comments, string and character literals, preprocessor lines (with their
# continuations and comments): blanked so that braces and calls in them
# do not count.
NOISE = re.compile(r"""^[ \t]*\#(?:\\\n|/\*.*?\*/|[^\n])*
                     | //[^\n]*
                     | /\*.*?\*/
                     | "(?:\\.|[^"\\\n])*"
                     | '(?:\\.|[^'\\\n])*'""", re.M | re.S | re.X)
# Function-like attributes that may stand before a function's name.
ATTRIBUTES = {"__attribute__", "__printf", "__section", "__aligned",
              "__alloc_size", "__must_hold", "__acquires", "__releases"}
CALL = re.compile(r"\b(\w+)\s*\(")


def blank(text):
    """TEXT without NOISE; line numbers are kept, offsets are not."""
    return NOISE.sub(lambda m: "\n" * m.group().count("\n") or " ", text)


class Function:
    def __init__(self, path, code, decl, start, end):
        self.path, self.code, self.decl = path, code, decl
        self.head, self.body = code[decl:start], code[start:end]
        self.name = function_name(self.head)
        self.calls = set(CALL.findall(self.body))

    def site(self, what=""):
        lead = len(self.head) - len(self.head.lstrip())
        line = self.code.count("\n", 0, self.decl + lead) + 1
        return f"{self.path}:{line} {self.name}(){what and ': ' + what}"

    def block(self, pos):
        """The span of the innermost { } block of the body around POS."""
        depth, start = 0, 0
        for i in range(pos - 1, -1, -1):
            depth += {"}": 1, "{": -1}.get(self.body[i], 0)
            if depth < 0:
                start = i
                break
        depth = 0
        for i in range(pos, len(self.body)):
            depth += {"{": 1, "}": -1}.get(self.body[i], 0)
            if depth < 0:
                return start, i
        return start, len(self.body)

    def call_sites(self, name):
        return [m.start() for m in re.finditer(rf"\b{name}\s*\(", self.body)]


def function_name(head):
    """The name of the function HEAD declares, None if it is no function."""
    flat = head
    while True:  # collapse nested parentheses
        inner = re.sub(r"\((?:[^()]|\(\))*\)", "()", flat)
        if inner == flat:
            break
        flat = inner
    if "=" in flat or not re.search(r"\)[\s\w]*(?:\(\)[\s\w]*)*$", flat):
        return None
    for name in re.findall(r"(\w+)\s*\(\)", flat):
        if name not in ATTRIBUTES:
            return name
    return None


def functions(path, code):
    """The function definitions of CODE (blanked): a brace matcher."""
    depth, decl = 0, 0
    for m in re.finditer(r"[{};]", code):
        c = m.start()
        if code[c] == "{":
            if depth == 0:
                body = c
            depth += 1
        elif code[c] == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                if function_name(code[decl:body]):
                    yield Function(path, code, decl, body, c + 1)
                decl = c + 1
        elif depth == 0:
            decl = c + 1


# Reading the tree: a checked-out directory or a git revision.

class Tree:
    def __init__(self, root):
        self.root = root

    def names(self):
        for top, dirs, files in os.walk(os.path.join(self.root, "drivers")):
            dirs.sort()
            for name in sorted(files):
                yield os.path.relpath(os.path.join(top, name), self.root)

    def read(self, paths):
        for path in paths:
            with open(os.path.join(self.root, path), "rb") as fp:
                yield path, fp.read().decode("utf-8", "replace")

    def hinted(self, paths):
        return [path for path, text in self.read(paths) if NAPI_HINT.search(text)]


class GitTree:
    def __init__(self, repo, rev):
        self.repo, self.rev = repo, rev

    def git(self, *args, input=None, ok=(0,)):
        run = subprocess.run(["git", "-C", self.repo, *args], input=input,
                             capture_output=True)
        if run.returncode not in ok:
            raise OSError(f"git {args[0]}: {run.stderr.decode().strip()}")
        return run.stdout

    def names(self):
        out = self.git("ls-tree", "-r", "-z", "--name-only", self.rev, "--", "drivers")
        return out.decode().split("\0")[:-1]

    def read(self, paths):
        paths = list(paths)
        request = "".join(f"{self.rev}:{p}\n" for p in paths).encode()
        out = self.git("cat-file", "--batch", input=request)
        pos = 0
        for path in paths:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            pos = header_end + 1 + size + 1
            yield path, out[header_end + 1:pos - 1].decode("utf-8", "replace")

    def hinted(self, paths):
        out = self.git("grep", "-l", "-z", "-E", NAPI_HINT.pattern, self.rev,
                       "--", "drivers/*.[ch]", ok=(0, 1))
        found = {name.split(":", 1)[1] for name in out.decode().split("\0")[:-1]}
        return [p for p in paths if p in found]


# Which driver (module) a file belongs to, from the Makefiles.

def parse_makefile(path, text):
    """(object stem, module) pairs: module None for a single-object one."""
    text = re.sub(r"#[^\n]*", "", text.replace("\\\n", " "))
    here = os.path.dirname(path)
    for lhs, rhs in re.findall(r"^\s*([\w$()-]+)\s*[:+]?=(.*)$", text, re.M):
        m = re.fullmatch(r"([\w-]+?)-(?:y|m|objs|\$\(CONFIG_\w+\))", lhs)
        if not m:
            continue
        for obj in re.findall(r"(\S+)\.o\b", rhs):
            stem = os.path.normpath(os.path.join(here, obj))
            yield stem, None if m.group(1) == "obj" else os.path.join(here, m.group(1))


class Modules:
    def __init__(self, makefiles):
        self.single, self.member = set(), {}
        self.by_dir = defaultdict(set)  # Makefile directory -> module names
        for path, text in makefiles:
            self.by_dir.setdefault(os.path.dirname(path), set())
            for stem, module in parse_makefile(path, text):
                if module:
                    self.member[stem] = module
                else:
                    self.single.add(stem)
                self.by_dir[os.path.dirname(path)].add(module or stem)
        self.single -= set(self.member.values())  # obj-y += composite.o

    def driver(self, path):
        stem = os.path.splitext(path)[0]
        module = self.member.get(stem) or (stem if stem in self.single else None)
        if not module:  # a header, or a file linked in some other way
            d = os.path.dirname(path)
            while d not in self.by_dir and d.count("/") > 1:
                d = os.path.dirname(d)
            mods = self.by_dir.get(d, set())
            composite = mods - self.single
            if stem in mods:
                module = stem
            elif len(mods) == 1 or len(composite) == 1:
                module = min(composite or mods)
            else:
                return d + "/"
        return self.name(module)

    def name(self, module):
        if module in self.single:
            return module + ".c"
        d, base = os.path.split(module)
        return d + "/" if os.path.basename(d) == base else module


# A driver's functions, and the patterns: each check takes a Driver and
# returns its sites, "file:line function(): detail".

class Driver:
    def __init__(self, name):
        self.name, self.files, self.funcs = name, {}, defaultdict(list)
        # The directory of the module's Makefile; the family: the drivers
        # there, such as a core module and its bus glue modules.
        self.dir = name[:-1] if name.endswith("/") else os.path.dirname(name)
        self.family = [self]

    def add(self, path, text):
        code = blank(text)
        self.files[path] = code
        for f in functions(path, code):
            self.funcs[f.name].append(f)

    def all_funcs(self):
        return [f for fs in self.funcs.values() for f in fs]

    def callers(self, names):
        return [f for f in self.all_funcs() if f.calls & names]

    def calls(self, names):
        return any(f.calls & names for f in self.all_funcs())

    def refs(self, pattern):
        """Names assigned or passed by PATTERN (one group) in any file."""
        return {m for code in self.files.values() for m in re.findall(pattern, code)}

    def helpers(self, names, guard=None):
        """Name -> the calls matching NAMES (a regex) of the functions of
        this driver that make such calls and do not match GUARD."""
        found = defaultdict(set)
        for g in self.all_funcs():
            if not (guard and guard.search(g.body)):
                found[g.name] |= {c for c in g.calls if names.fullmatch(c)}
        return {name: calls for name, calls in found.items() if calls}


def reaches(f, names, helpers):
    """F's calls matching NAMES, directly ('call') or through one of
    HELPERS ('helper() -> call')."""
    hits = {c for c in f.calls if names.fullmatch(c)}
    for h in f.calls & helpers.keys() - {f.name}:
        hits |= {f"{h}() -> {c}" for c in helpers[h]}
    return sorted(hits)


ENABLE_DISABLE = {"napi_enable", "napi_disable"}
NAPI_ADD = {"netif_napi_add", "netif_napi_add_weight", "netif_napi_add_tx",
            "netif_napi_add_tx_weight"}
NAPI_DEL = {"netif_napi_del", "__netif_napi_del"}
NAPI_CONTROL = re.compile("|".join(sorted(ENABLE_DISABLE | NAPI_ADD | NAPI_DEL)))
NAPI_SCHEDULE = re.compile(r"(?:__)?napi_schedule\w*")
ENABLE_DISABLE_RE = re.compile("|".join(sorted(ENABLE_DISABLE)))
ATOMIC = re.compile(r"\b(?:(?:raw_)?(?:spin|read|write)_(lock|unlock)"
                    r"(?:_irqsave|_irqrestore|_irq|_bh|_nested)?"
                    r"|local_irq_(save|disable|restore|enable))\s*\("
                    r"|\b(\w+)\s*\(")
EARLY_EXIT = re.compile(r"[^;]*;\s*(?:return|goto)\b")
RTNL = re.compile(r"\brtnl_(?:lock|trylock|lock_killable)\s*\(|\bASSERT_RTNL\b")
PM_REFS = (r"\.(?:suspend|resume|freeze|thaw|restore|poweroff|runtime_suspend"
           r"|runtime_resume|\w+_noirq|suspend_late|resume_early)\s*=\s*(\w+)")
PM_MACRO = re.compile(r"\b\w*PM_OPS\s*\(([^;]*?)\)")
PCI_ERR_REFS = (r"\.(?:error_detected|slot_reset|mmio_enabled|reset_prepare"
                r"|reset_done)\s*=\s*(\w+)")


def sync_no_disable(drv):
    """A napi_synchronize() call no napi_disable() call of the same or an
    enclosing block goes with (sky2: disable if one port, else synchronize)."""
    sites = []
    for f in drv.callers({"napi_synchronize"}):
        blocks = [f.block(pos) for pos in f.call_sites("napi_disable")]
        if any(not any(a < pos < b for a, b in blocks)
               for pos in f.call_sites("napi_synchronize")):
            sites.append(f.site())
    return sites


def enable_atomic(drv):
    helpers = drv.helpers(ENABLE_DISABLE_RE)
    sites = []
    for f in drv.all_funcs():
        if not f.calls & (ENABLE_DISABLE | helpers.keys()):
            continue
        held = 0
        for m in ATOMIC.finditer(f.body):
            call = m.group(3)
            if call:
                if held and call in ENABLE_DISABLE:
                    sites.append(f.site(call))
                elif held and call in helpers and call != f.name:
                    sites += [f.site(f"{call}() -> {c}") for c in sorted(helpers[call])]
            elif m.group(1) == "lock" or m.group(2) in ("save", "disable"):
                held += 1
            elif not EARLY_EXIT.match(f.body, m.end()):
                held = max(held - 1, 0)
    return sites


def call_args(code, name):
    """The argument lists of the calls of NAME (a regex) in CODE, split at
    their top-level commas."""
    for m in re.finditer(rf"\b(?:{name})\s*\(", code):
        depth, start, args = 0, m.end(), []
        for i in range(m.end(), len(code)):
            c = code[i]
            if c == "(":
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif c in ",)" and not depth:
                args.append(code[start:i].strip())
                start = i + 1
                if c == ")":
                    yield args
                    break
            elif c == ";":
                break


def passed(drv, name, index):
    """The function names a driver passes as argument INDEX of NAME."""
    return {args[index] for code in drv.files.values() for args in call_args(code, name)
            if len(args) > index and re.fullmatch(r"\w+", args[index])}


def _outside_rtnl(drv, names):
    helpers = drv.helpers(names, RTNL)
    pci_error = drv.refs(PCI_ERR_REFS)
    pm = drv.refs(PM_REFS)
    for code in drv.files.values():
        for args in PM_MACRO.findall(code):
            pm |= set(re.findall(r"\w+", args))
    sites = []
    for f in drv.all_funcs():
        if re.search(r"struct\s+work_struct\s*\*", f.head):
            kind = "work"
        elif f.name in pci_error:
            kind = "pci-error"
        elif f.name in pm:
            kind = "pm"
        else:
            continue
        if RTNL.search(f.body):
            continue
        sites += [f.site(f"{kind}: {hit}") for hit in reaches(f, names, helpers)]
    return sites


def outside_rtnl(drv):
    return _outside_rtnl(drv, NAPI_CONTROL)


def link_outside_rtnl(drv):
    return _outside_rtnl(drv, re.compile(r"netif_queue_set_napi|netif_napi_set_irq"))


def napi_members(f, call):
    """The struct members (or variables) F passes to CALL: 'tx_napi' for
    napi_disable(&priv->tx_napi[i])."""
    args = re.findall(rf"\b{call}\s*\(([^;]*?)\)\s*;", f.body)
    return {re.findall(r"\w+", re.sub(r"\[[^]]*\]", "", a) or "?")[-1] for a in args}


def del_no_disable(drv):
    disabled = {m for d in drv.family for f in d.callers({"napi_disable"})
                for m in napi_members(f, "napi_disable")}
    return [f.site(m) for f in drv.callers(NAPI_DEL)
            for call in NAPI_DEL for m in napi_members(f, call) if m not in disabled]


def napi_complete(drv):
    return [f.site() for f in drv.callers({"napi_complete"})]


def xsk_wakeup_schedule(drv):
    sites = []
    helpers = drv.helpers(NAPI_SCHEDULE)
    for name in sorted(drv.refs(r"\.ndo_xsk_wakeup\s*=\s*(\w+)")):
        for f in drv.funcs.get(name, []):
            sites += [f.site(hit) for hit in reaches(f, NAPI_SCHEDULE, helpers)]
    return sites


def poll_controllers(drv):
    """The functions a NAPI driver sets as .ndo_poll_controller."""
    if not drv.calls(NAPI_ADD | ENABLE_DISABLE):
        return []
    return [f for name in sorted(drv.refs(r"\.ndo_poll_controller\s*=\s*(\w+)"))
            for f in drv.funcs.get(name, [])]


def netpoll_controller(drv):
    return [f.site() for f in poll_controllers(drv)]


RING_WORK = re.compile(r"\w*(?:clean|reap|replenish|refill|fill_rx|receive|tx_intr|rx_intr)\w*")


def netpoll_controller_rings(drv):
    """The poll controller does ring work itself rather than leave it to
    the NAPI poll netpoll runs next, which skips a disabled NAPI."""
    return [f.site(call) for f in poll_controllers(drv) for call in sorted(f.calls)
            if RING_WORK.fullmatch(call)]


def page_pool_napi(drv):
    sites = []
    for f in drv.all_funcs():
        if "page_pool_params" not in f.body:
            continue
        init = re.search(r"page_pool_params[^;]*?\{[^;]*?\.napi\s*=", f.body)
        names = re.findall(r"struct\s+page_pool_params\s*\*?\s*(\w+)", f.body + f.head)
        assign = any(re.search(rf"\b{n}\s*(?:\.|->)\s*napi\s*=[^=]", f.body)
                     for n in names)
        if init or assign:
            sites.append(f.site())
    return sites


def dev_set_threaded(drv):
    return [f.site() for f in drv.callers({"dev_set_threaded"})]


def tx_only_napi(drv):
    return [f.site() for f in drv.callers(NAPI_ADD - {"netif_napi_add", "netif_napi_add_weight"})]


def no_busy_poll(drv):
    return [f.site() for f in drv.all_funcs()
            if re.search(r"\bNAPIF?_STATE_NO_BUSY_POLL\b", f.body)] + tx_only_napi(drv)


def napi_enable(drv):
    return [f.site() for f in drv.callers({"napi_enable"})]


# A statement call: nothing reads what it returns.
COMPLETE_STATEMENT = re.compile(r"(?:^|[;{})]|\belse)\s*(napi_complete(?:_done)?)\s*\(")


def complete_ignored(drv):
    return [f.site(m.group(1)) for f in drv.callers({"napi_complete", "napi_complete_done"})
            for m in COMPLETE_STATEMENT.finditer(f.body)]


RECHECK = re.compile(r"virtqueue_poll|virtqueue_enable_cb\w*|RING_FINAL_CHECK_FOR_\w+"
                     r"|hv_end_read\w*")


def poll_after_complete(drv):
    sites = []
    for f in drv.callers({"napi_complete", "napi_complete_done"}):
        first = min(f.call_sites("napi_complete_done") + f.call_sites("napi_complete"))
        sites += [f.site(c) for c in sorted(set(CALL.findall(f.body[first:])))
                  if RECHECK.fullmatch(c)]
    return sites


def napi_polls(drv):
    return [f for name in sorted(passed(drv, r"netif_napi_add\w*", 2))
            for f in drv.funcs.get(name, [])]


IRQ_REQUESTS = ((r"request_irq|request_threaded_irq", 1),
                (r"devm_request_irq|devm_request_threaded_irq|pci_request_irq", 2))


def irq_handlers(drv):
    return [f for call, index in IRQ_REQUESTS for name in sorted(passed(drv, call, index))
            for f in drv.funcs.get(name, [])]


def irq_handler_rings(drv):
    return [f.site(call) for f in irq_handlers(drv) for call in sorted(f.calls - {f.name})
            if RING_WORK.fullmatch(call)]


THIS_CPU = re.compile(r"this_cpu_ptr|this_cpu_read|raw_cpu_ptr|smp_processor_id"
                      r"|raw_smp_processor_id")


def poll_this_cpu(drv):
    return [f.site(call) for f in napi_polls(drv) for call in sorted(f.calls)
            if THIS_CPU.fullmatch(call)]


def napi_state_read(drv):
    return [f.site(bit) for f in drv.all_funcs()
            for bit in sorted(set(re.findall(r"\bNAPIF?_STATE_\w+", f.body)))
            if not bit.endswith("_NO_BUSY_POLL")]


def netpoll_disable_irq(drv):
    return [f.site("disable_irq") for f in poll_controllers(drv) if "disable_irq" in f.calls]


def consume_fixed_budget(drv):
    return [f.site(f"napi_consume_skb(..., {args[1]})") for f in drv.callers({"napi_consume_skb"})
            for args in call_args(f.body, "napi_consume_skb")
            if len(args) == 2 and re.fullmatch(r"[1-9]\d*", args[1])]


# The words (between underscores) of a name that say which way its NAPI
# carries packets: enic's wq is its transmit queue; rxtx says both ways.
TX_WORD = re.compile(r"tx\w*|\w*xmit\w*|xdp\w*|sq|wq")
RX_WORD = re.compile(r"\w*rx\w*|rq|recv\w*|receive\w*")
PLAIN_ADD = {"netif_napi_add", "netif_napi_add_weight"}


def direction(*names):
    """'tx' or 'rx' for the first of NAMES whose words say one way only."""
    for name in names:
        words = [w for w in name.lower().split("_") if w]
        tx = any(TX_WORD.fullmatch(w) for w in words)
        rx = any(RX_WORD.fullmatch(w) for w in words)
        if tx != rx:
            return "tx" if tx else "rx"
    return None


def parameters(f):
    """F's parameter names; a function pointer's (int (*poll)(...)) too."""
    names = []
    for arg in next(call_args(f.head, f.name), []):
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", arg)
        words = re.findall(r"\w+", arg)
        names.append(pointer[1] if pointer else words[-1] if words else "")
    return names


def poll_functions(drv, f, arg):
    """The poll functions ARG (an add call's argument in F) names: itself,
    what F assigns to it (ena's napi_handler), or, for a parameter of F,
    what F's callers pass (gve_add_napi()'s gve_poll)."""
    if arg in drv.funcs or not re.fullmatch(r"\w+", arg):
        return {arg}
    assigned = set(re.findall(rf"\b{arg}\s*=\s*(\w+)\s*;", f.body))
    if assigned or arg not in parameters(f):
        return assigned or {arg}
    index = parameters(f).index(arg)
    passed_in = {args[index] for g in drv.callers({f.name}) if g.name != f.name
                 for args in call_args(g.body, f.name) if len(args) > index}
    return passed_in or {arg}


def napi_adds(drv):
    """(function, add call, NAPI argument, poll functions) per NAPI add."""
    for f in drv.callers(NAPI_ADD):
        for call in sorted(f.calls & NAPI_ADD):
            for args in call_args(f.body, call):
                if len(args) >= 3:
                    yield f, call, args[1], poll_functions(drv, f, args[2])


def tx_napi_plain_add(drv):
    return [f.site(f"{call}(..., {poll})") for f, call, _, polls in napi_adds(drv)
            if call in PLAIN_ADD for poll in sorted(polls) if direction(poll) == "tx"]


def napi_direction(call, napi, polls):
    """'tx' for a TX-only NAPI (netif_napi_add_tx*(), or named so by its
    poll function or its struct member: sq[i].napi), 'rx' if so named."""
    if call not in PLAIN_ADD:
        return "tx"
    member = "_".join(re.findall(r"[A-Za-z]\w*", re.sub(r"\[[^]]*\]", "", napi)))
    return direction(*sorted(polls), member)


def napi_directions(drv):
    """(function, 'tx' or 'rx', what) per NAPI add. An add of no named way
    in a helper that both TX- and RX-named functions call (gve_add_napi())
    counts once per caller, with the caller's way."""
    found = []
    for f, call, napi, polls in napi_adds(drv):
        way = napi_direction(call, napi, polls)
        callers = [g for g in drv.callers({f.name}) if g.name != f.name]
        if not way and {"tx", "rx"} <= {direction(g.name) for g in callers}:
            found += [(g, direction(g.name) or "rx", f"{f.name}()") for g in callers]
        else:
            found.append((f, way or "rx", f"{call}({napi})"))
    return found


def tx_and_rx_napis(drv):
    adds = napi_directions(drv)
    ways = [way for _, way, _ in adds]
    if "tx" in ways and len(ways) > ways.count("tx") > 0:
        return [f.site(f"{way}: {what}") for f, way, what in adds]
    return []


def call_chain(drv, start, names, depth=8):
    """The shortest chain of the driver's functions from START to a call
    of one of NAMES: [START, ..., call], None if none within DEPTH calls."""
    seen, chains = {start}, [[start]]
    for _ in range(depth):
        longer = []
        for chain in chains:
            for f in drv.funcs.get(chain[-1], []):
                hits = sorted(f.calls & names)
                if hits:
                    return chain + hits[:1]
                for callee in sorted(f.calls & drv.funcs.keys() - seen):
                    seen.add(callee)
                    longer.append(chain + [callee])
        chains = longer
    return None


def readded_on_reconfig(drv):
    sites = []
    for op, name in sorted(drv.refs(r"\.(set_channels|set_ringparam)\s*=\s*(\w+)")):
        added = call_chain(drv, name, NAPI_ADD)
        if added and call_chain(drv, name, NAPI_DEL):
            how = " -> ".join([f"{c}()" for c in added[1:-1]] + added[-1:])
            sites += [f.site(f"{op}: {how}") for f in drv.funcs[name]]
    return sites


def napi_per_queue_collision(drv):
    return tx_and_rx_napis(drv) + readded_on_reconfig(drv)


def set_irq_shared(drv):
    if not any("IRQF_SHARED" in code for code in drv.files.values()):
        return []
    return [f.site() for f in drv.callers({"netif_napi_set_irq"})]


# id, check, description, why approximate
PATTERNS = [
    ("napi-enable", napi_enable,
     "calls napi_enable() (the NAPI drivers, for scale)",
     "calls through macros are missed"),
    ("sync-no-disable", sync_no_disable,
     "napi_synchronize() without napi_disable() in the function (then "
     "cleans or frees rings with the NAPI enabled)",
     "per function: a napi_disable() in the same or an enclosing block "
     "covers it, one in a caller or helper is not seen; the ring cleanup "
     "after it is not checked"),
    ("enable-atomic", enable_atomic,
     "napi_enable()/napi_disable() between spin_lock*()/read_lock*()/write_lock*()/"
     "local_irq_save()/local_irq_disable() and the unlock",
     "textual order in one function, not control flow (an unlock followed by "
     "return or goto is taken as an early exit); calls directly or through "
     "one helper; locks taken by callers and driver lock wrappers are not seen"),
    ("outside-rtnl", outside_rtnl,
     "napi_enable()/napi_disable()/netif_napi_add*()/netif_napi_del() in a "
     "workqueue handler, PM callback or PCI error handler that takes no RTNL",
     "directly or through one helper of the driver; callbacks are found by "
     "a struct work_struct * parameter, .suspend/.resume/.freeze/... and "
     ".error_detected/.slot_reset/... assignments in any ops struct "
     "(mac80211's .resume runs under RTNL) and *PM_OPS() arguments; RTNL "
     "taken deeper down or by the caller is not seen"),
    ("del-no-disable", del_no_disable,
     "netif_napi_del() of a NAPI (struct member or variable name) that no "
     "napi_disable() of the driver's directory names",
     "by name, not by object: one disabled 'napi' member covers every "
     "'napi' member; a NAPI deleted without ever being enabled needs no "
     "napi_disable(); disables outside drivers/ (inline helpers) are not seen"),
    ("napi-complete", napi_complete,
     "napi_complete() instead of napi_complete_done()",
     "calls through macros are missed"),
    ("xsk-wakeup-schedule", xsk_wakeup_schedule,
     "the function set as .ndo_xsk_wakeup calls napi_schedule*()/__napi_schedule*()",
     "directly or through one helper; drivers that raise an interrupt instead "
     "(a software IRQ, napi_if_scheduled_mark_missed()) are not counted"),
    ("netpoll-controller", netpoll_controller,
     "NAPI driver setting .ndo_poll_controller (netpoll runs its handler; "
     "every NAPI driver's NAPIs are polled by netpoll anyway)",
     "the assignment may be under an #ifdef that is off"),
    ("netpoll-controller-rings", netpoll_controller_rings,
     "the .ndo_poll_controller of a NAPI driver calls ring work itself "
     "(a function named *clean*, *reap*, *replenish*, *refill*, *fill_rx*, "
     "*receive*, *tx_intr*, *rx_intr*): netpoll may call it between the "
     "driver's own down and up, on rings it freed",
     "by name and direct calls only: IRQ handlers so named that only "
     "schedule the NAPI count (i40e's *msix_clean_rings*, pasemi's *_intr), "
     "ring work inside the IRQ handler a controller calls does not"),
    ("page-pool-napi", page_pool_napi,
     "page_pool bound to a NAPI: .napi set in a struct page_pool_params",
     "designated initializer or assignment to a page_pool_params variable "
     "in the same function"),
    ("dev-set-threaded", dev_set_threaded,
     "the driver calls dev_set_threaded()",
     "calls through macros are missed"),
    ("tx-only-napi", tx_only_napi,
     "TX-only NAPIs: netif_napi_add_tx()/netif_napi_add_tx_weight()",
     "calls through macros are missed"),
    ("no-busy-poll", no_busy_poll,
     "NAPIs with NAPI_STATE_NO_BUSY_POLL (set_bit() of it, or tx-only-napi)",
     "any use of the bit counts, also a test of it"),
    ("complete-ignored", complete_ignored,
     "napi_complete_done()/napi_complete() called as a statement: what it "
     "returns (false while the NAPI is busy polled, deferred or suspended) "
     "is ignored, and the driver re-enables its IRQ whatever it says",
     "a statement call counts; what the driver does after it is not "
     "checked (some re-enable nothing)"),
    ("poll-after-complete", poll_after_complete,
     "a function that calls napi_complete_done()/napi_complete() and then "
     "reads the ring again (virtqueue_poll(), virtqueue_enable_cb*(), "
     "RING_FINAL_CHECK_FOR_*(), hv_end_read*()): the ring must outlive the "
     "poll, also when the driver frees it after napi_disable() alone",
     "textual order in one function, by those names only; other re-checks "
     "(a descriptor read) are not seen"),
    ("irq-handler-rings", irq_handler_rings,
     "a hard IRQ handler (request_irq() and its variants) calls ring work "
     "itself (the *clean*/*reap*/... names of netpoll-controller-rings): "
     "late interrupts, netpoll and IRQ suspension reach it",
     "by name and direct calls only; handlers set up through tables or "
     "macros are not seen"),
    ("netpoll-disable-irq", netpoll_disable_irq,
     "the .ndo_poll_controller of a NAPI driver calls disable_irq(), which "
     "may sleep, while netpoll runs it with IRQs off",
     "direct calls only; disable_irq() in a helper is not seen"),
    ("link-outside-rtnl", link_outside_rtnl,
     "netif_queue_set_napi()/netif_napi_set_irq() in a workqueue handler, PM "
     "callback or PCI error handler that takes no RTNL",
     "as outside-rtnl"),
    ("set-irq-shared", set_irq_shared,
     "netif_napi_set_irq() in a driver that requests an IRQ with IRQF_SHARED "
     "(an INTx line another device shares)",
     "per driver: whether the IRQ passed is the shared one is not checked"),
    ("poll-this-cpu", poll_this_cpu,
     "a NAPI poll function (passed to netif_napi_add*()) reads per-CPU state "
     "(this_cpu_ptr(), smp_processor_id(), ...): wrong when a kthread or "
     "another CPU's busy poll runs it",
     "the poll function only, not its helpers"),
    ("napi-state-read", napi_state_read,
     "driver code names NAPI state bits (NAPI_STATE_*/NAPIF_STATE_* other "
     "than NO_BUSY_POLL): SCHED means something else under busy polling",
     "any use of a bit counts, also a set_bit()"),
    ("consume-fixed-budget", consume_fixed_budget,
     "napi_consume_skb() with a constant non-zero budget: netpoll's poll "
     "(budget 0, IRQs off) then frees into the NAPI skb cache",
     "literal budgets only; a variable that is never 0 is not seen"),
    ("tx-napi-plain-add", tx_napi_plain_add,
     "a NAPI whose poll function is named for TX or XDP (words tx*, *xmit*, "
     "xdp*, sq, wq) added with plain netif_napi_add()/netif_napi_add_weight(), "
     "not netif_napi_add_tx(): it has a NAPI ID, and a per-NAPI config "
     "conversion that gives only the RX NAPIs a slot (ena's XDP TX NAPIs) "
     "leaves it with a new ID and default settings after every down/up",
     "by name: a TX poll named otherwise (*_clean, *_complete) is missed, one "
     "so named that also receives counts; the poll is the argument, what the "
     "adding function assigns to it or what its callers pass for it"),
    ("napi-per-queue-collision", napi_per_queue_collision,
     "several NAPIs per queue index (a TX NAPI added apart from the RX or "
     "combined ones: mlx4, stmmac, virtio_net, gve), or NAPIs deleted and "
     "re-added under .set_channels/.set_ringparam: a per-NAPI config "
     "conversion must give each NAPI its own slot, the same one after the "
     "re-add",
     "TX by netif_napi_add_tx*() or by the words of the poll function or "
     "NAPI member (as tx-napi-plain-add, also sq[i].napi); any other NAPI "
     "counts as RX; NAPIs of another module of the directory are not "
     "paired; the re-add is followed up to 8 calls deep through the "
     "driver's own functions, not through function pointers"),
]


def audit(tree):
    names = list(tree.names())
    makefiles = [n for n in names if os.path.basename(n) in ("Makefile", "Kbuild")]
    modules = Modules(tree.read(makefiles))
    sources = defaultdict(list)
    for name in names:
        if name.endswith((".c", ".h")):
            sources[modules.driver(name)].append(name)
    # Every file of a driver one of whose files mentions NAPI: the
    # helpers its NAPI code calls may be elsewhere.
    drivers = {d: Driver(d) for d in {modules.driver(p) for p in tree.hinted(
        [p for fs in sources.values() for p in fs])}}
    for path, text in tree.read(p for d in sorted(drivers) for p in sources[d]):
        drivers[modules.driver(path)].add(path, text)
    families = defaultdict(list)
    for drv in drivers.values():
        families[drv.dir].append(drv)
    for drv in drivers.values():
        drv.family = families[drv.dir]
    results = []
    for pid, check, description, approximate in PATTERNS:
        sites = {}
        for name in sorted(drivers):
            found = check(drivers[name])
            if found:
                sites[name] = sorted(set(found))
        results.append({"id": pid, "description": description,
                        "approximate": approximate, "count": len(sites),
                        "drivers": sorted(sites), "sites": sites})
    return results


DRIVER = ("a module built from drivers/, named by its source file (single "
          "object) or its Makefile's directory (composite; dir/module if not "
          "named after it)")


def table(results, source, limit):
    lines = [f"NAPI API use by the drivers of {source}",
             f"driver: {DRIVER}; paths relative to drivers/",
             "", f"{'pattern':20} {'drivers':>7}  which"]
    for r in results:
        shown = [d.removeprefix("drivers/") for d in r["drivers"][:limit]]
        more = ", ..." if r["count"] > limit else ""
        lines.append(f"{r['id']:20} {r['count']:7}  {', '.join(shown)}{more}")
    lines.append("\nEvery count is a heuristic ('approximate' in --json says how):")
    lines += [f"  {r['id']}: {r['description']}" for r in results]
    return "\n".join(lines)


def differences(results, expected):
    """'id: +added -gone' for each pattern whose drivers are not those of
    EXPECTED (an earlier --json), also for patterns only one of them has."""
    before = {p["id"]: set(p["drivers"]) for p in expected["patterns"]}
    found = []
    for r in results:
        now, then = set(r["drivers"]), before.pop(r["id"], set())
        changes = [f"+{d}" for d in sorted(now - then)] + [f"-{d}" for d in sorted(then - now)]
        if changes:
            found.append(f"{r['id']}: {' '.join(changes)}")
    return found + [f"{pid}: no longer audited" for pid in before]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--tree", help="a checked-out kernel tree")
    src.add_argument("--git", metavar="REPO", help="a kernel git repository")
    ap.add_argument("--rev", default="HEAD", help="revision of --git (default HEAD)")
    ap.add_argument("--name", help="what the output calls the tree (default: its source)")
    ap.add_argument("--json", metavar="FILE", help="write the full results here")
    ap.add_argument("--expect", metavar="FILE", help="fail if the drivers differ from this --json's")
    ap.add_argument("--max", type=int, default=8, help="drivers listed per pattern")
    args = ap.parse_args()
    if args.tree:
        tree, source = Tree(args.tree), args.tree
    else:
        tree, source = GitTree(args.git, args.rev), f"{args.rev} in {args.git}"
    source = args.name or source
    try:
        results = audit(tree)
    except OSError as e:
        print(f"napi-audit: cannot read {source}: {e}", file=sys.stderr)
        return 2
    # Flushed first: the table and the messages may share a file.
    print(table(results, source, args.max), flush=True)
    if args.json:
        with open(args.json, "w") as fp:
            json.dump({"source": source, "driver": DRIVER, "patterns": results},
                      fp, indent=1)
            fp.write("\n")
    if not next(r["count"] for r in results if r["id"] == "napi-enable"):
        print(f"napi-audit: no driver in {source} calls napi_enable()", file=sys.stderr)
        return 1
    if args.expect:
        with open(args.expect) as fp:
            changed = differences(results, json.load(fp))
        if changed:
            print("\n".join(changed), file=sys.stderr)
            print(f"napi-audit: the drivers of {', '.join(c.split(':')[0] for c in changed)} "
                  f"differ from {args.expect}: regenerate it and docs/testing.md's table "
                  "(make docs)", file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
