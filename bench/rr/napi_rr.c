// SPDX-License-Identifier: GPL-2.0
/*
 * napi_rr - open-loop UDP request/response latency benchmark over plain
 * UDP sockets or AF_XDP (libxdp xsk API), with the NAPI polling styles of
 * the series: interrupts, inline busy polling, a busy-polling thread,
 * threaded NAPI busy polling (no polling syscalls), epoll with
 * EPIOCSPARAMS (prefer busy poll / IRQ suspension) and io_uring with NAPI
 * busy polling registered (the series' io_uring IRQ suspension).
 *
 * The client sends from its own thread on an absolute schedule (request i
 * is due at start + i / rate) and measures latency from the intended send
 * time, so a stalled sender or receiver shows up as latency instead of
 * being hidden (no coordinated omission).  Only the client's clock is used.
 * The server echoes each request with addresses and ports swapped.
 *
 * The XDP program is hand-assembled BPF (no clang needed): it redirects
 * IPv4/UDP packets to our port into the XSKMAP and passes everything else;
 * redirected packets get bpf_ktime_get_ns() in 8 bytes of XDP metadata so
 * the client can measure XDP-to-application delivery delay.
 *
 * --poll (same meaning on both sides, for the receive path):
 *   block        UDP: blocking recvfrom; XDP: poll() on the XSK fd
 *   busy         SO_BUSY_POLL/SO_PREFER_BUSY_POLL/SO_BUSY_POLL_BUDGET;
 *                UDP: blocking recvfrom; XDP: recvfrom(MSG_DONTWAIT) kick
 *                whenever the RX ring is empty
 *   busy-thread  a second thread busy polls (XDP: recvfrom kicks, UDP:
 *                epoll_wait with EPIOCSPARAMS), the receiver only spins;
 *                --poller-cpu N pins that thread to CPU N, a core of its
 *                own (seed 000's "SO_BUSYPOLL (separate)")
 *   none         no polling syscalls (for threaded NAPI busy polling)
 *   epoll        epoll_wait with EPIOCSPARAMS, prefer_busy_poll = 1
 *   uring        UDP only: an io_uring ring with IORING_REGISTER_NAPI
 *                (busy_poll_to = --busy-poll-usecs, prefer_busy_poll = 1)
 *                waits for a POLL_ADD on the socket to complete, then
 *                recvfrom(MSG_DONTWAIT) drains it
 * Outside "busy"/XDP "busy-thread" SO_BUSY_POLL is forced to 0 so the
 * net.core.busy_read sysctl cannot add polling.  XDP copy mode transmits
 * only from sendto(), so every mode kicks TX with sendto().
 *
 * Client JSON (--json FILE, one object; times in ns, null if not measured):
 *   role, transport, poll       "client", "udp"|"xdp", poll mode
 *   rate_pps, delay_us, duration_s, warmup_s   the parameters
 *   sent, received              requests sent / unique replies, after warmup
 *   lost                        sent - received (no reply within the grace)
 *   unsent                      measured requests never sent: a sender a
 *                               whole run (warm-up + duration, + 1 s)
 *                               behind its schedule gives up
 *   reordered                   replies whose seq is below one already seen
 *   duplicates                  further replies for an already answered seq
 *   unexpected                  replies for a seq never sent, or garbage
 *   send_errors                 sends that failed (not counted in sent)
 *   warmup_sent, warmup_received  the same for the warmup period
 *   send_rate_pps, recv_rate_pps  achieved rates over the measured period
 *   latency_ns {p5,p50,p95,p99,p999,max,min,mean}  RTT from intended send
 *   sched_lag_ns {p99,max}      how late sends left vs. their schedule
 *   deliver_p50_ns, deliver_p99_ns, deliver_samples, deliver_invalid,
 *   deliver_reason              XDP metadata stamp -> application delay;
 *                               reason is null when the stamps were usable
 *   grace_ms                    wait for stragglers after the last send
 *   rx_polls, rx_wakeups, rx_empty, poller_polls  receive path syscalls
 *   poller_cpu                  the CPU the busy-thread poller ended on
 *                               (null without one)
 *   interrupted                 true if stopped by a signal
 * Client stdout: the window edge lines of bench/include/window.h,
 * {"window": "start"|"end", "ns": N, "sent": S, "served": R}, "start" when
 * the warm-up is over and "end" once the last request is sent or the
 * sender gave up (before the grace period); N is CLOCK_MONOTONIC, S the
 * requests sent so far and R the unique replies received so far, warm-up
 * included; then a human-readable summary.
 * Server JSON (stdout): {"role":"server","ready":true} once the socket is
 * up, then on exit one line: role, transport, poll, requests,
 *   replies, dropped, rx_polls, rx_wakeups, rx_empty, poller_polls,
 *   tx_kicks, elapsed_s.
 *
 * Exit codes: 0 ok, 1 runtime failure (or client interrupted), 2 usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/io_uring.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "hist.h"
#include "window.h"

#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL		46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL	69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET	70
#endif

/* Linux 6.9 uapi; the installed headers predate it. */
struct napi_rr_epoll_params {
	__u32 busy_poll_usecs;
	__u16 busy_poll_budget;
	__u8 prefer_busy_poll;
	__u8 __pad;
};
#define NAPI_RR_EPIOCSPARAMS	_IOW(0x8A, 0x01, struct napi_rr_epoll_params)

#define NSEC_PER_SEC	1000000000ull
#define NSEC_PER_MSEC	1000000ull
#define RR_MAGIC	0x6e617069u	/* "napi" */
#define HDR_LEN		(sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))
#define META_LEN	8
#define WAIT_MS		100		/* bound on blocking waits: notice stop */
#define CARRIER_WAIT_S	10		/* a reset NIC's link after an XDP attach */
#define RX_BATCH	64

