// SPDX-License-Identifier: GPL-2.0
/*
 * mc_load.c - open-loop load generator for the memcached text protocol.
 *
 * Open loop (default): each thread draws Poisson arrivals (exponential
 * inter-arrival times, rate = qps / threads) and sends each request at its
 * scheduled ("intended") time on a randomly chosen connection of the thread,
 * whether or not earlier replies have arrived (requests are pipelined; a
 * connection keeps a FIFO of intended send times because memcached answers
 * in order).  Latency = reply complete - intended send time, so a slow
 * server or a slow generator cannot hide queueing (no coordinated omission).
 * When the generator itself falls behind the schedule, the delay between
 * intended and actual send time ("schedule lag") is recorded and reported.
 *
 * Closed loop (--max or --qps 0): every connection keeps --depth requests
 * outstanding; latency = reply complete - actual send time.
 *
 * Timeline: connect, preload --keys keys with `set` (unless --no-preload),
 * then warmup (--warmup s, not measured), then the measurement window
 * (--duration s), then a drain of at most --timeout-ms for replies.
 *
 * JSON output (--json FILE), one object:
 *   mode               "open" or "max"
 *   server, port, threads, connections, depth (max mode), keys, value_size,
 *   get_ratio, seed, warmup_s, duration_s, timeout_ms   the parameters
 *   target_qps         requested rate (0 in max mode)
 *   achieved_qps       replies completed inside the measurement window / s
 *   sent               requests whose intended send time is in the window
 *   received           replies to those requests (including late ones)
 *   gets, sets         of the sent requests
 *   get_hits, get_misses  of the received get replies
 *   errors             error replies (ERROR, CLIENT_ERROR, SERVER_ERROR,
 *                      NOT_STORED/EXISTS/NOT_FOUND to a set, unparsable or
 *                      unexpected reply) + requests lost with a connection
 *                      + requests dropped (not sent) because a connection
 *                      had 2^20 requests outstanding or 64 MiB unsent
 *   error_replies, lost, dropped   the parts of errors
 *   timeouts           requests not answered within timeout_ms of their
 *                      intended send time (a late reply still counts here
 *                      and its latency is still recorded)
 *   latency_us         {avg, p50, p95, p99, p999, max}: microseconds,
 *                      percentiles from the log-linear histogram of
 *                      bench/include/hist.h (<1% error)
 *   lag_us             schedule lag {avg, p99, max, first_half_avg,
 *                      second_half_avg} (open loop; zeros in max mode)
 *   lag_growing        second-half average lag > first-half average + 1 ms
 *   saturated          achieved_qps < 95% of target_qps, or lag_growing,
 *                      or lag p99 > 10 ms (the generator could not keep
 *                      its schedule); always false in max mode
 *   conn_failures      connections closed/broken during the run
 *   latency_hist, lag_hist  the histograms themselves, {count, sum, min,
 *                      max, buckets: [[index, n], ...]} (ns, non-empty
 *                      buckets of hist.h), so that the results of several
 *                      generator processes merge exactly
 *                      (mc_generators.py) instead of averaging
 *                      their percentiles
 *
 * --sync: several generator processes share one window: after connecting
 * (and the preload) the tool prints {"ready": true} and reads the start
 * time, CLOCK_MONOTONIC ns, as one line from stdin.
 *
 * stdout: the window edge lines of bench/include/window.h,
 * {"window": "start"|"end", "ns": N, "sent": S, "served": R}, at the start
 * and at the end of the measurement window; N is CLOCK_MONOTONIC, S the
 * requests sent so far and R the replies completed so far, all threads,
 * warm-up included (the preload is not); then the summary unless --quiet.
 *
 * Exit status: 0 ok, 1 runtime failure (cannot connect, preload failed,
 * connection lost), 2 usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "window.h"

#define NSEC 1000000000ULL
#define MAX_OUTSTANDING (1u << 20)	/* per connection, then drop */
#define MAX_OUTBUF (64u << 20)		/* unsent bytes per connection, then drop */
#define MAX_LINE 4096
#define SEND_BURST 1024

/* ------------------------------------------------------------------ */
/* options                                                             */

static struct {
	const char *server;
	int port;
	int conns;
	int threads;
	double qps;
	bool max_mode;
	int depth;
	double duration;
	double warmup;
	unsigned keys;
	unsigned value_size;
	bool preload;
	double get_ratio;
	uint64_t seed;
	const char *json;
	unsigned timeout_ms;
	bool quiet;
	bool sync;
} opt = {
	.server = "127.0.0.1",
	.port = 11211,
	.conns = 16,
	.threads = 1,
	.qps = 10000,
	.depth = 4,
	.duration = 10,
	.warmup = 1,
	.keys = 10000,
	.value_size = 64,
	.preload = true,
	.get_ratio = 0.9,
	.seed = 1,
	.timeout_ms = 1000,
};

static char *value_buf;

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

