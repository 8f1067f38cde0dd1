// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_busy_poll.c - LD_PRELOAD shim that turns on epoll busy polling
 * (EPIOCSPARAMS, Linux >= 6.9) for unmodified applications, e.g. memcached
 * through libevent's epoll backend.
 *
 *   LD_PRELOAD=./libepoll_busy_poll.so \
 *   EPOLL_BUSY_POLL_USECS=0 EPOLL_BUSY_POLL_BUDGET=64 \
 *   EPOLL_PREFER_BUSY_POLL=1 memcached ...
 *
 * Environment (all optional; with none of them set the library only forwards
 * calls to libc and changes nothing):
 *
 *   EPOLL_BUSY_POLL_USECS     0..4294967295  epoll_params.busy_poll_usecs
 *                                             (the kernel rejects > INT_MAX)
 *   EPOLL_BUSY_POLL_BUDGET    0..65535       epoll_params.busy_poll_budget
 *                                             (> 64 needs CAP_NET_ADMIN)
 *   EPOLL_PREFER_BUSY_POLL    0 or 1         epoll_params.prefer_busy_poll
 *   EPOLL_WAIT_MAX_TIMEOUT_MS 0..INT_MAX     cap epoll_wait/epoll_pwait/
 *                                             epoll_pwait2 timeouts: an
 *                                             infinite (-1 / NULL) or longer
 *                                             timeout becomes this value
 *   EPOLL_BUSY_POLL_VERBOSE   0 or 1         one line per configured epoll
 *                                             fd on stderr, values read back
 *                                             with EPIOCGPARAMS
 *   EPOLL_BUSY_POLL_STRICT    0 or 1         invalid value or failing ioctl
 *                                             => message and _exit(1)
 *
 * Only the fields whose variable is set are changed: the library reads the
 * current parameters with EPIOCGPARAMS first (all zero on a fresh instance)
 * and writes them back with EPIOCSPARAMS.
 *
 * An invalid value is reported once and the library then leaves every epoll
 * instance untouched (or exits with STRICT=1).  A failing ioctl is reported
 * once per process (or exits with STRICT=1).
 *
 * The wait wrappers do not allocate and take no locks: after the one-time
 * initialisation (pthread_once) they only read immutable globals.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#ifndef EPIOCSPARAMS
struct epoll_params {
	__u32 busy_poll_usecs;
	__u16 busy_poll_budget;
	__u8 prefer_busy_poll;
	__u8 __pad;	/* must be zero */
};
#define EPOLL_IOC_TYPE 0x8A
#define EPIOCSPARAMS _IOW(EPOLL_IOC_TYPE, 0x01, struct epoll_params)
#define EPIOCGPARAMS _IOR(EPOLL_IOC_TYPE, 0x02, struct epoll_params)
#endif

#define EXPORT __attribute__((visibility("default")))

typedef int (*create_fn)(int);
typedef int (*wait_fn)(int, struct epoll_event *, int, int);
typedef int (*pwait_fn)(int, struct epoll_event *, int, int,
			const sigset_t *);
typedef int (*pwait2_fn)(int, struct epoll_event *, int,
			 const struct timespec *, const sigset_t *);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static create_fn real_epoll_create;
static create_fn real_epoll_create1;
static wait_fn real_epoll_wait;
static pwait_fn real_epoll_pwait;
static pwait2_fn real_epoll_pwait2;

/* configuration, written once under init_once, read-only afterwards */
static int cfg_apply;		/* at least one param variable set, all valid */
static int cfg_set_usecs, cfg_set_budget, cfg_set_prefer;
static uint32_t cfg_usecs;
static uint16_t cfg_budget;
static uint8_t cfg_prefer;
static int cfg_cap = -1;	/* EPOLL_WAIT_MAX_TIMEOUT_MS, -1 = off */
static int cfg_verbose;
static int cfg_strict;

static int ioctl_error_reported;	/* atomic flag: once per process */

/* stderr output without stdio (no locks, no allocation) */
static void say(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		n -= w;
	}
}

/*
 * Parse an unsigned decimal integer in [0, max].  Returns 1 when the
 * variable is unset, 0 when valid, -1 (and prints a message) when invalid.
 */
static int env_uint(const char *name, unsigned long long max,
		    unsigned long long *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s)
		return 1;
	errno = 0;
	if (*s < '0' || *s > '9')	/* rejects "", "-1", "+1", " 1" */
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	say("libepoll_busy_poll[%d]: invalid %s=\"%s\": expected an integer in 0..%llu\n",
	    (int)getpid(), name, s, max);
	return -1;
}