#define NUM_FRAMES	4096
#define FRAME_SIZE	XSK_UMEM__DEFAULT_FRAME_SIZE
#define RING_SIZE	2048

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define pr_err(fmt, ...) fprintf(stderr, "napi_rr: " fmt "\n", ##__VA_ARGS__)
#define pr_errno(what)	 pr_err("%s: %s", what, strerror(errno))

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#else
#define cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif

enum role { ROLE_SERVER, ROLE_CLIENT };
enum transport { TR_UDP, TR_XDP };
enum poll_mode { POLL_BLOCK, POLL_BUSY, POLL_BUSY_THREAD, POLL_NONE, POLL_EPOLL, POLL_URING };

static const char * const transport_names[] = { "udp", "xdp" };
static const char * const poll_names[] = { "block", "busy", "busy-thread", "none", "epoll",
					   "uring" };

/* On the wire after the UDP header; the server echoes it untouched. */
struct rr_payload {
	uint32_t magic;
	uint32_t pad;
	uint64_t seq;
	uint64_t send_ns;	/* intended send time, client CLOCK_MONOTONIC */
	uint64_t spare;
};

/* The IP header sits 14 bytes into a frame: only 2-byte aligned. */
typedef struct iphdr __attribute__((aligned(2))) iphdr_t;

struct opts {
	enum role role;
	enum transport transport;
	enum poll_mode poll;
	const char *ifname;
	struct in_addr src, dst;	/* server: src is --addr */
	bool have_src, have_dst;
	uint16_t port;
	uint32_t queue;
	uint32_t busy_usecs;
	uint32_t budget;
	double duration, warmup;
	uint64_t rate;
	uint32_t delay_us;
	uint32_t on_ms, off_ms;	/* bursts of on_ms at --rate, off_ms apart */
	uint32_t send_spin_us;
	const char *json_path;
	uint8_t peer_mac[ETH_ALEN];
	bool have_peer_mac;
	bool xdp_native;
	int poller_cpu;		/* -1: not pinned */
};

struct rx_counters {
	uint64_t polls;		/* receive-path syscalls */
	uint64_t wakeups;	/* ... that returned with data */
	uint64_t empty;		/* ... that returned without data */
};

struct xdp_ctx {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	int map_fd, prog_fd, link_fd;
	uint64_t *tx_free;	/* client: free TX frames, sender thread only */
	uint32_t tx_nfree;
	uint64_t tx_kicks;
};

/*
 * A minimal io_uring (raw system calls: Debian 12's liburing 2.3 has no
 * NAPI helpers) that only ever holds one POLL_ADD on the UDP socket.
 */
struct uring {
	int fd;
	void *sq_ring, *cq_ring;
	size_t sq_ring_len, cq_ring_len, sqes_len;
	struct io_uring_sqe *sqes;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	bool armed;		/* the POLL_ADD is in flight */
};

struct endpoint {
	const struct opts *o;
	int fd;			/* UDP socket or XSK fd */
	int epfd;
	struct uring ring;
	int ifindex;
	uint8_t mac[ETH_ALEN];
	struct xdp_ctx x;
	struct rx_counters rxc;
	pthread_t poller;
	bool poller_started;
	int poller_stop;
	uint64_t poller_polls;
	int poller_ran_on;	/* sched_getcpu() where the poller ended, -1: none */
};

static int g_stop;	/* signal or fatal error: every loop ends */
static int g_failed;	/* a fatal runtime error happened */
static int g_signalled;

static bool stopping(void)
{
	return __atomic_load_n(&g_stop, __ATOMIC_RELAXED);
}

static void fail_stop(void)
{
	__atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&g_signalled, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void busy_wait_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		cpu_relax();
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / NSEC_PER_SEC, .tv_nsec = t % NSEC_PER_SEC };

	/* EINTR just returns early; callers re-check the time and stop flag */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* ---------------------------------------------------------------- usage */

static void usage(const char *msg)
{
	if (msg)
		pr_err("%s", msg);
	fprintf(stderr,
		"usage: napi_rr server --transport udp|xdp --ifname IF --addr IP --port P\n"
		"               [--queue Q] [--poll MODE] [--busy-poll-usecs N] [--budget N]\n"
		"               [--duration S] [--xdp-native]\n"
		"       napi_rr client --transport udp|xdp --ifname IF --src IP --dst IP --port P\n"
		"               --rate PPS --duration S [--delay US] [--warmup S] [--poll MODE]\n"
		"               [--json FILE] [--peer-mac MAC] [--queue Q] [--busy-poll-usecs N]\n"
		"               [--budget N] [--send-spin US] [--xdp-native] [--on-off ON_MS:OFF_MS]\n"
		"               [--poller-cpu N]\n"
		"MODE: block | busy | busy-thread | none | epoll | uring (default block)\n");
	exit(2);
}

static int parse_enum(const char *s, const char * const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static uint64_t parse_u64(const char *s, const char *what, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max || *s == '-') {
		pr_err("bad %s: '%s'", what, s);
		usage(NULL);
	}
	return v;
}

static double parse_secs(const char *s, const char *what)
{
	char *end;
	double v;

	v = strtod(s, &end);
	if (end == s || *end || v < 0 || v > 86400) {
		pr_err("bad %s: '%s'", what, s);
		usage(NULL);
	}
	return v;
}

static void parse_ip(const char *s, struct in_addr *a, bool *have)
{
	if (inet_pton(AF_INET, s, a) != 1) {
		pr_err("bad IPv4 address '%s'", s);
		usage(NULL);
	}
	*have = true;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "transport", 1, 0, 't' }, { "ifname", 1, 0, 'i' },
		{ "addr", 1, 0, 'a' }, { "src", 1, 0, 's' }, { "dst", 1, 0, 'D' },
		{ "port", 1, 0, 'p' }, { "queue", 1, 0, 'q' }, { "poll", 1, 0, 'P' },
		{ "busy-poll-usecs", 1, 0, 'u' }, { "budget", 1, 0, 'b' },
		{ "duration", 1, 0, 'T' }, { "warmup", 1, 0, 'w' },
		{ "rate", 1, 0, 'r' }, { "delay", 1, 0, 'd' }, { "json", 1, 0, 'j' },
		{ "peer-mac", 1, 0, 'm' }, { "send-spin", 1, 0, 'S' },
		{ "xdp-native", 0, 0, 'N' }, { "on-off", 1, 0, 'O' },
		{ "poller-cpu", 1, 0, 'C' },
		{ "help", 0, 0, 'h' }, { 0 }
	};
	bool have_transport = false;
	int c, v;

	if (argc < 2)
		usage(NULL);
	if (!strcmp(argv[1], "server"))
		o->role = ROLE_SERVER;
	else if (!strcmp(argv[1], "client"))
		o->role = ROLE_CLIENT;
	else
		usage("first argument must be 'server' or 'client'");

	o->busy_usecs = 50;
	o->budget = 64;
	o->warmup = 0.5;
	o->poller_cpu = -1;
	while ((c = getopt_long(argc - 1, argv + 1, "", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			v = parse_enum(optarg, transport_names, ARRAY_SIZE(transport_names));
			if (v < 0)
				usage("--transport must be udp or xdp");
			o->transport = v;
			have_transport = true;
			break;
		case 'i': o->ifname = optarg; break;
		case 'a':
		case 's': parse_ip(optarg, &o->src, &o->have_src); break;
		case 'D': parse_ip(optarg, &o->dst, &o->have_dst); break;
		case 'p': o->port = parse_u64(optarg, "port", 65535); break;
		case 'q': o->queue = parse_u64(optarg, "queue", 65535); break;
		case 'P':
			v = parse_enum(optarg, poll_names, ARRAY_SIZE(poll_names));
			if (v < 0)
				usage("--poll must be block, busy, busy-thread, none, epoll or uring");
			o->poll = v;
			break;
		case 'u': o->busy_usecs = parse_u64(optarg, "busy-poll-usecs", INT32_MAX); break;
		case 'b': o->budget = parse_u64(optarg, "budget", 65535); break;
		case 'T': o->duration = parse_secs(optarg, "duration"); break;
		case 'w': o->warmup = parse_secs(optarg, "warmup"); break;
		case 'r': o->rate = parse_u64(optarg, "rate", 100000000); break;
		case 'd': o->delay_us = parse_u64(optarg, "delay", 10000000); break;
		case 'S': o->send_spin_us = parse_u64(optarg, "send-spin", 1000000); break;
		case 'j': o->json_path = optarg; break;
		case 'm':
			if (sscanf(optarg, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx%n",
				   &o->peer_mac[0], &o->peer_mac[1], &o->peer_mac[2],
				   &o->peer_mac[3], &o->peer_mac[4], &o->peer_mac[5], &v) != 6 ||
			    optarg[v])
				usage("--peer-mac must look like 02:00:00:00:00:01");
			o->have_peer_mac = true;
			break;
		case 'N': o->xdp_native = true; break;
		case 'C': o->poller_cpu = parse_u64(optarg, "poller-cpu", CPU_SETSIZE - 1); break;
		case 'O':
			if (sscanf(optarg, "%u:%u%n", &o->on_ms, &o->off_ms, &v) != 2 || optarg[v] ||
			    !o->on_ms || !o->off_ms)
				usage("--on-off must be ON_MS:OFF_MS, both > 0");
			break;
		default: usage(NULL);
		}
	}
	if (optind != argc - 1)
		usage("unexpected extra arguments");
	if (!have_transport || !o->ifname || !o->port || !o->have_src)
		usage("--transport, --ifname, --port and --addr/--src are required");
	if (o->role == ROLE_CLIENT && (!o->have_dst || !o->rate || o->duration <= 0))
		usage("client needs --dst, --rate > 0 and --duration > 0");
	if (o->role == ROLE_SERVER && (o->have_dst || o->rate || o->delay_us || o->json_path ||
				       o->have_peer_mac || o->on_ms))
		usage("--dst, --rate, --delay, --json, --peer-mac and --on-off are client options");
	if (o->transport == TR_UDP && o->xdp_native)
		usage("--xdp-native needs --transport xdp");
	if ((o->poll == POLL_BUSY || o->poll == POLL_BUSY_THREAD) && !o->busy_usecs)
		usage("--poll busy/busy-thread need --busy-poll-usecs > 0 (0 disables busy polling)");
	if (o->poller_cpu >= 0 && o->poll != POLL_BUSY_THREAD)
		usage("--poller-cpu needs --poll busy-thread");
	if (o->poll == POLL_URING && o->transport != TR_UDP)
		usage("--poll uring needs --transport udp (AF_XDP rings are not io_uring's)");
}

/* ------------------------------------------------------------- packets */

static uint16_t ip_csum(const void *data, size_t len)
{
	const uint16_t *p = data;
	uint32_t sum = 0;

	for (; len > 1; len -= 2)
		sum += *p++;
	if (len)
		sum += *(const uint8_t *)p;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t build_frame(const struct endpoint *ep, const uint8_t *dst_mac,
			  uint8_t *buf, const struct rr_payload *pl)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	iphdr_t *ip = (iphdr_t *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);

	memcpy(eth->h_dest, dst_mac, ETH_ALEN);
	memcpy(eth->h_source, ep->mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + sizeof(*pl));
	ip->id = htons((uint16_t)pl->seq);
	ip->frag_off = htons(0x4000);	/* DF */
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->check = 0;
	ip->saddr = ep->o->src.s_addr;
	ip->daddr = ep->o->dst.s_addr;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons(ep->o->port);	/* same port both ways: one filter */
	udp->dest = htons(ep->o->port);
	udp->len = htons(sizeof(*udp) + sizeof(*pl));
	udp->check = 0;				/* legal for IPv4 */
	memcpy(udp + 1, pl, sizeof(*pl));
	return HDR_LEN + sizeof(*pl);
}

/* Our UDP packet, as the XDP program matched it (IPv4 without options). */
static bool frame_is_ours(const uint8_t *pkt, uint32_t len, uint16_t port)
{
	const struct ethhdr *eth = (const void *)pkt;
	const iphdr_t *ip = (const void *)(eth + 1);
	const struct udphdr *udp = (const void *)(ip + 1);

	return len >= HDR_LEN && eth->h_proto == htons(ETH_P_IP) &&
	       ip->version == 4 && ip->ihl == 5 && ip->protocol == IPPROTO_UDP &&
	       udp->dest == htons(port);
}

