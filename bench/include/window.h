/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The edge line of a measured window, one protocol for bench/rr/napi_rr.c
 * and bench/memcached/mc_load.c: at each edge the tool prints one line
 *
 *   {"window": "start"|"end", "ns": N, "sent": S, "served": R}
 *
 * N is CLOCK_MONOTONIC at the edge, S the requests sent so far and R the
 * requests answered so far, both counted from the start of the run (the
 * warm-up included).  The harness snapshots its counters when it reads
 * the line and divides them by the differences between the two edges
 * (bench/benchlib.py, window_edge()), so that set-up, warm-up and drain
 * stay outside its counts.
 *
 * With BENCH_INSN_MARK=1 in the environment each edge also enters the
 * kernel's sethostname() with an invalid length (no effect, no privilege
 * needed): the marker at which bench/qemu-plugin/napi_insn.so snapshots
 * its instruction counts, at the same point as the counters above.
 */
#ifndef BENCH_WINDOW_H
#define BENCH_WINDOW_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void window_insn_mark(void)
{
	static int wanted = -1;

	if (wanted < 0) {
		const char *v = getenv("BENCH_INSN_MARK");

		wanted = v && *v == '1';
	}
	if (wanted)
		syscall(SYS_sethostname, NULL, -1);
}

/* EDGE is "start" or "end"; flushed at once: the harness waits for it. */
static inline void announce_window(FILE *f, const char *edge, uint64_t sent, uint64_t served)
{
	struct timespec ts;
	uint64_t ns;

	window_insn_mark();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
	fprintf(f, "{\"window\": \"%s\", \"ns\": %" PRIu64 ", \"sent\": %" PRIu64
		", \"served\": %" PRIu64 "}\n", edge, ns, sent, served);
	fflush(f);
}

#endif /* BENCH_WINDOW_H */