static void strict_exit(void)
{
	say("libepoll_busy_poll[%d]: EPOLL_BUSY_POLL_STRICT=1: exiting with status 1\n",
	    (int)getpid());
	_exit(1);
}

static void do_init(void)
{
	unsigned long long v;
	int bad = 0, r;

	real_epoll_create = (create_fn)dlsym(RTLD_NEXT, "epoll_create");
	real_epoll_create1 = (create_fn)dlsym(RTLD_NEXT, "epoll_create1");
	real_epoll_wait = (wait_fn)dlsym(RTLD_NEXT, "epoll_wait");
	real_epoll_pwait = (pwait_fn)dlsym(RTLD_NEXT, "epoll_pwait");
	real_epoll_pwait2 = (pwait2_fn)dlsym(RTLD_NEXT, "epoll_pwait2");

	/* STRICT and VERBOSE first: they govern how the rest is handled */
	r = env_uint("EPOLL_BUSY_POLL_STRICT", 1, &v);
	if (r == 0)
		cfg_strict = (int)v;
	else if (r < 0)
		cfg_strict = 1;	/* garbage in STRICT: be strict */
	if (r < 0)
		bad = 1;
	r = env_uint("EPOLL_BUSY_POLL_VERBOSE", 1, &v);
	if (r == 0)
		cfg_verbose = (int)v;
	bad |= r < 0;

	r = env_uint("EPOLL_BUSY_POLL_USECS", UINT32_MAX, &v);
	if (r == 0) {
		cfg_usecs = (uint32_t)v;
		cfg_set_usecs = 1;
	}
	bad |= r < 0;
	r = env_uint("EPOLL_BUSY_POLL_BUDGET", UINT16_MAX, &v);
	if (r == 0) {
		cfg_budget = (uint16_t)v;
		cfg_set_budget = 1;
	}
	bad |= r < 0;
	r = env_uint("EPOLL_PREFER_BUSY_POLL", 1, &v);
	if (r == 0) {
		cfg_prefer = (uint8_t)v;
		cfg_set_prefer = 1;
	}
	bad |= r < 0;
	r = env_uint("EPOLL_WAIT_MAX_TIMEOUT_MS", INT_MAX, &v);
	if (r == 0)
		cfg_cap = (int)v;
	bad |= r < 0;

	if (bad) {
		if (cfg_strict)
			strict_exit();
		say("libepoll_busy_poll[%d]: configuration invalid, epoll instances are left untouched\n",
		    (int)getpid());
		cfg_apply = 0;
		cfg_cap = -1;
		return;
	}
	cfg_apply = cfg_set_usecs || cfg_set_budget || cfg_set_prefer;
	if (cfg_verbose && (cfg_apply || cfg_cap >= 0))
		say("libepoll_busy_poll[%d]: loaded: usecs=%s%u budget=%s%u prefer=%s%u wait_cap_ms=%d\n",
		    (int)getpid(),
		    cfg_set_usecs ? "" : "(keep)", cfg_usecs,
		    cfg_set_budget ? "" : "(keep)", cfg_budget,
		    cfg_set_prefer ? "" : "(keep)", cfg_prefer, cfg_cap);
}

static inline void init(void)
{
	pthread_once(&init_once, do_init);
}

static const char *errno_hint(int err)
{
	switch (err) {
	case ENOTTY:
	case EINVAL:
		return "the running kernel lacks the epoll busy-poll ioctl (needs Linux >= 6.9) "
		       "or rejected a value (busy_poll_usecs must be <= 2147483647, "
		       "prefer_busy_poll 0 or 1)";
	case EPERM:
		return "busy_poll_budget above NAPI_POLL_WEIGHT (64) needs CAP_NET_ADMIN";
	default:
		return "unexpected error";
	}
}