/* Turn a request into its reply in place; checksums do not change. */
static void swap_frame(uint8_t *pkt)
{
	struct ethhdr *eth = (struct ethhdr *)pkt;
	iphdr_t *ip = (iphdr_t *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint8_t mac[ETH_ALEN];
	uint32_t a;
	uint16_t p;

	memcpy(mac, eth->h_dest, ETH_ALEN);
	memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	memcpy(eth->h_source, mac, ETH_ALEN);
	a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	p = udp->source;
	udp->source = udp->dest;
	udp->dest = p;
}

static int get_own_mac(const char *ifname, uint8_t *mac)
{
	struct ifreq ifr = { 0 };
	int fd, ret;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		pr_errno("socket");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ret = ioctl(fd, SIOCGIFHWADDR, &ifr);
	if (ret)
		pr_err("ioctl(SIOCGIFHWADDR, %s): %s", ifname, strerror(errno));
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	close(fd);
	return ret;
}

/*
 * Attaching a driver-mode XDP program resets some NICs (igb closes and
 * reopens the device), and their carrier comes back only from the
 * driver's watchdog, hundreds of milliseconds later. Until then the XSK
 * copy-mode transmit path drops every frame (__dev_direct_xmit), so wait
 * for the carrier before anything is sent or the server says it is ready.
 */
static int wait_for_carrier(const char *ifname)
{
	uint64_t deadline = now_ns() + CARRIER_WAIT_S * NSEC_PER_SEC;
	char path[64 + IFNAMSIZ], state = '0';
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/carrier", ifname);
	for (;;) {
		f = fopen(path, "r");
		if (f) {
			/* reading it fails while the device is down: not up yet */
			if (fread(&state, 1, 1, f) != 1)
				state = '0';
			fclose(f);
		}
		if (state == '1')
			return 0;
		if (now_ns() >= deadline || stopping()) {
			pr_err("%s: no carrier %d s after attaching XDP", ifname, CARRIER_WAIT_S);
			return -1;
		}
		usleep(10000);
	}
}

/* Peer MAC from the neighbour table; the harness pings first to fill it. */
static int get_peer_mac(const struct opts *o, uint8_t *mac)
{
	char line[256], ip[64], hw[64], dev[64], want[INET_ADDRSTRLEN];
	unsigned int type, flags;
	FILE *f;
	int ret = -1;

	inet_ntop(AF_INET, &o->dst, want, sizeof(want));
	f = fopen("/proc/net/arp", "r");
	if (!f) {
		pr_errno("open /proc/net/arp");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %63s", ip, &type, &flags, hw, dev) != 5)
			continue;
		if (strcmp(ip, want) || strcmp(dev, o->ifname) || !(flags & 0x2))
			continue;
		if (sscanf(hw, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2],
			   &mac[3], &mac[4], &mac[5]) == 6)
			ret = 0;
		break;
	}
	fclose(f);
	if (ret)
		pr_err("no complete ARP entry for %s on %s: ping it first or pass --peer-mac",
		       want, o->ifname);
	return ret;
}

/* ---------------------------------------------------------- XDP program */

#define I_RAW(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define I_MOV_REG(d, s)		I_RAW(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define I_MOV_IMM(d, i)		I_RAW(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define I_ADD_IMM(d, i)		I_RAW(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define I_LDX(sz, d, s, o)	I_RAW(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define I_STX(sz, d, s, o)	I_RAW(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define I_JGT_REG(d, s, o)	I_RAW(BPF_JMP | BPF_JGT | BPF_X, d, s, o, 0)
#define I_JNE_IMM(d, i, o)	I_RAW(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define I_CALL(f)		I_RAW(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define I_EXIT()		I_RAW(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define I_LD_MAP(d, fd)		I_RAW(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), \
				I_RAW(0, 0, 0, 0, 0)

/*
 * r6 = ctx.  Match eth/IPv4(ihl 5)/UDP dport == port, else XDP_PASS.
 * Matching packets: try bpf_xdp_adjust_meta(-8) and store the ktime there
 * (skipped if the driver has no metadata room), then
 * bpf_redirect_map(xsks, rx_queue_index, XDP_PASS) so a queue without a
 * socket still passes the packet up the stack.
 */
static int xdp_prog_load(int map_fd, uint16_t port)
{
	enum { L_REDIRECT = 26, L_PASS = 32 };
	struct bpf_insn insns[] = {
		/*  0 */ I_MOV_REG(BPF_REG_6, BPF_REG_1),
		/*  1 */ I_LDX(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, data)),
		/*  2 */ I_LDX(BPF_W, BPF_REG_3, BPF_REG_6, offsetof(struct xdp_md, data_end)),
		/*  3 */ I_MOV_REG(BPF_REG_4, BPF_REG_2),
		/*  4 */ I_ADD_IMM(BPF_REG_4, HDR_LEN),
		/*  5 */ I_JGT_REG(BPF_REG_4, BPF_REG_3, L_PASS - 6),
		/*  6 */ I_LDX(BPF_H, BPF_REG_4, BPF_REG_2, offsetof(struct ethhdr, h_proto)),
		/*  7 */ I_JNE_IMM(BPF_REG_4, htons(ETH_P_IP), L_PASS - 8),
		/*  8 */ I_LDX(BPF_B, BPF_REG_4, BPF_REG_2, ETH_HLEN),
		/*  9 */ I_JNE_IMM(BPF_REG_4, 0x45, L_PASS - 10),
		/* 10 */ I_LDX(BPF_B, BPF_REG_4, BPF_REG_2, ETH_HLEN + offsetof(struct iphdr, protocol)),
		/* 11 */ I_JNE_IMM(BPF_REG_4, IPPROTO_UDP, L_PASS - 12),
		/* 12 */ I_LDX(BPF_H, BPF_REG_4, BPF_REG_2, ETH_HLEN + sizeof(struct iphdr) +
			       offsetof(struct udphdr, dest)),
		/* 13 */ I_JNE_IMM(BPF_REG_4, htons(port), L_PASS - 14),
		/* 14 */ I_MOV_REG(BPF_REG_1, BPF_REG_6),
		/* 15 */ I_MOV_IMM(BPF_REG_2, -META_LEN),
		/* 16 */ I_CALL(BPF_FUNC_xdp_adjust_meta),
		/* 17 */ I_JNE_IMM(BPF_REG_0, 0, L_REDIRECT - 18),
		/* 18 */ I_LDX(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, data_meta)),
		/* 19 */ I_LDX(BPF_W, BPF_REG_3, BPF_REG_6, offsetof(struct xdp_md, data)),
		/* 20 */ I_MOV_REG(BPF_REG_4, BPF_REG_2),
		/* 21 */ I_ADD_IMM(BPF_REG_4, META_LEN),
		/* 22 */ I_JGT_REG(BPF_REG_4, BPF_REG_3, L_REDIRECT - 23),
		/* 23 */ I_MOV_REG(BPF_REG_7, BPF_REG_2),
		/* 24 */ I_CALL(BPF_FUNC_ktime_get_ns),
		/* 25 */ I_STX(BPF_DW, BPF_REG_7, BPF_REG_0, 0),
		/* 26 L_REDIRECT */
		I_LDX(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, rx_queue_index)),
		/* 27, 28 */ I_LD_MAP(BPF_REG_1, map_fd),
		/* 29 */ I_MOV_IMM(BPF_REG_3, XDP_PASS),
		/* 30 */ I_CALL(BPF_FUNC_redirect_map),
		/* 31 */ I_EXIT(),
		/* 32 L_PASS */ I_MOV_IMM(BPF_REG_0, XDP_PASS),
		/* 33 */ I_EXIT(),
	};
	static char log[16384];
	LIBBPF_OPTS(bpf_prog_load_opts, lo, .log_buf = log, .log_size = sizeof(log));
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "napi_rr_xdp", "GPL", insns, ARRAY_SIZE(insns), &lo);
	if (fd < 0)
		pr_err("bpf_prog_load(XDP): %s\n%s", strerror(-fd), log);
	return fd;
}

/* ---------------------------------------------------------- endpoints */

static int set_sockopt_int(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val))) {
		pr_err("setsockopt(%s=%d): %s", what, val, strerror(errno));
		return -1;
	}
	return 0;
}

/* Per-socket busy polling (SO_BUSY_POLL etc. need CAP_NET_ADMIN). */
static int set_busy_poll_opts(const struct endpoint *ep)
{
	if (set_sockopt_int(ep->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, 1, "SO_PREFER_BUSY_POLL") ||
	    set_sockopt_int(ep->fd, SOL_SOCKET, SO_BUSY_POLL, ep->o->busy_usecs, "SO_BUSY_POLL") ||
	    set_sockopt_int(ep->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, ep->o->budget,
			    "SO_BUSY_POLL_BUDGET"))
		return -1;
	return 0;
}

/*
 * Sockets inherit SO_BUSY_POLL from net.core.busy_read; clear it so that
 * only the selected mode polls (e.g. "none" must not poll from recv()).
 */
static int no_inline_busy_poll(const struct endpoint *ep)
{
	return set_sockopt_int(ep->fd, SOL_SOCKET, SO_BUSY_POLL, 0, "SO_BUSY_POLL");
}

