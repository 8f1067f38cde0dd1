// SPDX-License-Identifier: GPL-2.0
/*
 * napi_insn: a QEMU TCG plugin that counts the guest instructions executed
 * inside given kernel symbol ranges, per vCPU, and writes a snapshot of
 * the counts each time the guest executes a marker instruction.
 *
 * TCG has no PMU, so perf in the guest cannot count instructions; the
 * emulator can, exactly: every instruction of a translated block runs
 * when the block runs (interrupts are taken between blocks).  The bench
 * uses it for the series' cost with every feature off: instructions in
 * the NAPI core per request, base kernel against patched kernel
 * (docs/benchmarks.md, "Instructions in the NAPI core").
 *
 * Arguments (-plugin napi_insn.so,ARG=VALUE,...):
 *   out=FILE                  where the snapshots go, one JSON line each
 *   mark=0xADDR               the marker: a kernel address that only the
 *                             benchmark's window edges execute
 *   sym=NAME:0xSTART:0xEND    a range to count, [START, END); repeatable
 *
 * A snapshot line:
 *   {"mark": N, "vcpu": V, "insns": {"NAME": [vCPU 0's count, ...], ...}}
 * counts from boot; the reader subtracts two snapshots.
 *
 * Debian ships QEMU without the plugin header: the few declarations of
 * the documented plugin API used here are written out below.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN_EXPORT __attribute__((visibility("default")))

/* The plugin API (docs/devel/tcg-plugins.rst); version 2 is the oldest
 * QEMU 10 accepts and has every call used here.
 */
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

PLUGIN_EXPORT int qemu_plugin_version = 2;

#define MAX_SYMS 64
#define MAX_VCPUS 64

struct sym {
	char name[64];
	uint64_t start, end;
};

/* What one translated block adds when it runs: COUNT[i] instructions to
 * symbol SYM[i].  Blocks are retranslated now and then; each translation
 * gets its own, never freed (a few bytes per block of the NAPI core).
 */
struct tb_share {
	unsigned int n;
	unsigned char sym[MAX_SYMS];
	uint32_t count[MAX_SYMS];
};

static struct sym syms[MAX_SYMS];
static unsigned int nr_syms;
static uint64_t mark_addr;
static FILE *out;
static uint64_t marks;
/* Written with atomics: under multi-threaded TCG each vCPU is a thread. */
static uint64_t counts[MAX_VCPUS][MAX_SYMS];
static unsigned int nr_vcpus_seen;

static int sym_of(uint64_t addr)
{
	for (unsigned int i = 0; i < nr_syms; i++)
		if (addr >= syms[i].start && addr < syms[i].end)
			return i;
	return -1;
}

static void tb_exec(unsigned int vcpu, void *udata)
{
	const struct tb_share *share = udata;

	if (vcpu >= MAX_VCPUS)
		return;
	if (vcpu >= __atomic_load_n(&nr_vcpus_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&nr_vcpus_seen, vcpu + 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < share->n; i++)
		__atomic_fetch_add(&counts[vcpu][share->sym[i]], share->count[i], __ATOMIC_RELAXED);
}

static void snapshot(unsigned int vcpu, const char *what)
{
	uint64_t n = __atomic_add_fetch(&marks, 1, __ATOMIC_RELAXED);
	unsigned int vcpus = __atomic_load_n(&nr_vcpus_seen, __ATOMIC_RELAXED);

	/* Snapshots are rare (two per measured window): a lock-free print
	 * is not worth it, but the line must be whole.
	 */
	flockfile(out);
	fprintf(out, "{\"%s\": %" PRIu64 ", \"vcpu\": %u, \"insns\": {", what, n, vcpu);
	for (unsigned int s = 0; s < nr_syms; s++) {
		fprintf(out, "%s\"%s\": [", s ? ", " : "", syms[s].name);
		for (unsigned int v = 0; v < vcpus; v++)
			fprintf(out, "%s%" PRIu64, v ? ", " : "",
				__atomic_load_n(&counts[v][s], __ATOMIC_RELAXED));
		fputs("]", out);
	}
	fputs("}}\n", out);
	fflush(out);
	funlockfile(out);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	(void)udata;
	snapshot(vcpu, "mark");
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct tb_share share = { 0 };

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		int s = sym_of(vaddr);
		unsigned int j;

		if (vaddr == mark_addr)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec, QEMU_PLUGIN_CB_NO_REGS, NULL);
		if (s < 0)
			continue;
		for (j = 0; j < share.n && share.sym[j] != s; j++)
			;
		if (j == share.n) {
			share.sym[j] = s;
			share.n++;
		}
		share.count[j]++;
	}
	if (share.n) {
		struct tb_share *copy = malloc(sizeof(*copy));

		if (!copy)
			abort();
		*copy = share;
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, copy);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	snapshot(0, "exit");
	fclose(out);
}

static int parse_sym(const char *arg)
{
	struct sym *s = &syms[nr_syms];
	const char *colon = strchr(arg, ':');
	char *end;

	if (nr_syms == MAX_SYMS || !colon || (size_t)(colon - arg) >= sizeof(s->name))
		return -1;
	memcpy(s->name, arg, colon - arg);
	s->name[colon - arg] = '\0';
	s->start = strtoull(colon + 1, &end, 0);
	if (*end != ':')
		return -1;
	s->end = strtoull(end + 1, &end, 0);
	if (*end || s->end <= s->start)
		return -1;
	nr_syms++;
	return 0;
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else if (!strncmp(argv[i], "mark=", 5)) {
			mark_addr = strtoull(argv[i] + 5, NULL, 0);
		} else if (!strncmp(argv[i], "sym=", 4)) {
			if (parse_sym(argv[i] + 4)) {
				fprintf(stderr, "napi_insn: bad sym=%s (NAME:0xSTART:0xEND, at most %d)\n",
					argv[i] + 4, MAX_SYMS);
				return -1;
			}
		} else {
			fprintf(stderr, "napi_insn: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!path || !mark_addr || !nr_syms) {
		fprintf(stderr, "napi_insn: out=, mark= and at least one sym= are required\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