static void configure(int epfd)
{
	struct epoll_params p, rb;
	int err;

	memset(&p, 0, sizeof(p));
	/* keep fields whose variable is not set; fresh instances are all 0 */
	if (ioctl(epfd, EPIOCGPARAMS, &p) != 0)
		memset(&p, 0, sizeof(p));
	if (cfg_set_usecs)
		p.busy_poll_usecs = cfg_usecs;
	if (cfg_set_budget)
		p.busy_poll_budget = cfg_budget;
	if (cfg_set_prefer)
		p.prefer_busy_poll = cfg_prefer;
	p.__pad = 0;

	if (ioctl(epfd, EPIOCSPARAMS, &p) != 0) {
		err = errno;
		if (cfg_strict || !__atomic_exchange_n(&ioctl_error_reported, 1,
						       __ATOMIC_RELAXED)) {
			say("libepoll_busy_poll[%d]: ioctl(epfd %d, EPIOCSPARAMS {busy_poll_usecs=%u, "
			    "busy_poll_budget=%u, prefer_busy_poll=%u}) failed: %s (%s): %s%s\n",
			    (int)getpid(), epfd, p.busy_poll_usecs,
			    p.busy_poll_budget, p.prefer_busy_poll,
			    strerrorname_np(err) ? strerrorname_np(err) : "?",
			    strerror(err), errno_hint(err),
			    cfg_strict ? "" :
			    "; epoll busy polling NOT enabled (reported once per process)");
		}
		if (cfg_strict)
			strict_exit();
		errno = err;
		return;
	}
	if (cfg_verbose) {
		memset(&rb, 0, sizeof(rb));
		if (ioctl(epfd, EPIOCGPARAMS, &rb) == 0)
			say("libepoll_busy_poll[%d]: epfd %d configured: busy_poll_usecs=%u "
			    "busy_poll_budget=%u prefer_busy_poll=%u (EPIOCGPARAMS: %s)\n",
			    (int)getpid(), epfd, rb.busy_poll_usecs,
			    rb.busy_poll_budget, rb.prefer_busy_poll,
			    (rb.busy_poll_usecs == p.busy_poll_usecs &&
			     rb.busy_poll_budget == p.busy_poll_budget &&
			     rb.prefer_busy_poll == p.prefer_busy_poll) ?
			    "match" : "MISMATCH");
		else
			say("libepoll_busy_poll[%d]: epfd %d configured, but EPIOCGPARAMS failed: %s\n",
			    (int)getpid(), epfd, strerror(errno));
	}
}

EXPORT int epoll_create(int size)
{
	int fd, saved;

	init();
	if (!real_epoll_create) {
		errno = ENOSYS;
		return -1;
	}
	fd = real_epoll_create(size);
	if (fd >= 0 && cfg_apply) {
		saved = errno;
		configure(fd);
		errno = saved;
	}
	return fd;
}

EXPORT int epoll_create1(int flags)
{
	int fd, saved;

	init();
	if (!real_epoll_create1) {
		errno = ENOSYS;
		return -1;
	}
	fd = real_epoll_create1(flags);
	if (fd >= 0 && cfg_apply) {
		saved = errno;
		configure(fd);
		errno = saved;
	}
	return fd;
}

static inline int cap_ms(int timeout)
{
	if (cfg_cap >= 0 && (timeout < 0 || timeout > cfg_cap))
		return cfg_cap;
	return timeout;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int maxev, int timeout)
{
	init();
	if (!real_epoll_wait) {
		errno = ENOSYS;
		return -1;
	}
	return real_epoll_wait(epfd, ev, maxev, cap_ms(timeout));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int maxev,
		       int timeout, const sigset_t *sigmask)
{
	init();
	if (!real_epoll_pwait) {
		errno = ENOSYS;
		return -1;
	}
	return real_epoll_pwait(epfd, ev, maxev, cap_ms(timeout), sigmask);
}

/*
 * glibc >= 2.35 exports epoll_pwait2 (on 64-bit the time64 variant has the
 * same symbol).  Whether or not libc has it, our definition only forwards;
 * when libc lacks it we fail like an old kernel would, with ENOSYS.
 */
EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int maxev,
			const struct timespec *timeout, const sigset_t *sigmask)
{
	struct timespec capped;

	init();
	if (!real_epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	if (cfg_cap >= 0) {
		long long cap_ns = (long long)cfg_cap * 1000000LL;

		/* negative timespecs are passed on for the kernel to reject */
		if (!timeout ||
		    (timeout->tv_sec >= 0 &&
		     (long long)timeout->tv_sec > cap_ns / 1000000000LL) ||
		    (timeout->tv_sec >= 0 &&
		     (long long)timeout->tv_sec * 1000000000LL +
		     timeout->tv_nsec > cap_ns)) {
			capped.tv_sec = cap_ns / 1000000000LL;
			capped.tv_nsec = cap_ns % 1000000000LL;
			timeout = &capped;
		}
	}
	return real_epoll_pwait2(epfd, ev, maxev, timeout, sigmask);
}