static int epoll_setup(struct endpoint *ep, bool edge)
{
	struct napi_rr_epoll_params p = {
		.busy_poll_usecs = ep->o->busy_usecs,
		.busy_poll_budget = ep->o->budget,
		.prefer_busy_poll = 1,
	};
	struct epoll_event ev = { .events = EPOLLIN | (edge ? EPOLLET : 0) };

	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ep->epfd < 0) {
		pr_errno("epoll_create1");
		return -1;
	}
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->fd, &ev)) {
		pr_errno("epoll_ctl(ADD)");
		return -1;
	}
	if (ioctl(ep->epfd, NAPI_RR_EPIOCSPARAMS, &p)) {
		if (errno == ENOTTY || errno == EINVAL)
			pr_err("ioctl(EPIOCSPARAMS): %s: epoll busy-poll parameters need Linux >= 6.9 built with CONFIG_NET_RX_BUSY_POLL",
			       strerror(errno));
		else
			pr_errno("ioctl(EPIOCSPARAMS)");
		return -1;
	}
	return 0;
}

/* IORING_REGISTER_NAPI (Linux 6.9) postdates Debian 12's uapi headers. */
#define NAPI_RR_IORING_REGISTER_NAPI	27
struct napi_rr_uring_napi {
	__u32 busy_poll_to;
	__u8 prefer_busy_poll;
	__u8 pad[3];
	__u64 resv;
};

#define URING_POLL_TAG	1	/* user_data of the POLL_ADD */

static void *uring_map(int fd, size_t len, off_t off)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A ring with NAPI busy polling registered: its waits busy poll the NAPIs
 * of the sockets it polled (the kernel learns them when the POLL_ADD arms)
 * and, with prefer_busy_poll and an irq-suspend-timeout on the NAPI, keep
 * their IRQs suspended while completions keep coming (the series).
 */
static int uring_setup(struct endpoint *ep)
{
	struct napi_rr_uring_napi napi = {
		.busy_poll_to = ep->o->busy_usecs,
		.prefer_busy_poll = 1,
	};
	struct io_uring_params p = { 0 };
	struct uring *u = &ep->ring;

	u->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (u->fd < 0) {
		pr_errno("io_uring_setup");
		return -1;
	}
	u->sq_ring_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	u->cq_ring_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		pr_err("io_uring without IORING_FEAT_SINGLE_MMAP (Linux < 5.4)");
		return -1;
	}
	if (u->cq_ring_len > u->sq_ring_len)
		u->sq_ring_len = u->cq_ring_len;
	u->sq_ring = uring_map(u->fd, u->sq_ring_len, IORING_OFF_SQ_RING);
	u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	u->sqes = uring_map(u->fd, u->sqes_len, IORING_OFF_SQES);
	if (!u->sq_ring || !u->sqes) {
		pr_errno("mmap(io_uring)");
		return -1;
	}
	u->cq_ring = u->sq_ring;
	u->sq_head = (unsigned int *)((char *)u->sq_ring + p.sq_off.head);
	u->sq_tail = (unsigned int *)((char *)u->sq_ring + p.sq_off.tail);
	u->sq_mask = (unsigned int *)((char *)u->sq_ring + p.sq_off.ring_mask);
	u->sq_array = (unsigned int *)((char *)u->sq_ring + p.sq_off.array);
	u->cq_head = (unsigned int *)((char *)u->cq_ring + p.cq_off.head);
	u->cq_tail = (unsigned int *)((char *)u->cq_ring + p.cq_off.tail);
	u->cq_mask = (unsigned int *)((char *)u->cq_ring + p.cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)((char *)u->cq_ring + p.cq_off.cqes);
	if (syscall(__NR_io_uring_register, u->fd, NAPI_RR_IORING_REGISTER_NAPI, &napi, 1)) {
		if (errno == EINVAL)
			pr_err("IORING_REGISTER_NAPI: %s: io_uring NAPI busy polling needs Linux >= 6.9 built with CONFIG_NET_RX_BUSY_POLL",
			       strerror(errno));
		else
			pr_errno("IORING_REGISTER_NAPI");
		return -1;
	}
	return 0;
}

static void uring_close(struct uring *u)
{
	if (u->sqes)
		munmap(u->sqes, u->sqes_len);
	if (u->sq_ring)
		munmap(u->sq_ring, u->sq_ring_len);
	if (u->fd >= 0)
		close(u->fd);
}

static int udp_open(struct endpoint *ep)
{
	const struct opts *o = ep->o;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(o->port),
				  .sin_addr = o->src };
	struct timeval tv = { .tv_usec = WAIT_MS * 1000 };

	ep->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ep->fd < 0) {
		pr_errno("socket(UDP)");
		return -1;
	}
	if (setsockopt(ep->fd, SOL_SOCKET, SO_BINDTODEVICE, o->ifname, strlen(o->ifname))) {
		pr_err("setsockopt(SO_BINDTODEVICE, %s): %s", o->ifname, strerror(errno));
		return -1;
	}
	if (bind(ep->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		pr_errno("bind");
		return -1;
	}
	/* hold about as many small packets as an XSK ring (default: ~270) */
	if (set_sockopt_int(ep->fd, SOL_SOCKET, SO_RCVBUFFORCE, 4 << 20, "SO_RCVBUFFORCE"))
		return -1;
	/* blocking receives wake up now and then to notice a stop request */
	if (setsockopt(ep->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		pr_errno("setsockopt(SO_RCVTIMEO)");
		return -1;
	}
	if (o->role == ROLE_CLIENT) {
		sa.sin_addr = o->dst;
		if (connect(ep->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			pr_errno("connect");
			return -1;
		}
	}
	return 0;
}

static int xdp_fill(struct endpoint *ep, const uint64_t *addrs, uint32_t n)
{
	uint32_t idx, i;

	/* never fails: the fill ring can hold every frame of the umem */
	if (xsk_ring_prod__reserve(&ep->x.fill, n, &idx) != n) {
		pr_err("fill ring full (frame accounting bug)");
		return -1;
	}
	for (i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&ep->x.fill, idx + i) = addrs[i];
	xsk_ring_prod__submit(&ep->x.fill, n);
	return 0;
}

/*
 * Client: frames [0, RING_SIZE) receive, the rest transmit.  Server: all
 * frames receive, and a request's frame is sent back as its reply.
 */
static int xdp_init_frames(struct endpoint *ep)
{
	uint32_t n_rx = ep->o->role == ROLE_CLIENT ? RING_SIZE : NUM_FRAMES;
	uint64_t addr;
	uint32_t i;

	for (i = 0; i < n_rx; i++) {
		addr = (uint64_t)i * FRAME_SIZE;
		if (xdp_fill(ep, &addr, 1))
			return -1;
	}
	if (ep->o->role == ROLE_SERVER)
		return 0;
	ep->x.tx_free = calloc(NUM_FRAMES - n_rx, sizeof(uint64_t));
	if (!ep->x.tx_free) {
		pr_errno("calloc");
		return -1;
	}
	for (i = n_rx; i < NUM_FRAMES; i++)
		ep->x.tx_free[ep->x.tx_nfree++] = (uint64_t)i * FRAME_SIZE;
	return 0;
}

static int xdp_open(struct endpoint *ep)
{
	const struct opts *o = ep->o;
	struct xsk_umem_config ucfg = {
		.fill_size = NUM_FRAMES, .comp_size = NUM_FRAMES,
		.frame_size = FRAME_SIZE, .frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RING_SIZE, .tx_size = RING_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = o->xdp_native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE,
		/* native: let the kernel pick zero-copy if it can */
		.bind_flags = XDP_USE_NEED_WAKEUP | (o->xdp_native ? 0 : XDP_COPY),
	};
	LIBBPF_OPTS(bpf_link_create_opts, lopts, .flags = scfg.xdp_flags);
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	size_t len = (size_t)NUM_FRAMES * FRAME_SIZE;
	int ret, fd;

	setrlimit(RLIMIT_MEMLOCK, &rl);	/* older kernels charge umem to it */
	ep->x.area = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (ep->x.area == MAP_FAILED) {
		ep->x.area = NULL;
		pr_errno("mmap(umem)");
		return -1;
	}
	ret = xsk_umem__create(&ep->x.umem, ep->x.area, len, &ep->x.fill, &ep->x.comp, &ucfg);
	if (ret) {
		ep->x.umem = NULL;
		pr_err("xsk_umem__create: %s", strerror(-ret));
		return -1;
	}
	ret = xsk_socket__create(&ep->x.xsk, o->ifname, o->queue, ep->x.umem,
				 &ep->x.rx, &ep->x.tx, &scfg);
	if (ret) {
		ep->x.xsk = NULL;
		pr_err("xsk_socket__create(%s, queue %u, %s): %s", o->ifname, o->queue,
		       o->xdp_native ? "native" : "copy", strerror(-ret));
		return -1;
	}
	ep->fd = xsk_socket__fd(ep->x.xsk);
	ep->x.map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "napi_rr_xsks", 4, 4, 64, NULL);
	if (ep->x.map_fd < 0) {
		pr_err("bpf_map_create(XSKMAP): %s", strerror(-ep->x.map_fd));
		return -1;
	}
	fd = ep->fd;
	ret = bpf_map_update_elem(ep->x.map_fd, &o->queue, &fd, 0);
	if (ret) {
		pr_err("bpf_map_update_elem(xsks[%u]): %s", o->queue, strerror(errno));
		return -1;
	}
	ep->x.prog_fd = xdp_prog_load(ep->x.map_fd, o->port);
	if (ep->x.prog_fd < 0)
		return -1;
	/* a link detaches by itself if we die without cleaning up */
	ep->x.link_fd = bpf_link_create(ep->x.prog_fd, ep->ifindex, BPF_XDP, &lopts);
	if (ep->x.link_fd < 0) {
		pr_err("attach XDP (%s mode) to %s: %s%s", o->xdp_native ? "driver" : "generic/SKB",
		       o->ifname, strerror(-ep->x.link_fd),
		       ep->x.link_fd == -EBUSY ? " (another XDP program is attached)" : "");
		return -1;
	}
	return wait_for_carrier(o->ifname) ?: xdp_init_frames(ep);
}

static void ep_init(struct endpoint *ep, const struct opts *o)
{
	memset(ep, 0, sizeof(*ep));
	ep->o = o;
	ep->fd = ep->epfd = ep->ring.fd = -1;
	ep->x.map_fd = ep->x.prog_fd = ep->x.link_fd = -1;
	ep->poller_ran_on = -1;
}

static int ep_open(struct endpoint *ep)
{
	const struct opts *o = ep->o;

	ep->ifindex = if_nametoindex(o->ifname);
	if (!ep->ifindex) {
		pr_err("interface %s: %s", o->ifname, strerror(errno));
		return -1;
	}
	if (o->transport == TR_XDP) {
		if (get_own_mac(o->ifname, ep->mac) || xdp_open(ep))
			return -1;
	} else if (udp_open(ep)) {
		return -1;
	}
	switch (o->poll) {
	case POLL_BUSY:
		return set_busy_poll_opts(ep);
	case POLL_BUSY_THREAD:
		if (o->transport == TR_XDP)	/* the poller's recvfrom() needs it */
			return set_busy_poll_opts(ep);
		return no_inline_busy_poll(ep) ?: epoll_setup(ep, true);
	case POLL_EPOLL:
		return no_inline_busy_poll(ep) ?: epoll_setup(ep, false);
	case POLL_URING:
		return no_inline_busy_poll(ep) ?: uring_setup(ep);
	default:
		return no_inline_busy_poll(ep);
	}
}

static void ep_close(struct endpoint *ep)
{
	if (ep->epfd >= 0)
		close(ep->epfd);
	uring_close(&ep->ring);
	if (ep->o->transport == TR_UDP) {
		if (ep->fd >= 0)
			close(ep->fd);
		return;
	}
	if (ep->x.link_fd >= 0)
		close(ep->x.link_fd);	/* detaches the program */
	if (ep->x.prog_fd >= 0)
		close(ep->x.prog_fd);
	if (ep->x.map_fd >= 0)
		close(ep->x.map_fd);
	if (ep->x.xsk)
		xsk_socket__delete(ep->x.xsk);
	if (ep->x.umem && xsk_umem__delete(ep->x.umem))
		pr_err("xsk_umem__delete: umem still busy");
	if (ep->x.area)
		munmap(ep->x.area, (size_t)NUM_FRAMES * FRAME_SIZE);
	free(ep->x.tx_free);
	ep_init(ep, ep->o);
}

/* ------------------------------------------------------ receive paths */

/* The kick/poll syscalls on an XSK fail transiently under pressure. */
static bool xsk_errno_transient(int err)
{
	return err == EAGAIN || err == EBUSY || err == ENOBUFS || err == EINTR ||
	       err == ENETDOWN;
}

static int xsk_recv_kick(struct endpoint *ep)
{
	if (recvfrom(ep->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL) < 0 &&
	    !xsk_errno_transient(errno)) {
		pr_errno("recvfrom(xsk)");
		return -1;
	}
	return 0;
}

/* Sleep or poll until a wait-style mode reports data; -1 on error. */
static int wait_readable(struct endpoint *ep)
{
	struct epoll_event ev;
	struct pollfd pfd = { .fd = ep->fd, .events = POLLIN };
	int n;

	if (ep->o->poll == POLL_EPOLL)
		n = epoll_wait(ep->epfd, &ev, 1, WAIT_MS);
	else
		n = poll(&pfd, 1, WAIT_MS);
	ep->rxc.polls++;
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		pr_errno(ep->o->poll == POLL_EPOLL ? "epoll_wait" : "poll");
		return -1;
	}
	if (n)
		ep->rxc.wakeups++;
	else
		ep->rxc.empty++;
	return 0;
}