/* the histograms hold ns, the output is in us */
static double pct_us(const struct hist *h, double p)
{
	return hist_percentile(h, p) / 1e3;
}

static void die(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mc_load: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* xoshiro-like small PRNG: splitmix64 */
struct rng { uint64_t s; };

static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static double rng_unit(struct rng *r)
{
	return ((rng_next(r) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* ------------------------------------------------------------------ */
/* connections                                                         */

enum req_type { REQ_GET = 0, REQ_SET = 1 };

struct pending {
	uint64_t t;		/* intended (open) or actual (max) send time */
	uint8_t type;
	uint8_t measured;	/* intended send time inside the window */
	uint8_t timed_out;	/* already counted as a timeout */
};

struct buf {
	char *p;
	size_t len, cap, off;	/* data is p[off..len) */
};

struct conn {
	int fd;
	int id;
	bool dead;
	bool want_out;		/* EPOLLOUT registered */
	bool dirty;		/* has unsent data, in flush list */
	struct buf out, in;
	struct pending *q;	/* ring buffer */
	uint32_t qcap, qhead, qlen;
	uint32_t tscan;		/* entries [0, tscan) from head checked */
};

struct stats {
	uint64_t sent, received, gets, sets, hits, misses;
	uint64_t error_replies, lost, dropped, timeouts;
	uint64_t window_replies;	/* completions inside the window */
	uint64_t conn_failures;
	double lag_sum[2];
	uint64_t lag_n[2];
	struct hist lat, lag;
};

struct thread {
	pthread_t tid;
	int idx;
	int ep;
	struct conn *c;
	int nc;
	int alive;
	struct rng rng;
	struct stats st;
	uint64_t sent_all, served_all;	/* incl. warmup; read by main */
	struct conn **flush;
	int nflush;
	int fail;
};

static uint64_t t_start, t_mstart, t_end, t_mid;	/* set by main */
static pthread_barrier_t start_barrier;

static void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	if (b->off) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->len + extra <= b->cap)
			return;
	}
	size_t ncap = b->cap ? b->cap : 4096;

	while (ncap < b->len + extra)
		ncap *= 2;
	b->p = realloc(b->p, ncap);
	if (!b->p)
		die(1, "out of memory");
	b->cap = ncap;
}

static int q_push(struct conn *c, uint64_t t, int type, bool measured)
{
	if (c->qlen == c->qcap) {
		uint32_t ncap = c->qcap ? c->qcap * 2 : 64;
		struct pending *nq;

		if (c->qcap >= MAX_OUTSTANDING)
			return -1;
		nq = malloc(sizeof(*nq) * ncap);
		if (!nq)
			die(1, "out of memory");
		for (uint32_t i = 0; i < c->qlen; i++)
			nq[i] = c->q[(c->qhead + i) % c->qcap];
		free(c->q);
		c->q = nq;
		c->qcap = ncap;
		c->qhead = 0;
	}
	struct pending *p = &c->q[(c->qhead + c->qlen) % c->qcap];

	p->t = t;
	p->type = (uint8_t)type;
	p->measured = measured;
	p->timed_out = 0;
	c->qlen++;
	return 0;
}

static struct pending *q_head(struct conn *c)
{
	return c->qlen ? &c->q[c->qhead] : NULL;
}

static void q_pop(struct conn *c)
{
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
	if (c->tscan)
		c->tscan--;
}

static void conn_set_events(struct thread *th, struct conn *c, bool out)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0),
		.data.ptr = c,
	};

	if (c->want_out == out)
		return;
	c->want_out = out;
	epoll_ctl(th->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void conn_kill(struct thread *th, struct conn *c, const char *why)
{
	if (c->dead)
		return;
	fprintf(stderr, "mc_load: thread %d conn %d: %s\n", th->idx, c->id,
		why);
	c->dead = true;
	th->alive--;
	th->st.conn_failures++;
	while (c->qlen) {
		struct pending *p = q_head(c);

		if (p->measured)
			th->st.lost++;
		q_pop(c);
	}
	epoll_ctl(th->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->out.len = c->out.off = 0;
}

static void conn_flush(struct thread *th, struct conn *c)
{
	while (!c->dead && c->out.off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out.off,
				 c->out.len - c->out.off, MSG_NOSIGNAL);

		if (n > 0) {
			c->out.off += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			conn_set_events(th, c, true);
			return;
		}
		conn_kill(th, c, n < 0 ? strerror(errno) : "send returned 0");
		return;
	}
	if (!c->dead) {
		c->out.off = c->out.len = 0;
		conn_set_events(th, c, false);
	}
}

static void mark_dirty(struct thread *th, struct conn *c)
{
	if (!c->dirty) {
		c->dirty = true;
		th->flush[th->nflush++] = c;
	}
}

static void flush_all(struct thread *th)
{
	for (int i = 0; i < th->nflush; i++) {
		th->flush[i]->dirty = false;
		conn_flush(th, th->flush[i]);
	}
	th->nflush = 0;
}

static int append_request(struct conn *c, int type, unsigned key)
{
	struct buf *b = &c->out;
	int n;

	buf_reserve(b, 64 + opt.value_size);
	if (type == REQ_GET) {
		n = sprintf(b->p + b->len, "get key:%010u\r\n", key);
		b->len += n;
	} else {
		n = sprintf(b->p + b->len, "set key:%010u 0 0 %u\r\n", key,
			    opt.value_size);
		b->len += n;
		memcpy(b->p + b->len, value_buf, opt.value_size);
		b->len += opt.value_size;
		memcpy(b->p + b->len, "\r\n", 2);
		b->len += 2;
	}
	return 0;
}

/* queue one request on c; t = intended (open) or actual (max) send time */
static void issue(struct thread *th, struct conn *c, uint64_t t, bool measured)
{
	int type = rng_unit(&th->rng) <= opt.get_ratio ? REQ_GET : REQ_SET;
	unsigned key = (unsigned)rng_below(&th->rng, opt.keys);

	if (c->out.len - c->out.off > MAX_OUTBUF ||
	    q_push(c, t, type, measured) < 0) {
		if (measured)
			th->st.dropped++;
		return;
	}
	append_request(c, type, key);
	__atomic_store_n(&th->sent_all, th->sent_all + 1, __ATOMIC_RELEASE);
	if (measured) {
		th->st.sent++;
		if (type == REQ_GET)
			th->st.gets++;
		else
			th->st.sets++;
	}
	mark_dirty(th, c);
}

/* ------------------------------------------------------------------ */
/* reply parsing                                                       */

enum { RES_OK, RES_HIT, RES_MISS, RES_ERR };

static const char *find_crlf(const char *p, const char *end)
{
	for (const char *s = p; s + 1 < end; s++) {
		s = memchr(s, '\r', end - s - 1);
		if (!s)
			return NULL;
		if (s[1] == '\n')
			return s;
	}
	return NULL;
}

static bool line_is(const char *l, size_t n, const char *w)
{
	size_t k = strlen(w);

	return n == k && !memcmp(l, w, k);
}

static bool line_starts(const char *l, size_t n, const char *w)
{
	size_t k = strlen(w);

	return n >= k && !memcmp(l, w, k);
}

/*
 * Try to parse one complete reply to a request of @type at the start of
 * [p, end).  Returns bytes consumed (and *res), 0 if incomplete, -1 if the
 * stream is broken.
 */
static ssize_t parse_reply(const char *p, const char *end, int type, int *res)
{
	const char *s = p;
	int values = 0;

	for (;;) {
		const char *eol = find_crlf(s, end);
		size_t n;

		if (!eol)
			return (end - s > MAX_LINE) ? -1 : 0;
		n = eol - s;
		if (type == REQ_SET) {
			if (line_is(s, n, "STORED"))
				*res = RES_OK;
			else
				*res = RES_ERR;	/* NOT_STORED, EXISTS, errors, junk */
			return eol + 2 - p;
		}
		if (line_is(s, n, "END")) {
			*res = values ? RES_HIT : RES_MISS;
			return eol + 2 - p;
		}
		if (line_starts(s, n, "VALUE ")) {
			/* VALUE <key> <flags> <bytes> [<cas>] */
			char tmp[MAX_LINE + 1];
			char *tok, *save = NULL;
			unsigned long long bytes;
			int i = 0;

			if (n > MAX_LINE)
				return -1;
			memcpy(tmp, s, n);
			tmp[n] = 0;
			bytes = ULLONG_MAX;
			for (tok = strtok_r(tmp, " ", &save); tok;
			     tok = strtok_r(NULL, " ", &save), i++)
				if (i == 3) {
					char *e;

					bytes = strtoull(tok, &e, 10);
					if (*e)
						return -1;
				}
			if (i < 4 || bytes > (1ULL << 30))
				return -1;
			if ((size_t)(end - (eol + 2)) < bytes + 2)
				return 0;
			if (eol[2 + bytes] != '\r' || eol[3 + bytes] != '\n')
				return -1;
			s = eol + 2 + bytes + 2;
			values++;
			continue;
		}
		if (values)
			return -1;	/* junk in the middle of a get reply */
		/* ERROR, CLIENT_ERROR, SERVER_ERROR or an unexpected line */
		*res = RES_ERR;
		return eol + 2 - p;
	}
}

static void complete(struct thread *th, struct conn *c, int res, uint64_t now)
{
	struct pending *p = q_head(c);

	__atomic_store_n(&th->served_all, th->served_all + 1, __ATOMIC_RELEASE);
	if (now >= t_mstart && now < t_end)
		th->st.window_replies++;
	if (p->measured) {
		th->st.received++;
		hist_add(&th->st.lat, now > p->t ? now - p->t : 0);
		if (!p->timed_out && now - p->t > opt.timeout_ms * 1000000ULL)
			th->st.timeouts++;
		switch (res) {
		case RES_HIT:
			th->st.hits++;
			break;
		case RES_MISS:
			th->st.misses++;
			break;
		case RES_ERR:
			th->st.error_replies++;
			break;
		}
	}
	q_pop(c);
}

static void conn_read(struct thread *th, struct conn *c)
{
	for (;;) {
		struct buf *b = &c->in;
		ssize_t n;

		buf_reserve(b, 16384);
		n = recv(c->fd, b->p + b->len, b->cap - b->len, 0);
		if (n == 0) {
			conn_kill(th, c, "server closed the connection");
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			conn_kill(th, c, strerror(errno));
			return;
		}
		b->len += n;

		uint64_t now = now_ns();

		while (b->off < b->len) {
			struct pending *p = q_head(c);
			int res = RES_ERR;
			ssize_t k;

			if (!p) {
				conn_kill(th, c, "unsolicited data from server");
				return;
			}
			k = parse_reply(b->p + b->off, b->p + b->len, p->type,
					&res);
			if (k < 0) {
				conn_kill(th, c, "protocol error in reply");
				return;
			}
			if (k == 0)
				break;
			b->off += k;
			complete(th, c, res, now);
			if (opt.max_mode && now < t_end)
				issue(th, c, now_ns(), now >= t_mstart);
		}
		if (b->off == b->len)
			b->off = b->len = 0;
	}
}

/* count measured requests older than the timeout, once each */
static void check_timeouts(struct thread *th, uint64_t now)
{
	uint64_t lim = opt.timeout_ms * 1000000ULL;

	for (int i = 0; i < th->nc; i++) {
		struct conn *c = &th->c[i];

		while (c->tscan < c->qlen) {
			struct pending *p = &c->q[(c->qhead + c->tscan) % c->qcap];

			if (now < p->t || now - p->t <= lim)
				break;
			if (p->measured && !p->timed_out)
				th->st.timeouts++;
			p->timed_out = 1;
			c->tscan++;
		}
	}
}

static uint64_t outstanding(struct thread *th)
{
	uint64_t n = 0;

	for (int i = 0; i < th->nc; i++)
		n += th->c[i].qlen;
	return n;
}

static struct conn *pick_conn(struct thread *th)
{
	for (int tries = 0; tries < 4 * th->nc; tries++) {
		struct conn *c = &th->c[rng_below(&th->rng, th->nc)];

		if (!c->dead)
			return c;
	}
	for (int i = 0; i < th->nc; i++)
		if (!th->c[i].dead)
			return &th->c[i];
	return NULL;
}

static void *thread_main(void *arg)
{
	struct thread *th = arg;
	struct epoll_event evs[64];
	double rate = opt.qps / opt.threads;	/* per thread, per second */
	uint64_t next = UINT64_MAX, next_tcheck = 0, drain_deadline = 0;
	bool stopping = false;

	prctl(PR_SET_TIMERSLACK, 1UL);
	pthread_barrier_wait(&start_barrier);

	if (opt.max_mode) {
		uint64_t now = now_ns();

		for (int i = 0; i < th->nc; i++)
			for (int d = 0; d < opt.depth; d++)
				issue(th, &th->c[i], now, false);
		flush_all(th);
	} else {
		next = t_start + (uint64_t)(-log(rng_unit(&th->rng)) / rate * 1e9);
		if (next >= t_end)
			next = UINT64_MAX;
	}

	for (;;) {
		uint64_t now = now_ns();

		if (th->alive == 0) {
			th->fail = 1;
			break;
		}
		/*
		 * Open loop stops only once every arrival scheduled before
		 * t_end has been sent: if the generator was stalled, the
		 * backlog is still sent (late) and shows up as schedule lag.
		 */
		if (!stopping && (opt.max_mode ? now >= t_end : next == UINT64_MAX)) {
			stopping = true;
			next = UINT64_MAX;
			drain_deadline = now + opt.timeout_ms * 1000000ULL;
		}
		for (int burst = 0; !stopping && next <= now && burst < SEND_BURST;
		     burst++) {
			struct conn *c = pick_conn(th);
			bool m = next >= t_mstart;

			if (!c)
				break;
			issue(th, c, next, m);
			if (m) {
				uint64_t lag = now - next;

				hist_add(&th->st.lag, lag);
				th->st.lag_sum[next >= t_mid] += lag;
				th->st.lag_n[next >= t_mid]++;
			}
			next += (uint64_t)(-log(rng_unit(&th->rng)) / rate * 1e9);
			if (next >= t_end)
				next = UINT64_MAX;
			if (next > now)
				now = now_ns();
		}
		flush_all(th);
		if (now >= next_tcheck) {
			check_timeouts(th, now);
			next_tcheck = now + 1000000;	/* 1 ms */
		}
		if (stopping && (outstanding(th) == 0 || now >= drain_deadline))
			break;

		/* sleep until the next arrival / timeout check / deadline */
		uint64_t wake = next_tcheck;

		if (!stopping && next < wake)
			wake = next;
		if (!stopping && t_end < wake)
			wake = t_end;
		if (stopping && drain_deadline < wake)
			wake = drain_deadline;
		struct timespec ts = { 0, 0 };

		if (wake > now) {
			ts.tv_sec = (wake - now) / NSEC;
			ts.tv_nsec = (wake - now) % NSEC;
		}
		int n = epoll_pwait2(th->ep, evs, 64, &ts, NULL);

		if (n < 0 && errno == ENOSYS) {
			int ms = (int)((wake > now ? wake - now : 0) / 1000000);

			n = epoll_wait(th->ep, evs, 64, ms);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("mc_load: epoll_wait");
			th->fail = 1;
			break;
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->dead)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
				conn_read(th, c);
			if (!c->dead && (evs[i].events & EPOLLOUT))
				conn_flush(th, c);
		}
		flush_all(th);	/* max mode issues from conn_read */
	}

	/* whatever is still outstanding now was never answered */
	check_timeouts(th, UINT64_MAX);
	for (int i = 0; i < th->nc; i++) {
		struct conn *c = &th->c[i];

		for (uint32_t k = 0; k < c->qlen; k++) {
			struct pending *p = &c->q[(c->qhead + k) % c->qcap];

			if (p->measured && !p->timed_out)
				th->st.timeouts++;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* setup                                                               */

static int connect_to(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		die(1, "socket: %s", strerror(errno));
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		die(1, "cannot connect to %s:%d: %s", opt.server, opt.port,
		    strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/* blocking preload with pipelined batches of sets */
static void preload(const struct sockaddr_in *sa)
{
	int fd = connect_to(sa);
	struct timeval tv = { .tv_sec = 5 };
	struct buf in = { 0 }, out = { 0 };
	const unsigned batch = 256;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (unsigned k = 0; k < opt.keys; k += batch) {
		unsigned nb = opt.keys - k < batch ? opt.keys - k : batch;
		unsigned got = 0;

		out.len = out.off = 0;
		for (unsigned i = 0; i < nb; i++) {
			buf_reserve(&out, 64 + opt.value_size);
			out.len += sprintf(out.p + out.len,
					   "set key:%010u 0 0 %u\r\n", k + i,
					   opt.value_size);
			memcpy(out.p + out.len, value_buf, opt.value_size);
			out.len += opt.value_size;
			memcpy(out.p + out.len, "\r\n", 2);
			out.len += 2;
		}
		if (write_all(fd, out.p, out.len) < 0)
			die(1, "preload: send: %s", strerror(errno));
		while (got < nb) {
			const char *s = in.p + in.off, *e = in.p + in.len;
			const char *eol = find_crlf(s, e);

			if (eol) {
				if (!line_is(s, eol - s, "STORED"))
					die(1, "preload: unexpected reply \"%.*s\"",
					    (int)(eol - s), s);
				in.off += eol + 2 - s;
				got++;
				continue;
			}
			buf_reserve(&in, 4096);
			ssize_t n = recv(fd, in.p + in.len, in.cap - in.len, 0);

			if (n <= 0)
				die(1, "preload: %s", n == 0 ? "connection closed" :
				    strerror(errno));
			in.len += n;
		}
		in.off = in.len = 0;
	}
	free(in.p);
	free(out.p);
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: mc_load [options]\n"
"  --server IP          server address (127.0.0.1)\n"
"  --port P             server port (11211)\n"
"  --connections N      total connections (16)\n"
"  --threads T          threads, connections spread across them (1)\n"
"  --qps RATE           target total rate, Poisson arrivals (10000);\n"
"                       0 = closed-loop maximum throughput (like --max)\n"
"  --max                closed loop, --depth outstanding per connection\n"
"  --depth D            outstanding requests per connection in --max (4)\n"
"  --duration S         measurement window in seconds (10)\n"
"  --warmup S           unmeasured warmup in seconds (1)\n"
"  --keys K             key space; preloaded with set (10000)\n"
"  --value-size B       value size in bytes (64)\n"
"  --no-preload         do not preload keys\n"
"  --get-ratio R        fraction of gets, rest sets (0.9)\n"
"  --seed N             PRNG seed (1)\n"
"  --timeout-ms MS      request timeout (1000)\n"
"  --json FILE          write results as one JSON object\n"
"  --quiet              no summary on stdout\n"
"  --sync               print {\"ready\": true} when connected, then read\n"
"                       the start time (CLOCK_MONOTONIC ns) from stdin\n");
}

static double parse_num(const char *name, const char *s, double lo, double hi)
{
	char *e;
	double v;

	errno = 0;
	v = strtod(s, &e);
	if (errno || e == s || *e || !(v >= lo && v <= hi)) {
		fprintf(stderr, "mc_load: invalid --%s \"%s\" (range %g..%g)\n",
			name, s, lo, hi);
		usage(stderr);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", required_argument, 0, 's' },
		{ "port", required_argument, 0, 'p' },
		{ "connections", required_argument, 0, 'c' },
		{ "threads", required_argument, 0, 't' },
		{ "qps", required_argument, 0, 'q' },
		{ "max", no_argument, 0, 'M' },
		{ "depth", required_argument, 0, 'D' },
		{ "duration", required_argument, 0, 'd' },
		{ "warmup", required_argument, 0, 'w' },
		{ "keys", required_argument, 0, 'k' },
		{ "value-size", required_argument, 0, 'v' },
		{ "no-preload", no_argument, 0, 'N' },
		{ "get-ratio", required_argument, 0, 'g' },
		{ "seed", required_argument, 0, 'S' },
		{ "timeout-ms", required_argument, 0, 'T' },
		{ "json", required_argument, 0, 'j' },
		{ "quiet", no_argument, 0, 'Q' },
		{ "sync", no_argument, 0, 'Y' },
		{ "help", no_argument, 0, 'h' },
		{ 0 }
	};
	struct in_addr a;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': opt.server = optarg; break;
		case 'p': opt.port = (int)parse_num("port", optarg, 1, 65535); break;
		case 'c': opt.conns = (int)parse_num("connections", optarg, 1, 65536); break;
		case 't': opt.threads = (int)parse_num("threads", optarg, 1, 256); break;
		case 'q': opt.qps = parse_num("qps", optarg, 0, 1e8); break;
		case 'M': opt.max_mode = true; break;
		case 'D': opt.depth = (int)parse_num("depth", optarg, 1, 4096); break;
		case 'd': opt.duration = parse_num("duration", optarg, 0.001, 86400); break;
		case 'w': opt.warmup = parse_num("warmup", optarg, 0, 86400); break;
		case 'k': opt.keys = (unsigned)parse_num("keys", optarg, 1, 4e9); break;
		case 'v': opt.value_size = (unsigned)parse_num("value-size", optarg, 1, 1 << 20); break;
		case 'N': opt.preload = false; break;
		case 'g': opt.get_ratio = parse_num("get-ratio", optarg, 0, 1); break;
		case 'S': opt.seed = (uint64_t)parse_num("seed", optarg, 0, 1.8e19); break;
		case 'T': opt.timeout_ms = (unsigned)parse_num("timeout-ms", optarg, 1, 3600000); break;
		case 'j': opt.json = optarg; break;
		case 'Q': opt.quiet = true; break;
		case 'Y': opt.sync = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mc_load: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (inet_pton(AF_INET, opt.server, &a) != 1) {
		fprintf(stderr, "mc_load: --server must be an IPv4 address\n");
		exit(2);
	}
	if (opt.qps == 0)
		opt.max_mode = true;
	if (opt.threads > opt.conns) {
		fprintf(stderr, "mc_load: --threads (%d) > --connections (%d)\n",
			opt.threads, opt.conns);
		exit(2);
	}
}

/*
 * A line on stdout at each edge of the measurement window, printed when
 * it is reached: the harness snapshots its counters then, so that the
 * connect, the preload, the warmup and the drain stay outside its counts.
 */
static void announce_window_at(uint64_t t, const char *edge,
			       const struct thread *ths)
{
	struct timespec ts = { .tv_sec = t / NSEC, .tv_nsec = t % NSEC };
	uint64_t sent = 0, served = 0;

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	/* served first: requests sent meanwhile only add to sent */
	for (int i = 0; i < opt.threads; i++)
		served += __atomic_load_n(&ths[i].served_all, __ATOMIC_ACQUIRE);
	for (int i = 0; i < opt.threads; i++)
		sent += __atomic_load_n(&ths[i].sent_all, __ATOMIC_ACQUIRE);
	announce_window(stdout, edge, sent, served);
}

/*
 * --sync: the start time that another process chose for every generator,
 * so that their windows coincide and their edge counts add up.
 */
static uint64_t synced_start(void)
{
	char line[64];
	char *end;
	uint64_t t;

	printf("{\"ready\": true}\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die(1, "--sync: no start time on stdin");
	errno = 0;
	t = strtoull(line, &end, 10);
	if (errno || end == line || (*end && *end != '\n'))
		die(1, "--sync: invalid start time \"%s\"", line);
	if (t < now_ns())
		die(1, "--sync: start time already passed");
	return t;
}

/* One histogram as JSON, with its non-empty buckets, for exact merging. */
static void hist_json(FILE *f, const struct hist *h)
{
	bool first = true;

	fprintf(f, "{\"count\": %" PRIu64 ", \"sum\": %" PRIu64 ", \"min\": %" PRIu64
		", \"max\": %" PRIu64 ", \"buckets\": [", h->count, h->sum,
		h->count ? h->min : 0, h->max);
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		if (!h->bucket[i])
			continue;
		fprintf(f, "%s[%u, %" PRIu64 "]", first ? "" : ", ", i, h->bucket[i]);
		first = false;
	}
	fprintf(f, "]}");
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct thread *ths;
	struct stats tot;
	int fail = 0;

	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	sa.sin_port = htons(opt.port);
	inet_pton(AF_INET, opt.server, &sa.sin_addr);

	value_buf = malloc(opt.value_size);
	for (unsigned i = 0; i < opt.value_size; i++)
		value_buf[i] = 'a' + i % 26;

	if (opt.preload)
		preload(&sa);

	ths = calloc(opt.threads, sizeof(*ths));
	for (int t = 0, cid = 0; t < opt.threads; t++) {
		struct thread *th = &ths[t];

		th->idx = t;
		hist_init(&th->st.lat);
		hist_init(&th->st.lag);
		th->nc = opt.conns / opt.threads + (t < opt.conns % opt.threads);
		th->alive = th->nc;
		th->c = calloc(th->nc, sizeof(*th->c));
		th->flush = calloc(th->nc, sizeof(*th->flush));
		th->rng.s = opt.seed * 0x100000001b3ULL + (uint64_t)t * 7919 + 1;
		th->ep = epoll_create1(EPOLL_CLOEXEC);
		if (th->ep < 0)
			die(1, "epoll_create1: %s", strerror(errno));
		for (int i = 0; i < th->nc; i++) {
			struct conn *c = &th->c[i];
			struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
						  .data.ptr = c };

			c->id = cid++;
			c->fd = connect_to(&sa);
			fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
			if (epoll_ctl(th->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
				die(1, "epoll_ctl: %s", strerror(errno));
		}
	}

	pthread_barrier_init(&start_barrier, NULL, opt.threads + 1);
	for (int t = 0; t < opt.threads; t++)
		if (pthread_create(&ths[t].tid, NULL, thread_main, &ths[t]))
			die(1, "pthread_create failed");
	if (opt.sync)
		t_start = synced_start();
	else
		t_start = now_ns() + 1000000;	/* 1 ms to get everyone going */
	t_mstart = t_start + (uint64_t)(opt.warmup * 1e9);
	t_end = t_mstart + (uint64_t)(opt.duration * 1e9);
	t_mid = t_mstart + (t_end - t_mstart) / 2;
	pthread_barrier_wait(&start_barrier);
	announce_window_at(t_mstart, "start", ths);
	announce_window_at(t_end, "end", ths);

	memset(&tot, 0, sizeof(tot));
	hist_init(&tot.lat);
	hist_init(&tot.lag);
	for (int t = 0; t < opt.threads; t++) {
		struct stats *s = &ths[t].st;

		pthread_join(ths[t].tid, NULL);
		fail |= ths[t].fail;
		tot.sent += s->sent;
		tot.received += s->received;
		tot.gets += s->gets;
		tot.sets += s->sets;
		tot.hits += s->hits;
		tot.misses += s->misses;
		tot.error_replies += s->error_replies;
		tot.lost += s->lost;
		tot.dropped += s->dropped;
		tot.timeouts += s->timeouts;
		tot.window_replies += s->window_replies;
		tot.conn_failures += s->conn_failures;
		for (int h = 0; h < 2; h++) {
			tot.lag_sum[h] += s->lag_sum[h];
			tot.lag_n[h] += s->lag_n[h];
		}
		hist_merge(&tot.lat, &s->lat);
		hist_merge(&tot.lag, &s->lag);
	}

	double dur = (double)(t_end - t_mstart) / 1e9;
	double achieved = tot.window_replies / dur;
	double target = opt.max_mode ? 0 : opt.qps;
	uint64_t errors = tot.error_replies + tot.lost + tot.dropped;
	double lat_avg = tot.lat.count ? tot.lat.sum / 1e3 / tot.lat.count : 0;
	double lag_avg = tot.lag.count ? tot.lag.sum / 1e3 / tot.lag.count : 0;
	double lag_h1 = tot.lag_n[0] ? tot.lag_sum[0] / 1e3 / tot.lag_n[0] : 0;
	double lag_h2 = tot.lag_n[1] ? tot.lag_sum[1] / 1e3 / tot.lag_n[1] : 0;
	bool lag_growing = !opt.max_mode && lag_h2 > lag_h1 + 1000.0;
	double lag_p99 = pct_us(&tot.lag, 99);
	bool saturated = !opt.max_mode &&
			 (achieved < 0.95 * target || lag_growing ||
			  lag_p99 > 10000.0);

	if (tot.conn_failures)
		fail = 1;

	if (!opt.quiet) {
		printf("mc_load %s: target %.0f qps, achieved %.0f qps over %.2f s, "
		       "%d conns, %d threads%s\n",
		       opt.max_mode ? "max" : "open", target, achieved, dur,
		       opt.conns, opt.threads, saturated ? "  ** SATURATED **" : "");
		printf("  sent %" PRIu64 " received %" PRIu64 " (gets %" PRIu64
		       " hits %" PRIu64 " misses %" PRIu64 ", sets %" PRIu64 ") errors %"
		       PRIu64 " timeouts %" PRIu64 "\n",
		       tot.sent, tot.received, tot.gets, tot.hits, tot.misses,
		       tot.sets, errors, tot.timeouts);
		printf("  latency us: avg %.1f p50 %.1f p95 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
		       lat_avg, pct_us(&tot.lat, 50), pct_us(&tot.lat, 95),
		       pct_us(&tot.lat, 99), pct_us(&tot.lat, 99.9),
		       tot.lat.max / 1e3);
		if (!opt.max_mode)
			printf("  schedule lag us: avg %.1f p99 %.1f max %.1f "
			       "(1st half avg %.1f, 2nd half avg %.1f)%s\n",
			       lag_avg, pct_us(&tot.lag, 99), tot.lag.max / 1e3,
			       lag_h1, lag_h2, lag_growing ? " GROWING" : "");
	}

	if (opt.json) {
		FILE *f = fopen(opt.json, "w");

		if (!f)
			die(1, "cannot write %s: %s", opt.json, strerror(errno));
		fprintf(f, "{\"mode\": \"%s\", \"server\": \"%s\", \"port\": %d, "
			"\"threads\": %d, \"connections\": %d, \"depth\": %d, "
			"\"keys\": %u, \"value_size\": %u, \"get_ratio\": %g, "
			"\"seed\": %" PRIu64 ", \"warmup_s\": %g, \"duration_s\": %g, "
			"\"timeout_ms\": %u,\n",
			opt.max_mode ? "max" : "open", opt.server, opt.port,
			opt.threads, opt.conns, opt.max_mode ? opt.depth : 0,
			opt.keys, opt.value_size, opt.get_ratio, opt.seed,
			opt.warmup, opt.duration, opt.timeout_ms);
		fprintf(f, " \"target_qps\": %.1f, \"achieved_qps\": %.1f, "
			"\"sent\": %" PRIu64 ", \"received\": %" PRIu64 ", "
			"\"gets\": %" PRIu64 ", \"sets\": %" PRIu64 ", "
			"\"get_hits\": %" PRIu64 ", \"get_misses\": %" PRIu64 ",\n",
			target, achieved, tot.sent, tot.received, tot.gets,
			tot.sets, tot.hits, tot.misses);
		fprintf(f, " \"errors\": %" PRIu64 ", \"error_replies\": %" PRIu64
			", \"lost\": %" PRIu64 ", \"dropped\": %" PRIu64
			", \"timeouts\": %" PRIu64 ", \"conn_failures\": %" PRIu64 ",\n",
			errors, tot.error_replies, tot.lost, tot.dropped,
			tot.timeouts, tot.conn_failures);
		fprintf(f, " \"latency_us\": {\"avg\": %.1f, \"p50\": %.1f, "
			"\"p95\": %.1f, \"p99\": %.1f, \"p999\": %.1f, \"max\": %.1f},\n",
			lat_avg, pct_us(&tot.lat, 50), pct_us(&tot.lat, 95),
			pct_us(&tot.lat, 99), pct_us(&tot.lat, 99.9),
			tot.lat.max / 1e3);
		fprintf(f, " \"lag_us\": {\"avg\": %.1f, \"p99\": %.1f, \"max\": %.1f, "
			"\"first_half_avg\": %.1f, \"second_half_avg\": %.1f},\n",
			lag_avg, pct_us(&tot.lag, 99), tot.lag.max / 1e3,
			lag_h1, lag_h2);
		fprintf(f, " \"latency_hist\": ");
		hist_json(f, &tot.lat);
		fprintf(f, ",\n \"lag_hist\": ");
		hist_json(f, &tot.lag);
		fprintf(f, ",\n \"lag_growing\": %s, \"saturated\": %s}\n",
			lag_growing ? "true" : "false", saturated ? "true" : "false");
		if (fclose(f))
			die(1, "cannot write %s: %s", opt.json, strerror(errno));
	}
	for (int t = 0; t < opt.threads; t++) {
		for (int i = 0; i < ths[t].nc; i++) {
			struct conn *c = &ths[t].c[i];

			if (c->fd >= 0)
				close(c->fd);
			free(c->in.p);
			free(c->out.p);
			free(c->q);
		}
		free(ths[t].c);
		free(ths[t].flush);
		close(ths[t].ep);
	}
	free(ths);
	free(value_buf);
	pthread_barrier_destroy(&start_barrier);
	if (fail)
		fprintf(stderr, "mc_load: run failed (connection lost or epoll error)\n");
	return fail ? 1 : 0;
}