/*
 * uring: arm a POLL_ADD on the socket unless one is in flight, and wait
 * up to WAIT_MS for a completion: the wait busy polls the ring's NAPIs.
 */
static int uring_wait_readable(struct endpoint *ep)
{
	struct __kernel_timespec ts = { .tv_nsec = WAIT_MS * 1000000L };
	struct io_uring_getevents_arg arg = { .ts = (uintptr_t)&ts };
	struct uring *u = &ep->ring;
	unsigned int head, tail, to_submit;
	struct io_uring_sqe *sqe;
	bool completed = false;

	if (!u->armed) {
		tail = *u->sq_tail;
		sqe = &u->sqes[tail & *u->sq_mask];
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_POLL_ADD;
		sqe->fd = ep->fd;
		sqe->poll32_events = POLLIN;
		sqe->user_data = URING_POLL_TAG;
		u->sq_array[tail & *u->sq_mask] = tail & *u->sq_mask;
		__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
		u->armed = true;
	}
	/* An SQE a failed enter left unconsumed goes with this one. */
	to_submit = *u->sq_tail - __atomic_load_n(u->sq_head, __ATOMIC_ACQUIRE);
	if (syscall(__NR_io_uring_enter, u->fd, to_submit, 1,
		    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg)) < 0 &&
	    errno != ETIME && errno != EINTR && errno != EAGAIN && errno != EBUSY) {
		pr_errno("io_uring_enter");
		return -1;
	}
	ep->rxc.polls++;
	head = *u->cq_head;
	tail = __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE);
	for (; head != tail; head++) {
		struct io_uring_cqe *cqe = &u->cqes[head & *u->cq_mask];

		if (cqe->user_data != URING_POLL_TAG)
			continue;
		u->armed = false;
		if (cqe->res < 0) {
			pr_err("io_uring POLL_ADD: %s", strerror(-cqe->res));
			__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
			return -1;
		}
		completed = true;
	}
	__atomic_store_n(u->cq_head, head, __ATOMIC_RELEASE);
	if (completed)
		ep->rxc.wakeups++;
	else
		ep->rxc.empty++;
	return 0;
}

/*
 * Peek up to RX_BATCH descriptors; when the ring is empty, do what the
 * poll mode says once and return 0 so the caller can check for stop.
 */
static int xdp_rx_peek(struct endpoint *ep, uint32_t *idx)
{
	uint32_t n = xsk_ring_cons__peek(&ep->x.rx, RX_BATCH, idx);

	if (n)
		return n;
	switch (ep->o->poll) {
	case POLL_BLOCK:
	case POLL_EPOLL:
	case POLL_URING:	/* not with XDP: parse_opts() refuses it */
		return wait_readable(ep);
	case POLL_BUSY:
		ep->rxc.polls++;
		return xsk_recv_kick(ep);	/* runs the socket's busy poll */
	case POLL_BUSY_THREAD:
	case POLL_NONE:
		/* zero-copy drivers may still want a wakeup to refill */
		if (xsk_ring_prod__needs_wakeup(&ep->x.fill) && ep->o->xdp_native) {
			ep->rxc.polls++;
			return xsk_recv_kick(ep);
		}
		cpu_relax();
		return 0;
	}
	return 0;
}

/* One datagram: >0 bytes, 0 nothing this time, -1 fatal. */
static ssize_t udp_rx(struct endpoint *ep, void *buf, size_t len, struct sockaddr_in *from)
{
	bool blocking = ep->o->poll == POLL_BLOCK || ep->o->poll == POLL_BUSY;
	socklen_t slen = sizeof(*from);
	ssize_t n;

	n = recvfrom(ep->fd, buf, len, blocking ? 0 : MSG_DONTWAIT,
		     (struct sockaddr *)from, from ? &slen : NULL);
	ep->rxc.polls++;
	if (n >= 0) {
		ep->rxc.wakeups++;
		return n;
	}
	if (errno != EAGAIN && errno != EINTR) {
		pr_errno("recvfrom");
		return -1;
	}
	ep->rxc.empty++;
	if (blocking)
		return 0;
	if (ep->o->poll == POLL_EPOLL)
		return wait_readable(ep);
	if (ep->o->poll == POLL_URING)
		return uring_wait_readable(ep);
	cpu_relax();
	return 0;
}

/*
 * busy-thread: this thread keeps the NAPI busy polled while the receiver
 * only looks at its ring/socket.  An epoll_wait with timeout 0 returns
 * before busy polling (ep_poll), so the UDP variant waits 1 ms on an
 * edge-triggered epoll: it busy polls up to --busy-poll-usecs per call and
 * returns as soon as a packet lands on the socket.
 */
static void *poller_main(void *arg)
{
	struct endpoint *ep = arg;
	struct epoll_event ev;
	cpu_set_t cpus;
	int ret;

	if (ep->o->poller_cpu >= 0) {
		CPU_ZERO(&cpus);
		CPU_SET(ep->o->poller_cpu, &cpus);
		ret = pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
		if (ret) {
			pr_err("poller on CPU %d: %s", ep->o->poller_cpu, strerror(ret));
			fail_stop();
			return NULL;
		}
	}
	while (!__atomic_load_n(&ep->poller_stop, __ATOMIC_RELAXED)) {
		if (ep->o->transport == TR_XDP) {
			if (xsk_recv_kick(ep))
				break;
		} else if (epoll_wait(ep->epfd, &ev, 1, 1) < 0 && errno != EINTR) {
			pr_errno("epoll_wait(poller)");
			break;
		}
		ep->poller_polls++;
	}
	__atomic_store_n(&ep->poller_ran_on, sched_getcpu(), __ATOMIC_RELAXED);
	if (!__atomic_load_n(&ep->poller_stop, __ATOMIC_RELAXED))
		fail_stop();
	return NULL;
}

/* Threads other than main leave SIGINT/SIGTERM to main. */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t set, old;
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		pr_err("pthread_create: %s", strerror(ret));
	return ret ? -1 : 0;
}

static int poller_start(struct endpoint *ep)
{
	if (ep->o->poll != POLL_BUSY_THREAD)
		return 0;
	if (start_thread(&ep->poller, poller_main, ep))
		return -1;
	ep->poller_started = true;
	return 0;
}

static void poller_stop(struct endpoint *ep)
{
	if (!ep->poller_started)
		return;
	__atomic_store_n(&ep->poller_stop, 1, __ATOMIC_RELAXED);
	pthread_join(ep->poller, NULL);
	ep->poller_started = false;
}

/* --------------------------------------------------------------- server */

struct server_stats {
	uint64_t requests, replies, dropped;
};

/* Completed TX frames go back to the fill ring for new requests. */
static int xdp_recycle_completions(struct endpoint *ep)
{
	uint64_t addrs[RX_BATCH];
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&ep->x.comp, RX_BATCH, &idx);
	for (i = 0; i < n; i++)
		addrs[i] = *xsk_ring_cons__comp_addr(&ep->x.comp, idx + i);
	xsk_ring_cons__release(&ep->x.comp, n);
	return n ? xdp_fill(ep, addrs, n) : 0;
}

static int xdp_kick_tx(struct endpoint *ep)
{
	/* copy mode transmits only from sendto(); zero-copy when asked */
	if (ep->o->xdp_native && !xsk_ring_prod__needs_wakeup(&ep->x.tx))
		return 0;
	ep->x.tx_kicks++;
	if (sendto(ep->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && !xsk_errno_transient(errno)) {
		pr_errno("sendto(xsk)");
		return -1;
	}
	return 0;
}

static int xdp_serve_batch(struct endpoint *ep, struct server_stats *st)
{
	uint32_t idx, tidx, i, queued = 0;
	uint64_t addr;
	uint8_t *pkt;
	int n;

	n = xdp_rx_peek(ep, &idx);
	if (n <= 0)
		return n;
	for (i = 0; i < (uint32_t)n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&ep->x.rx, idx + i);

		addr = xsk_umem__add_offset_to_addr(d->addr);
		pkt = xsk_umem__get_data(ep->x.area, addr);
		st->requests++;
		if (!frame_is_ours(pkt, d->len, ep->o->port) ||
		    xsk_ring_prod__reserve(&ep->x.tx, 1, &tidx) != 1) {
			st->dropped++;
			addr = xsk_umem__extract_addr(d->addr) & ~(uint64_t)(FRAME_SIZE - 1);
			if (xdp_fill(ep, &addr, 1))
				return -1;
			continue;
		}
		swap_frame(pkt);
		xsk_ring_prod__tx_desc(&ep->x.tx, tidx)->addr = d->addr;
		xsk_ring_prod__tx_desc(&ep->x.tx, tidx)->len = d->len;
		xsk_ring_prod__submit(&ep->x.tx, 1);
		queued++;
	}
	xsk_ring_cons__release(&ep->x.rx, n);
	st->replies += queued;
	if (queued && xdp_kick_tx(ep))
		return -1;
	return xdp_recycle_completions(ep);
}

static int udp_serve_one(struct endpoint *ep, struct server_stats *st)
{
	struct sockaddr_in from;
	char buf[2048];
	ssize_t n;

	n = udp_rx(ep, buf, sizeof(buf), &from);
	if (n <= 0)
		return (int)n;
	st->requests++;
	if (sendto(ep->fd, buf, n, 0, (struct sockaddr *)&from, sizeof(from)) != n) {
		if (errno != ENOBUFS && errno != EAGAIN) {
			pr_errno("sendto");
			return -1;
		}
		st->dropped++;
		return 0;
	}
	st->replies++;
	return 0;
}

static int server_run(const struct opts *o)
{
	struct server_stats st = { 0 };
	struct endpoint ep;
	uint64_t start, deadline;
	int ret = 0;

	ep_init(&ep, o);
	if (ep_open(&ep) || poller_start(&ep)) {
		fail_stop();
		goto out;
	}
	/* Harnesses wait for this line instead of sleeping. */
	printf("{\"role\":\"server\",\"ready\":true}\n");
	fflush(stdout);
	start = now_ns();
	deadline = o->duration > 0 ? start + (uint64_t)(o->duration * NSEC_PER_SEC) : UINT64_MAX;
	while (!stopping() && ret == 0) {
		ret = o->transport == TR_XDP ? xdp_serve_batch(&ep, &st) : udp_serve_one(&ep, &st);
		/* cheap enough at ~100 ns per iteration in the spinning modes */
		if (deadline != UINT64_MAX && now_ns() >= deadline)
			break;
	}
	if (ret < 0)
		fail_stop();
	poller_stop(&ep);
	printf("{\"role\":\"server\",\"transport\":\"%s\",\"poll\":\"%s\",\"requests\":%" PRIu64
	       ",\"replies\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"rx_polls\":%" PRIu64
	       ",\"rx_wakeups\":%" PRIu64 ",\"rx_empty\":%" PRIu64 ",\"poller_polls\":%" PRIu64
	       ",\"tx_kicks\":%" PRIu64 ",\"elapsed_s\":%.3f}\n",
	       transport_names[o->transport], poll_names[o->poll], st.requests, st.replies,
	       st.dropped, ep.rxc.polls, ep.rxc.wakeups, ep.rxc.empty, ep.poller_polls,
	       ep.x.tx_kicks, (double)(now_ns() - start) / NSEC_PER_SEC);
	fflush(stdout);
out:
	poller_stop(&ep);
	ep_close(&ep);
	return g_failed ? 1 : 0;
}

/* --------------------------------------------------------------- client */

enum { SEQ_FREE, SEQ_SENT, SEQ_DONE };

struct client {
	struct endpoint ep;
	const struct opts *o;
	uint64_t total;		/* requests on the schedule */
	uint64_t start_ns;	/* request 0 is due then */
	uint64_t measure_ns;	/* requests due from then on are measured */
	uint64_t burst;		/* --on-off: requests per burst */
	uint64_t give_up_ns;	/* the sender stops sending then */
	uint8_t *state;		/* SEQ_* per sequence number */
	uint8_t peer_mac[ETH_ALEN];
	int rx_stop;
	int sender_done;
	/* sender thread */
	uint64_t sent_all;	/* incl. warmup; read by main */
	uint64_t sent, warmup_sent, send_errors, first_send_ns, last_send_ns;
	uint64_t unsent;	/* measured requests given up on */
	struct hist lag;
	/* receiver thread */
	uint64_t replied_all;	/* unique, incl. warmup; read by main */
	uint64_t received, warmup_received, duplicates, unexpected, reordered;
	uint64_t max_seq, first_rx_ns, last_rx_ns, max_rtt;
	struct hist lat, deliver;
	uint64_t deliver_invalid;
};

/* Request SEQ is due at its place in the schedule: evenly spaced at
 * --rate, or with --on-off in bursts of c->burst requests, one burst
 * every on_ms + off_ms.
 */
static uint64_t due_time(const struct client *c, uint64_t seq)
{
	const struct opts *o = c->o;
	uint64_t cycle_ns;

	if (!o->on_ms)
		return c->start_ns + seq * NSEC_PER_SEC / o->rate;
	cycle_ns = (uint64_t)(o->on_ms + o->off_ms) * NSEC_PER_MSEC;
	return c->start_ns + seq / c->burst * cycle_ns + seq % c->burst * NSEC_PER_SEC / o->rate;
}

/* The requests due within warm-up + duration. */
static uint64_t planned_requests(const struct client *c)
{
	const struct opts *o = c->o;
	uint64_t span_ns, cycle_ns, tail;

	if (!o->on_ms)
		return (uint64_t)((o->warmup + o->duration) * (double)o->rate);
	span_ns = (uint64_t)((o->warmup + o->duration) * NSEC_PER_SEC + 0.5);
	cycle_ns = (uint64_t)(o->on_ms + o->off_ms) * NSEC_PER_MSEC;
	tail = span_ns % cycle_ns * o->rate / NSEC_PER_SEC;
	return span_ns / cycle_ns * c->burst + (tail < c->burst ? tail : c->burst);
}

static int xdp_send_request(struct client *c, const struct rr_payload *pl)
{
	struct endpoint *ep = &c->ep;
	struct xdp_ctx *x = &ep->x;
	uint32_t idx, n, i;
	uint64_t addr;
	size_t len;

	/* reclaim completed frames; if none are free, push the ring along */
	for (;;) {
		n = xsk_ring_cons__peek(&x->comp, RX_BATCH, &idx);
		for (i = 0; i < n; i++)
			x->tx_free[x->tx_nfree++] = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
		xsk_ring_cons__release(&x->comp, n);
		if (x->tx_nfree)
			break;
		if (xdp_kick_tx(ep) || stopping())
			return -1;
	}
	addr = x->tx_free[--x->tx_nfree];
	len = build_frame(ep, c->peer_mac, xsk_umem__get_data(x->area, addr), pl);
	if (xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		x->tx_free[x->tx_nfree++] = addr;	/* cannot happen: ring >= frames */
		errno = ENOBUFS;
		return 1;
	}
	xsk_ring_prod__tx_desc(&x->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&x->tx, idx)->len = len;
	xsk_ring_prod__submit(&x->tx, 1);
	return xdp_kick_tx(ep);
}

/* 0 sent, 1 transient failure (counted), -1 fatal. */
static int send_request(struct client *c, const struct rr_payload *pl)
{
	if (c->o->transport == TR_XDP)
		return xdp_send_request(c, pl);
	if (send(c->ep.fd, pl, sizeof(*pl), 0) == sizeof(*pl))
		return 0;
	if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED || errno == EINTR)
		return 1;
	pr_errno("send");
	return -1;
}

static void *sender_main(void *arg)
{
	struct client *c = arg;
	uint64_t spin = (uint64_t)c->o->send_spin_us * 1000, seq, due, now;
	struct rr_payload pl = { .magic = RR_MAGIC };
	int ret;

	for (seq = 0; seq < c->total && !stopping(); seq++) {
		due = due_time(c, seq);
		now = now_ns();
		if (now >= c->give_up_ns) {
			for (; seq < c->total; seq++)
				c->unsent += due_time(c, seq) >= c->measure_ns;
			break;
		}
		if (now + spin < due) {
			sleep_until(due - spin);
			if (stopping())
				break;
		}
		while ((now = now_ns()) < due)
			cpu_relax();
		pl.seq = seq;
		pl.send_ns = due;
		/* marked before sending: the reply may beat the store otherwise */
		__atomic_store_n(&c->state[seq], SEQ_SENT, __ATOMIC_RELEASE);
		ret = send_request(c, &pl);
		if (ret) {
			__atomic_store_n(&c->state[seq], SEQ_FREE, __ATOMIC_RELEASE);
			if (ret < 0) {
				fail_stop();
				break;
			}
			c->send_errors++;
			continue;
		}
		__atomic_store_n(&c->sent_all, c->sent_all + 1, __ATOMIC_RELEASE);
		if (due < c->measure_ns) {
			c->warmup_sent++;
			continue;
		}
		if (!c->sent++)
			c->first_send_ns = now;
		c->last_send_ns = now;
		hist_add(&c->lag, now - due);
	}
	__atomic_store_n(&c->sender_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* meta: XDP metadata stamp, 0 when absent or for UDP. */
static void handle_reply(struct client *c, const void *data, size_t len, uint64_t meta)
{
	uint64_t now = now_ns(), rtt;
	struct rr_payload copy, *pl = &copy;
	uint8_t prev;

	memcpy(pl, data, len < sizeof(*pl) ? len : sizeof(*pl));	/* unaligned */
	if (len < sizeof(*pl) || pl->magic != RR_MAGIC || pl->seq >= c->total) {
		c->unexpected++;
		return;
	}
	prev = __atomic_exchange_n(&c->state[pl->seq], SEQ_DONE, __ATOMIC_ACQ_REL);
	if (prev != SEQ_SENT) {
		if (prev == SEQ_DONE)
			c->duplicates++;
		else
			c->unexpected++;
		__atomic_store_n(&c->state[pl->seq], prev, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&c->replied_all, c->replied_all + 1, __ATOMIC_RELEASE);
	rtt = now - pl->send_ns;
	if (rtt > c->max_rtt)
		c->max_rtt = rtt;
	if (pl->send_ns < c->measure_ns) {
		c->warmup_received++;
	} else {
		if (!c->received++)
			c->first_rx_ns = now;
		c->last_rx_ns = now;
		if (c->received > 1 && pl->seq < c->max_seq)
			c->reordered++;
		else
			c->max_seq = pl->seq;
		hist_add(&c->lat, rtt);
		if (c->o->transport == TR_XDP) {
			/* zeroed before reuse, so 0 means "not delivered" */
			if (meta && meta <= now && now - meta < 10 * NSEC_PER_SEC)
				hist_add(&c->deliver, now - meta);
			else
				c->deliver_invalid++;
		}
	}
	if (c->o->delay_us)
		busy_wait_ns((uint64_t)c->o->delay_us * 1000);	/* app work */
}

static int xdp_client_rx(struct client *c)
{
	struct endpoint *ep = &c->ep;
	uint64_t addrs[RX_BATCH], meta;
	uint32_t idx, i;
	uint8_t *pkt;
	int n;

	n = xdp_rx_peek(ep, &idx);
	if (n <= 0)
		return n;
	for (i = 0; i < (uint32_t)n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&ep->x.rx, idx + i);

		pkt = xsk_umem__get_data(ep->x.area, xsk_umem__add_offset_to_addr(d->addr));
		memcpy(&meta, pkt - META_LEN, META_LEN);
		memset(pkt - META_LEN, 0, META_LEN);
		if (frame_is_ours(pkt, d->len, c->o->port))
			handle_reply(c, pkt + HDR_LEN, d->len - HDR_LEN, meta);
		else
			c->unexpected++;
		addrs[i] = xsk_umem__extract_addr(d->addr) & ~(uint64_t)(FRAME_SIZE - 1);
	}
	xsk_ring_cons__release(&ep->x.rx, n);
	return xdp_fill(ep, addrs, n);
}

static void *receiver_main(void *arg)
{
	struct client *c = arg;
	char buf[2048];
	ssize_t n;

	while (!__atomic_load_n(&c->rx_stop, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&g_failed, __ATOMIC_RELAXED)) {
		if (c->o->transport == TR_XDP) {
			n = xdp_client_rx(c);
		} else {
			n = udp_rx(&c->ep, buf, sizeof(buf), NULL);
			if (n > 0)
				handle_reply(c, buf, n, 0);
		}
		if (n < 0) {
			fail_stop();
			break;
		}
	}
	return NULL;
}

static const char *deliver_reason(const struct client *c, char *buf, size_t len)
{
	if (c->o->transport != TR_XDP)
		return "not applicable: udp transport";
	if (!c->deliver.count) {
		snprintf(buf, len, "no valid XDP metadata stamp in %llu frames (zero or out of range): metadata not delivered on this path",
			 (unsigned long long)c->deliver_invalid);
		return buf;
	}
	return NULL;
}

static double rate_of(uint64_t n, uint64_t first, uint64_t last)
{
	return n > 1 && last > first ? (double)(n - 1) * NSEC_PER_SEC / (double)(last - first) : 0;
}

/* Minimal JSON writer: every field after "role" comes with its comma. */
static void json_u64(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ",\"%s\":%" PRIu64, key, v);
}

static void json_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, v ? ",\"%s\":\"%s\"" : ",\"%s\":null", key, v);
}

static void json_hist(FILE *f, const char *key, const struct hist *h)
{
	if (!h->count) {
		json_str(f, key, NULL);
		return;
	}
	fprintf(f, ",\"%s\":{\"p5\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p95\":%" PRIu64
		",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64 ",\"max\":%" PRIu64
		",\"min\":%" PRIu64 ",\"mean\":%" PRIu64 "}", key,
		hist_percentile(h, 5), hist_percentile(h, 50), hist_percentile(h, 95),
		hist_percentile(h, 99), hist_percentile(h, 99.9), h->max, h->min, hist_mean(h));
}

static int client_write_json(const struct client *c, FILE *f, uint64_t grace)
{
	const struct opts *o = c->o;
	char buf[160];
	const char *reason = deliver_reason(c, buf, sizeof(buf));

	fprintf(f, "{\"role\":\"client\"");
	json_str(f, "transport", transport_names[o->transport]);
	json_str(f, "poll", poll_names[o->poll]);
	json_u64(f, "rate_pps", o->rate);
	json_u64(f, "delay_us", o->delay_us);
	json_u64(f, "on_ms", o->on_ms);
	json_u64(f, "off_ms", o->off_ms);
	fprintf(f, ",\"duration_s\":%g,\"warmup_s\":%g", o->duration, o->warmup);
	json_u64(f, "sent", c->sent);
	json_u64(f, "received", c->received);
	json_u64(f, "lost", c->sent - c->received);
	json_u64(f, "unsent", c->unsent);
	json_u64(f, "reordered", c->reordered);
	json_u64(f, "duplicates", c->duplicates);
	json_u64(f, "unexpected", c->unexpected);
	json_u64(f, "send_errors", c->send_errors);
	json_u64(f, "warmup_sent", c->warmup_sent);
	json_u64(f, "warmup_received", c->warmup_received);
	fprintf(f, ",\"send_rate_pps\":%.1f,\"recv_rate_pps\":%.1f",
		rate_of(c->sent, c->first_send_ns, c->last_send_ns),
		rate_of(c->received, c->first_rx_ns, c->last_rx_ns));
	json_hist(f, "latency_ns", &c->lat);
	fprintf(f, ",\"sched_lag_ns\":{\"p99\":%" PRIu64 ",\"max\":%" PRIu64 "}",
		hist_percentile(&c->lag, 99), c->lag.max);
	if (reason) {
		json_str(f, "deliver_p50_ns", NULL);
		json_str(f, "deliver_p99_ns", NULL);
	} else {
		json_u64(f, "deliver_p50_ns", hist_percentile(&c->deliver, 50));
		json_u64(f, "deliver_p99_ns", hist_percentile(&c->deliver, 99));
	}
	json_u64(f, "deliver_samples", c->deliver.count);
	json_u64(f, "deliver_invalid", c->deliver_invalid);
	json_str(f, "deliver_reason", reason);
	json_u64(f, "grace_ms", grace / NSEC_PER_MSEC);
	json_u64(f, "rx_polls", c->ep.rxc.polls);
	json_u64(f, "rx_wakeups", c->ep.rxc.wakeups);
	json_u64(f, "rx_empty", c->ep.rxc.empty);
	json_u64(f, "poller_polls", c->ep.poller_polls);
	if (c->ep.poller_ran_on >= 0)
		json_u64(f, "poller_cpu", c->ep.poller_ran_on);
	else
		json_str(f, "poller_cpu", NULL);
	fprintf(f, ",\"interrupted\":%s}\n", g_signalled ? "true" : "false");
	return ferror(f) ? -1 : 0;
}

static void client_print_summary(const struct client *c)
{
	const struct hist *h = &c->lat;
	char buf[160];
	const char *reason = deliver_reason(c, buf, sizeof(buf));

	printf("napi_rr %s/%s %" PRIu64 " pps delay %u us: sent %" PRIu64 " received %" PRIu64
	       " lost %" PRIu64 " reordered %" PRIu64 " dup %" PRIu64 " unexpected %" PRIu64
	       " send_err %" PRIu64 " unsent %" PRIu64 "\n",
	       transport_names[c->o->transport], poll_names[c->o->poll], c->o->rate,
	       c->o->delay_us, c->sent, c->received, c->sent - c->received, c->reordered,
	       c->duplicates, c->unexpected, c->send_errors, c->unsent);
	printf("  latency us: p5 %.1f p50 %.1f p95 %.1f p99 %.1f p99.9 %.1f max %.1f mean %.1f\n",
	       hist_percentile(h, 5) / 1e3, hist_percentile(h, 50) / 1e3,
	       hist_percentile(h, 95) / 1e3, hist_percentile(h, 99) / 1e3,
	       hist_percentile(h, 99.9) / 1e3, h->max / 1e3, hist_mean(h) / 1e3);
	printf("  send lag us: p99 %.1f max %.1f; rates: send %.0f pps, recv %.0f pps\n",
	       hist_percentile(&c->lag, 99) / 1e3, c->lag.max / 1e3,
	       rate_of(c->sent, c->first_send_ns, c->last_send_ns),
	       rate_of(c->received, c->first_rx_ns, c->last_rx_ns));
	if (reason)
		printf("  deliver: n/a (%s)\n", reason);
	else
		printf("  deliver (XDP->app) us: p50 %.1f p99 %.1f (%" PRIu64 " samples, %" PRIu64
		       " invalid)\n", hist_percentile(&c->deliver, 50) / 1e3,
		       hist_percentile(&c->deliver, 99) / 1e3, c->deliver.count,
		       c->deliver_invalid);
}

/* A line on stdout at each edge of the measured window (warm-up over,
 * last measured request sent): the harness snapshots its counters then,
 * so that set-up, warm-up and the grace period stay outside its counts.
 * The replies in between are what the SUT received in the window,
 * whatever their requests' round trip.
 */
static void client_window_edge(struct client *c, const char *edge)
{
	/* replies first: requests sent meanwhile only add to sent */
	uint64_t served = __atomic_load_n(&c->replied_all, __ATOMIC_ACQUIRE);
	uint64_t sent = __atomic_load_n(&c->sent_all, __ATOMIC_ACQUIRE);

	announce_window(stdout, edge, sent, served);
}

/* Wait for stragglers: 10 x the worst RTT seen, within [200 ms, 2 s]. */
static uint64_t client_grace(struct client *c)
{
	uint64_t grace = 10 * __atomic_load_n(&c->max_rtt, __ATOMIC_RELAXED), end;

	if (grace < 200 * NSEC_PER_MSEC)
		grace = 200 * NSEC_PER_MSEC;
	if (grace > 2 * NSEC_PER_SEC)
		grace = 2 * NSEC_PER_SEC;
	end = now_ns() + grace;
	while (!stopping() && now_ns() < end &&
	       __atomic_load_n(&c->replied_all, __ATOMIC_ACQUIRE) <
	       __atomic_load_n(&c->sent_all, __ATOMIC_ACQUIRE))
		usleep(1000);
	return grace;
}

static int client_report(struct client *c, uint64_t grace)
{
	FILE *f;
	int ret;

	client_print_summary(c);
	if (!c->o->json_path)
		return 0;
	f = fopen(c->o->json_path, "w");
	if (!f) {
		pr_err("open %s: %s", c->o->json_path, strerror(errno));
		return -1;
	}
	ret = client_write_json(c, f, grace);
	if (fclose(f) || ret) {
		pr_err("write %s: %s", c->o->json_path, strerror(errno));
		return -1;
	}
	return 0;
}

static int client_run(const struct opts *o)
{
	bool rx_started = false, tx_started = false;
	pthread_t rx_thread, tx_thread;
	uint64_t grace = 0;
	struct client *c;
	int rc = 1;

	c = calloc(1, sizeof(*c));
	if (!c) {
		pr_errno("calloc");
		return 1;
	}
	c->o = o;
	hist_init(&c->lat);
	hist_init(&c->deliver);
	hist_init(&c->lag);
	ep_init(&c->ep, o);
	c->burst = o->rate * o->on_ms / 1000 ? o->rate * o->on_ms / 1000 : 1;
	c->total = planned_requests(c);
	c->state = calloc(c->total ? c->total : 1, 1);
	if (!c->state) {
		pr_errno("calloc(seq state)");
		goto out;
	}
	memcpy(c->peer_mac, o->peer_mac, ETH_ALEN);
	if (o->transport == TR_XDP && !o->have_peer_mac && get_peer_mac(o, c->peer_mac))
		goto out;
	if (ep_open(&c->ep) || poller_start(&c->ep))
		goto out;
	prctl(PR_SET_TIMERSLACK, 1UL);	/* the sender sleeps to absolute times */
	c->start_ns = now_ns() + 10 * NSEC_PER_MSEC;
	c->measure_ns = c->start_ns + (uint64_t)(o->warmup * NSEC_PER_SEC);
	/* A sender that has fallen a whole run behind its schedule cannot
	 * offer the load: what it has left counts as lost instead of
	 * stretching the run without bound (a starved client took minutes).
	 */
	c->give_up_ns = c->start_ns + 2 * (uint64_t)((o->warmup + o->duration) * NSEC_PER_SEC) +
			NSEC_PER_SEC;
	if (start_thread(&rx_thread, receiver_main, c))
		goto stop;
	rx_started = true;
	if (start_thread(&tx_thread, sender_main, c))
		goto stop;
	tx_started = true;
	sleep_until(c->measure_ns);
	if (!stopping())
		client_window_edge(c, "start");
	while (!stopping() && !__atomic_load_n(&c->sender_done, __ATOMIC_ACQUIRE))
		usleep(5000);
	if (!stopping())
		client_window_edge(c, "end");
	grace = client_grace(c);
stop:
	__atomic_store_n(&c->rx_stop, 1, __ATOMIC_RELAXED);
	if (!tx_started)
		fail_stop();	/* makes a started receiver give up too */
	if (tx_started)
		pthread_join(tx_thread, NULL);
	if (rx_started)
		pthread_join(rx_thread, NULL);
	poller_stop(&c->ep);
	if (tx_started && !g_failed && !client_report(c, grace))
		rc = g_signalled ? 1 : 0;
out:
	poller_stop(&c->ep);
	ep_close(&c->ep);
	free(c->state);
	free(c);
	return rc;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	struct opts o = { 0 };

	parse_opts(argc, argv, &o);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) {
		pr_errno("sigaction");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return o.role == ROLE_SERVER ? server_run(&o) : client_run(&o);
}
