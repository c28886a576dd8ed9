/* loadgen - open-loop HTTP load generator (httperf-like), epoll, no FD_SETSIZE limit.
 *
 * Connections start at scheduled instants whatever the server does: deterministic
 * (httperf --rate) or Poisson inter-arrivals.  A one-shot absolute timerfd wakes the
 * loop at the next arrival; arrivals that are due are all launched (catch-up, at most 64
 * between two looks at the sockets), and the lag between schedule and launch is recorded
 * so one can see whether the generator kept up.  One still behind a second after the
 * schedule's end stops launching and counts the arrivals left as unlaunched (a --rate
 * past what one process launches), so the run's bound holds.  Each connection has a timeout like httperf's --timeout: from the first SYN
 * until the connection is established, then again from the request's issue to its
 * reply (--timeout-from connect, the default: httperf's core.c cancels its connect
 * watchdog at establishment and arms one for the request), or from the first SYN to
 * the full reply (--timeout-from first-syn: what the user waited); each later request
 * of a keep-alive session gets its own.  On expiry the socket is closed.
 *
 * Workloads: one-packet (one request per new HTTP/1.1 connection, the client closes
 * after the reply) and specweb (SPECweb99-like: 4 classes x 9 files, class mix
 * 35/50/14/1 %, Zipf within a class; 30 % of connections carry 1 request, 70 % a
 * uniform 5..15, mean 7.3, on one keep-alive connection).  Files are
 * /specweb/class<c>_<i> with size (i+1)*1024*10^c/10 bytes (realsys/docroot.py).  A server
 * that closes after a reply in the middle of a session (Connection: close, an HTTP/1.0 reply
 * without Connection: keep-alive, or a body it ends by closing) is taken at its word: the
 * session's remaining requests go on a new connection, when the next is due, as httperf's --wsesslog sessions do (session.c opens a connection for
 * the calls left); counted in reconnects, each timed as a first connection is.
 *
 * Slow clients, as the simulator's client.think_ms and client.request_delay_ms: --think-ms
 * holds each next request, and the close after the last reply, that long after a reply
 * arrives (the connection stays open and idle in the server's interest set meanwhile);
 * --request-delay-ms holds the first request that long after the connection is up.  No
 * deadline runs during a think (the next request's starts when it is sent); during a
 * request delay the first SYN's deadline keeps running with --timeout-from first-syn, and
 * with connect the request's deadline starts when it is sent, as the simulator times both.
 *
 * Output: JSON (see write_json) with counts and log-bucket histograms (4 per octave, us).
 * Counts are of connections launched in the measured window, except replies_recv_in_window:
 * every reply received in the window, whenever its connection was launched, and its 2xx
 * part replies_ok_recv_in_window (the reply rate).  Launches stop at the window's end and
 * the run stops for good a hard end later (a second and two timeouts; one with first-syn):
 * a keep-alive session still inside its request's timeout then is open_at_end, not a timeout.
 * SIGINT or SIGTERM stops the run early: the output is still written, with "interrupted":
 * true and window_s cut to where the stop came, and the exit status is 128 + the signal. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "opt.h"

/* Returns: CLOCK_MONOTONIC in ns. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- histogram: bucket 0 holds values under 1 us, bucket b >= 1 [2^((b-1)/4), 2^(b/4)) us */
#define NB 128
struct hist {
    uint64_t b[NB], n;
    double sum, max;
};

static void hist_add(struct hist *h, double us)
{
    int b = us < 1.0 ? 0 : (int)(4.0 * log2(us)) + 1;
    if (b >= NB)
        b = NB - 1;
    h->b[b]++;
    h->n++;
    h->sum += us;
    if (us > h->max)
        h->max = us;
}

/* Returns: the upper edge, in us, of the launch-lag histogram's bucket b (2^(b/4); 1 for b 0). */
static double bucket_hi(int b)
{
    return b == 0 ? 1.0 : pow(2.0, b / 4.0);
}

/* Returns: the q-quantile of h as its bucket's geometric middle, in us (0.5 in bucket 0), or NaN
 * when h is empty.  It may exceed h's max, which is exact (a bucket's middle is not). */
static double hist_q(const struct hist *h, double q)
{
    if (!h->n)
        return NAN;
    uint64_t want = (uint64_t)ceil(q * (double)h->n), acc = 0;
    for (int b = 0; b < NB; b++) {
        acc += h->b[b];
        if (acc >= want && h->b[b]) {
            double lo = b == 0 ? 0.0 : pow(2.0, (b - 1) / 4.0), hi = bucket_hi(b);
            return b == 0 ? 0.5 : sqrt(lo * hi); /* geometric middle of the bucket */
        }
    }
    return h->max;
}

/* JSON has no NaN: "not measured" is null. */
static const char *num(char *buf, size_t n, double v)
{
    if (isnan(v) || isinf(v))
        snprintf(buf, n, "null");
    else
        snprintf(buf, n, "%.6g", v);
    return buf;
}

static void hist_json(FILE *o, const char *name, const struct hist *h, double scale)
{
    char a[32], b[32], c[32];
    fprintf(o, " \"%s\": {\"count\": %llu, \"mean\": %s, \"p50\": %s, \"p99\": %s, \"max\": %.6g, "
               "\"unit\": \"%s\", \"buckets_us\": [",
            name, (unsigned long long)h->n, num(a, sizeof a, h->n ? h->sum / (double)h->n / scale : NAN),
            num(b, sizeof b, hist_q(h, 0.5) / scale), num(c, sizeof c, hist_q(h, 0.99) / scale), h->max / scale,
            scale == 1.0 ? "us" : "ms");
    int k = 0;
    for (int b = 0; b < NB; b++)
        if (h->b[b])
            fprintf(o, "%s[%d, %.3f, %llu]", k++ ? ", " : "", b, bucket_hi(b), (unsigned long long)h->b[b]);
    fprintf(o, "]}");
}

/* ---- random numbers: xorshift64* ------------------------------------------------- */
static uint64_t rng_state = 88172645463325252ull;   /* arrivals and sessions: drawn at launch only */
static uint64_t xs_next(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 2685821657736338717ull;
}
static uint64_t rng_next(void) { return xs_next(&rng_state); }
static double xs_unit(uint64_t *st) /* (0,1) */
{
    return ((double)(xs_next(st) >> 11) + 0.5) / 9007199254740992.0;
}
static double rng_unit(void) { return xs_unit(&rng_state); }

/* ---- configuration ------------------------------------------------------------------ */
static struct sockaddr_in server;
static struct in_addr binds[256];
static int nbinds, bind_rr;
static double rate = 100, duration = 1, timeout_s = 10;
static int timeout_from_syn = 0; /* 1: one deadline from the first SYN to the reply */
static int poisson, specweb, http10, max_conns = 60000;
static const char *uri = "/index.html", *out_path, *host_hdr = "server";
static double zipf_alpha = 1.0;
/* --uri: "GET " URI " HTTP/1.x\r\nHost: " (IPv4, <= 15) "\r\nConnection: keep-alive\r\n\r\n" fits req[] */
#define URI_MAX 180
#define URI_MAX_S "180"
#define URI_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"

static double class_cdf[4], file_cdf[9];

/* ---- connections -------------------------------------------------------------------- */
enum { C_CONNECTING = 1, C_SENDING, C_READING, C_WAITING };
/* what a waiting connection does when its wait is over */
enum { W_REQUEST = 1, W_FIRST_REQUEST, W_CLOSE, W_RECONNECT };

struct lconn {
    int fd, state, reqs_left;  /* fd -1: between a server's close and the session's next connection */
    int bind;                  /* index into binds of the local address, -1 none: kept for a reconnect */
    int hdr_done, status, server_closes, have_cl;
    uint64_t t_start, t_req, t_sent, deadline; /* first SYN; request began (timeout base); request fully written */
    size_t hlen, body_left;
    struct lconn *prev, *next; /* timeout list, ordered by deadline */
    int in_tmo;                /* on the timeout list */
    int wait;                  /* W_*: on a wait queue (think or request delay), 0 if not */
    uint64_t wake;
    struct lconn *wprev, *wnext;
    struct waitq *wq;
    struct lstats *st;
    uint64_t rng;              /* this session's file picks: seeded at launch, so in schedule order */
    char req[256];
    size_t req_len, req_off;
    char hbuf[4096];
};

static struct lconn *head, *tail;
static int nactive, epfd;

/* A wait queue holds connections for one fixed delay, so pushing at the tail keeps it in
 * wake order, as the timeout list is kept (one deadline length for all). */
struct waitq {
    struct lconn *head, *tail;
    uint64_t delay_ns;
};
static struct waitq thinkq, delayq;

struct lstats {
    uint64_t attempts, established, requests, replies, replies_ok, st2, st3, st4, st5;
    /* timeouts_connect: the handshake had not completed; timeouts_reply: established, and the
     * reply had not arrived, or (--timeout-from first-syn with --request-delay-ms) the request
     * had not yet been sent: the deadline runs from the first SYN through the client's delay */
    uint64_t timeouts, timeouts_connect, timeouts_reply, resets, refused, local_errors, other_errors;
    uint64_t conns_done, bytes, replies_in_window, attempts_in_window;
    /* new connections a session opened for its remaining requests after the server closed
     * the previous one after a reply (Connection: close, or a body ended by the close): not
     * launches, not in attempts */
    uint64_t reconnects;
    /* keep-alive sessions still running at the hard end, their current request inside its
     * own timeout: the generator gave up on them, the server did not fail them */
    uint64_t open_at_end;
    /* replies received in the window whenever their connection was launched (kept in S):
     * the reply rate the simulator and httperf report.  replies_in_window (launched in the
     * window too) is short by about rate x mean latency / window, so a slow policy looked
     * worse than it was; see docs/validation. */
    uint64_t replies_recv_in_window;
    /* the 2xx among them: the reply rate.  An error page is a reply too, but a server
     * answering 403 to everything is not serving (an unreadable document root looked like
     * full throughput) */
    uint64_t replies_ok_recv_in_window;
    uint64_t first_launch, last_launch;
    uint64_t mid_launches;      /* launches whose actual time is in the middle 80 % of the window */
    struct hist connect, resp, total, lag;
};
/* S: connections launched in the measured window; W: during --warmup (discarded). */
static struct lstats S, W;
static uint64_t t0, t_meas, t_end, t_mid0, t_mid1;
static double warmup;

static void list_del(struct lconn *c)
{
    if (!c->in_tmo) return;
    if (c->prev) c->prev->next = c->next; else head = c->next;
    if (c->next) c->next->prev = c->prev; else tail = c->prev;
    c->prev = c->next = NULL;
    c->in_tmo = 0;
}

static void list_push(struct lconn *c, uint64_t deadline)
{
    list_del(c);
    c->in_tmo = 1;
    c->deadline = deadline;
    c->prev = tail;
    c->next = NULL;
    if (tail) tail->next = c; else head = c;
    tail = c;
}

static void wait_del(struct lconn *c)
{
    struct waitq *q = c->wq;
    if (!q) return;
    if (c->wprev) c->wprev->wnext = c->wnext; else q->head = c->wnext;
    if (c->wnext) c->wnext->wprev = c->wprev; else q->tail = c->wprev;
    c->wprev = c->wnext = NULL;
    c->wq = NULL;
    c->wait = 0;
}

/* Hold c on q until now + q's delay, then do what.  The socket is watched for input only:
 * a server that closes it meanwhile is seen (on_waiting), and a writable socket must not
 * wake the loop for the whole wait. */
static int wait_push(struct waitq *q, struct lconn *c, int what, uint64_t now)
{
    c->wait = what;
    c->wake = now + q->delay_ns;
    c->wq = q;
    c->wprev = q->tail;
    c->wnext = NULL;
    if (q->tail) q->tail->wnext = c; else q->head = c;
    q->tail = c;
    int was = c->state;
    c->state = C_WAITING;
    if (was != C_READING && c->fd >= 0) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
            return -1;
    }
    return 0;
}

static void conn_end(struct lconn *c)
{
    list_del(c);
    wait_del(c);
    if (c->fd >= 0)
        close(c->fd);
    nactive--;
    free(c);
}

static void pick_request(struct lconn *c)
{
    const char *path = uri;
    char sp[64];
    if (specweb) {
        double u = xs_unit(&c->rng);
        int cl = 0;
        while (cl < 3 && u > class_cdf[cl]) cl++;
        u = xs_unit(&c->rng);
        int f = 0;
        while (f < 8 && u > file_cdf[f]) f++;
        snprintf(sp, sizeof sp, "/specweb/class%d_%d", cl, f);
        path = sp;
    }
    c->req_len = (size_t)snprintf(c->req, sizeof c->req, "GET %s HTTP/1.%d\r\nHost: %s\r\n%s\r\n", path,
                                  http10 ? 0 : 1, host_hdr,
                                  (http10 && c->reqs_left > 1) ? "Connection: keep-alive\r\n" : "");
    c->req_off = 0;
    c->hlen = 0;
    c->hdr_done = 0;
    c->status = 0;
    c->have_cl = 0;
    c->body_left = 0;
    c->server_closes = http10 && c->reqs_left <= 1;
}

/* A non-blocking socket, bound to binds[bind_ix] (bind_ix >= 0), its connect to the server begun.
 * Returns: the socket; -1 with the failure counted in st (refused, or the generator's own). */
static int connect_begin(struct lstats *st, int bind_ix)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        st->local_errors++;
        return -1;
    }
    if (bind_ix >= 0) {
        int one = 1;
        /* Defer the port choice to connect(): the 4-tuple, not the address alone, must be unique. */
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr = binds[bind_ix] };
        if (bind(fd, (struct sockaddr *)&b, sizeof b) < 0) {
            close(fd);
            st->local_errors++;
            return -1;
        }
    }
    int r = connect(fd, (struct sockaddr *)&server, sizeof server);
    if (r < 0 && errno != EINPROGRESS) {
        if (errno == ECONNREFUSED) st->refused++; else st->local_errors++;
        close(fd);
        return -1;
    }
    return fd;
}

static void launch(uint64_t sched)
{
    uint64_t now = now_ns();
    struct lstats *st = sched >= t_meas ? &S : &W;
    st->attempts++;
    if (!st->first_launch) st->first_launch = now;
    st->last_launch = now;
    if (now >= t_mid0 && now < t_mid1)
        st->mid_launches++;
    hist_add(&st->lag, (double)(now - sched) / 1e3);
    if (nactive >= max_conns) {
        st->local_errors++;
        return;
    }
    int bi = nbinds ? bind_rr++ % nbinds : -1;
    int fd = connect_begin(st, bi);
    if (fd < 0)
        return;
    struct lconn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        st->local_errors++;
        return;
    }
    c->fd = fd;
    c->bind = bi;
    c->st = st;
    c->state = C_CONNECTING;
    c->t_start = now;
    c->t_req = now;
    c->reqs_left = 1;
    if (specweb && rng_unit() >= 0.3)
        c->reqs_left = 5 + (int)(rng_next() % 11);
    if (specweb)
        c->rng = rng_next() | 1; /* one-packet draws nothing more: its sequences are unchanged */
    nactive++;
    list_push(c, now + (uint64_t)(timeout_s * 1e9));
    struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        /* ENOMEM / ENOSPC (fs.epoll.max_user_watches): never watched, it would have been
         * counted a timeout of the server's; it is the generator's own failure */
        st->local_errors++;
        conn_end(c);
    }
}

static void fail(struct lconn *c, int err)
{
    if (err == ECONNREFUSED) c->st->refused++;
    else if (err == ECONNRESET || err == EPIPE) c->st->resets++;
    else c->st->other_errors++;
    conn_end(c);
}

static void send_request(struct lconn *c)
{
    ssize_t w = write(c->fd, c->req + c->req_off, c->req_len - c->req_off);
    if (w < 0) {
        if (errno != EAGAIN) {
            fail(c, errno);
            return;
        }
        /* No room: as a partial write of nothing, wait for EPOLLOUT.  It returned leaving the
         * state as it was: a connection already READING (a request after a delay) waited for a
         * reply to a request never sent (a timeout of the server's), and one CONNECTING was
         * counted established again at its next EPOLLOUT.  A request of a few hundred bytes on
         * an idle socket hardly meets it. */
        w = 0;
    }
    c->req_off += (size_t)w;
    if (c->req_off < c->req_len) {
        c->state = C_SENDING;
        struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
        if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
            fail(c, errno);
        return;
    }
    c->st->requests++;
    c->t_sent = now_ns();
    if (c->state != C_READING) {
        c->state = C_READING;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
            fail(c, errno);
            return;
        }
    }
}

/* The session's next connection, from the same local address, for its remaining requests:
 * timed as a first one is (a deadline from its SYN, connect_ms, established; with
 * --request-delay-ms its first request waits that long, as on any new connection).  A
 * connect that fails at once is counted as a launch's would be and ends the session. */
static void reopen(struct lconn *c, uint64_t now)
{
    c->fd = connect_begin(c->st, c->bind);
    if (c->fd < 0) {
        conn_end(c);
        return;
    }
    c->st->reconnects++;
    c->state = C_CONNECTING;
    c->t_start = now;
    c->t_req = now;
    list_push(c, now + (uint64_t)(timeout_s * 1e9));
    struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        c->st->local_errors++;
        conn_end(c);
    }
}

static void reply_done(struct lconn *c)
{
    uint64_t now = now_ns();
    c->st->replies++;
    if (now <= t_end && now >= t_meas) {
        S.replies_recv_in_window++;
        if (c->status >= 200 && c->status < 300) S.replies_ok_recv_in_window++;
        if (c->st == &S) S.replies_in_window++;
    }
    if (c->status >= 200 && c->status < 300) { c->st->replies_ok++; c->st->st2++; }
    else if (c->status < 400) c->st->st3++;
    else if (c->status < 500) c->st->st4++;
    else c->st->st5++;
    /* resp: request sent -> reply complete (httperf's and the simulator's response time);
     * total: first SYN (or the previous reply) -> reply complete, what the user waited */
    hist_add(&c->st->resp, (double)(now - c->t_sent) / 1e3);
    hist_add(&c->st->total, (double)(now - c->t_req) / 1e3);
    if (--c->reqs_left <= 0 || c->status >= 400) {
        c->st->conns_done++;
        /* the client closes a think time later (an error reply closes at once: the
         * session is over, not paused) */
        if (thinkq.delay_ns && c->status < 400 && !c->server_closes) {
            list_del(c);
            if (wait_push(&thinkq, c, W_CLOSE, now) < 0)
                conn_end(c);
            return;
        }
        conn_end(c);
        return;
    }
    if (c->server_closes) {
        /* The server closes after this reply (Connection: close): the next request went on
         * this connection, to be met by its FIN or a reset (counted against the server) or,
         * after a think, the FIN cut the session as a reset.  Closed here; the rest of the
         * session goes on a new connection when its next request is due. */
        list_del(c);
        close(c->fd);
        c->fd = -1;
        if (thinkq.delay_ns) {
            if (wait_push(&thinkq, c, W_RECONNECT, now) < 0)
                conn_end(c);
            return;
        }
        reopen(c, now);
        return;
    }
    if (thinkq.delay_ns) {
        list_del(c);   /* no deadline while thinking: the next request's starts when it is sent */
        if (wait_push(&thinkq, c, W_REQUEST, now) < 0)
            fail(c, errno);
        return;
    }
    c->t_req = now;
    list_push(c, now + (uint64_t)(timeout_s * 1e9));
    pick_request(c);
    send_request(c);
}

/* The waits that are due at now: send the held request, or close. */
static void wait_run(struct waitq *q, uint64_t now)
{
    while (q->head && q->head->wake <= now) {
        struct lconn *c = q->head;
        int what = c->wait;
        wait_del(c);
        if (what == W_CLOSE) {
            conn_end(c);
            continue;
        }
        if (what == W_RECONNECT) {
            reopen(c, now);
            continue;
        }
        if (what == W_REQUEST || !timeout_from_syn) {
            /* httperf arms the request's timer when it issues the request */
            c->t_req = now;
            list_push(c, now + (uint64_t)(timeout_s * 1e9));
        }
        c->state = C_READING;   /* watched for input already (wait_push) */
        pick_request(c);
        send_request(c);
    }
}

/* Input on a connection that is waiting: the server closed it (EOF or reset) or, out of
 * turn, sent bytes nobody asked for.  After the last reply that is the end it was waiting
 * for; before a request it cut the session short. */
static void on_waiting(struct lconn *c)
{
    char b[512];
    ssize_t n = read(c->fd, b, sizeof b);
    if (n < 0 && errno == EAGAIN) return;
    if (c->wait == W_CLOSE) {
        conn_end(c);
        return;
    }
    fail(c, n < 0 ? errno : n == 0 ? ECONNRESET : EPROTO);
}

/* Case-insensitive search of lit in p[0..n) (p is not NUL-terminated). */
static int ci_contains(const char *p, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    for (size_t i = 0; i + m <= n; i++)
        if (strncasecmp(p + i, lit, m) == 0)
            return 1;
    return 0;
}

/* Parse the reply head in c->hbuf once complete; returns header length or 0 if incomplete. */
static size_t parse_head(struct lconn *c)
{
    char *e = memmem(c->hbuf, c->hlen, "\r\n\r\n", 4);
    if (!e) return 0;
    size_t hl = (size_t)(e - c->hbuf) + 4;
    /* "HTTP/1.x " and three digits, 100-599; anything else is 0, which the caller fails as
     * a protocol error: atoi read "XTTP/1.1 200", "HTTP/1.1 abc" and "HTTP/2 500" as 0, and
     * reply_done counted each a 3xx success */
    c->status = 0;
    if (hl >= 13 && memcmp(c->hbuf, "HTTP/1.", 7) == 0 && c->hbuf[7] >= '0' && c->hbuf[7] <= '9' &&
        c->hbuf[8] == ' ' && isdigit((unsigned char)c->hbuf[9]) && isdigit((unsigned char)c->hbuf[10]) &&
        isdigit((unsigned char)c->hbuf[11]) && (c->hbuf[12] == ' ' || c->hbuf[12] == '\r')) {
        int s = (c->hbuf[9] - '0') * 100 + (c->hbuf[10] - '0') * 10 + (c->hbuf[11] - '0');
        if (s >= 100 && s <= 599)
            c->status = s;
    }
    /* An HTTP/1.0 reply keeps the connection only with "Connection: keep-alive" (RFC 9112
     * sec. 9.3): without it the server closes after the reply, as after Connection: close.
     * The next request had gone on it and met the close (a reset). */
    int http10_reply = c->hlen >= 8 && memcmp(c->hbuf, "HTTP/1.0", 8) == 0, keepalive = 0;
    for (char *p = c->hbuf; p < c->hbuf + hl; ) {
        char *nl = memchr(p, '\n', (size_t)(c->hbuf + hl - p));
        if (!nl) break;
        if ((size_t)(nl - p) > 15 && strncasecmp(p, "content-length:", 15) == 0) {
            c->body_left = strtoull(p + 15, NULL, 10);
            c->have_cl = 1;
        } else if ((size_t)(nl - p) > 11 && strncasecmp(p, "connection:", 11) == 0) {
            if (ci_contains(p + 11, (size_t)(nl - p) - 11, "close"))
                c->server_closes = 1;
            else if (ci_contains(p + 11, (size_t)(nl - p) - 11, "keep-alive"))
                keepalive = 1;
        }
        p = nl + 1;
    }
    if (http10_reply && !keepalive)
        c->server_closes = 1;
    return hl;
}

static void on_readable(struct lconn *c)
{
    static char scratch[65536];
    for (;;) {
        char *dst;
        size_t room;
        if (!c->hdr_done) {
            dst = c->hbuf + c->hlen;
            room = sizeof c->hbuf - c->hlen;
        } else {
            dst = scratch;
            room = sizeof scratch;
        }
        ssize_t n = read(c->fd, dst, room);
        if (n < 0) {
            if (errno == EAGAIN) return;
            fail(c, errno);
            return;
        }
        if (n == 0) {
            if (c->hdr_done && !c->have_cl) { /* body delimited by close: the server closed */
                c->server_closes = 1;
                reply_done(c);
            } else {
                fail(c, ECONNRESET); /* closed before a complete reply */
            }
            return;
        }
        c->st->bytes += (uint64_t)n;
        if (!c->hdr_done) {
            c->hlen += (size_t)n;
            size_t hl = parse_head(c);
            if (!hl) {
                if (c->hlen == sizeof c->hbuf) { fail(c, EPROTO); return; }
                continue;
            }
            if (!c->status) { fail(c, EPROTO); return; }   /* not an HTTP/1.x status line */
            c->hdr_done = 1;
            size_t extra = c->hlen - hl;
            if (c->have_cl) {
                if (extra >= c->body_left) {
                    /* no pipelining: anything beyond the body is a protocol error we ignore */
                    c->body_left = 0;
                    reply_done(c);
                    return;
                }
                c->body_left -= extra;
            }
        } else if (c->have_cl) {
            if ((size_t)n >= c->body_left) {
                c->body_left = 0;
                reply_done(c);
                return;
            }
            c->body_left -= (size_t)n;
        }
    }
}

static void on_event(struct lconn *c, uint32_t evm)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            fail(c, err);
            return;
        }
        c->st->established++;
        uint64_t now = now_ns();
        hist_add(&c->st->connect, (double)(now - c->t_start) / 1e3);
        if (delayq.delay_ns) {
            /* with connect, no deadline until the request is sent (wait_run arms it) */
            if (!timeout_from_syn) list_del(c);
            if (wait_push(&delayq, c, W_FIRST_REQUEST, now) < 0)
                fail(c, errno);
            return;
        }
        if (!timeout_from_syn) { /* httperf: a new timer for the request and its reply */
            c->t_req = now;
            list_push(c, now + (uint64_t)(timeout_s * 1e9));
        }
        pick_request(c);
        send_request(c);
        return;
    }
    if (c->state == C_WAITING) {
        on_waiting(c);
        return;
    }
    if (c->state == C_SENDING) {
        send_request(c);
        return;
    }
    if (evm & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(c);
}

static void expire(uint64_t now)
{
    while (head && head->deadline <= now) {
        struct lconn *c = head;
        c->st->timeouts++;
        if (c->state == C_CONNECTING) c->st->timeouts_connect++; else c->st->timeouts_reply++;
        conn_end(c);
    }
}

/* Launches between two looks at the sockets when the schedule is overdue. */
#define LAUNCH_BURST 64
/* How far past the schedule's end a generator still launches what was due before it. */
#define GIVE_UP_NS 1000000000ull
static uint64_t unlaunched;              /* arrivals due that were never launched (GIVE_UP_NS) */

/* Returns how many arrivals the schedule still holds from t_next (due, not launched) to
 * t_end, stepping it as the launch loop does. */
static uint64_t count_unlaunched(uint64_t t_next, double gap_ns)
{
    uint64_t n = 0;
    for (;;) {
        n++;
        double g = poisson ? -log(rng_unit()) * gap_ns : gap_ns;
        if ((double)t_next + g >= (double)t_end)
            return n;
        t_next += (uint64_t)(g < 1 ? 1 : g);
        if (t_next >= t_end)
            return n;
    }
}

static volatile sig_atomic_t stop_now;   /* the signal that stopped the run, or 0 */
static void on_sig(int s) { stop_now = s; }
/* stop_now read once, after the run loop, with the signals blocked from then on: a signal
 * during the wrap-up must not make half the open connections timeouts and half cut short,
 * nor mark a run that had finished as interrupted */
static int stopped_by;
static uint64_t open_at_stop;            /* connections still open when a signal stopped the run */

/* The four histograms of one set of connections, comma-separated, no trailing comma. */
static void stats_hists_json(FILE *o, const struct lstats *st)
{
    hist_json(o, "connect_ms", &st->connect, 1000.0);
    fprintf(o, ",\n");
    hist_json(o, "resp_ms", &st->resp, 1000.0);
    fprintf(o, ",\n");
    hist_json(o, "total_ms", &st->total, 1000.0);
    fprintf(o, ",\n");
    hist_json(o, "launch_lag_us", &st->lag, 1.0);
}

static void write_json(FILE *o, double window)
{
    /* an interrupted run's counts cover only window_s of the requested duration_s, and the
     * connections open at the stop are neither replies nor timeouts: a reader must not
     * take it for a finished run (the exit status says so too) */
    double achieved = S.last_launch > S.first_launch && S.attempts > 1
                          ? (double)(S.attempts - 1) / ((double)(S.last_launch - S.first_launch) / 1e9) : NAN;
    fprintf(o, "{\"target_rate\": %.3f, \"duration_s\": %.3f, \"warmup_s\": %.3f, \"window_s\": %.6f, \"arrivals\": \"%s\", "
               "\"workload\": \"%s\", \"timeout_s\": %.3f, \"timeout_from\": \"%s\", \"think_ms\": %.3f, "
               "\"request_delay_ms\": %.3f,\n",
            rate, duration, warmup, window, poisson ? "poisson" : "deterministic", specweb ? "specweb" : "one-packet",
            timeout_s, timeout_from_syn ? "first-syn" : "connect", (double)thinkq.delay_ns / 1e6,
            (double)delayq.delay_ns / 1e6);
    fprintf(o, " \"interrupted\": %s, \"open_at_stop\": %llu, \"open_at_end\": %llu,\n", stopped_by ? "true" : "false",
            (unsigned long long)open_at_stop, (unsigned long long)S.open_at_end);
    char ab[32], mb[32];
    double mid = t_mid1 > t_mid0 ? (double)S.mid_launches / ((double)(t_mid1 - t_mid0) / 1e9) : NAN;
    fprintf(o, " \"achieved_rate_mid\": %s,\n", num(mb, sizeof mb, mid));
    fprintf(o, " \"attempts\": %llu, \"achieved_rate\": %s, \"established\": %llu, \"requests\": %llu, "
               "\"replies\": %llu, \"replies_ok\": %llu, \"replies_in_window\": %llu,\n",
            (unsigned long long)S.attempts, num(ab, sizeof ab, achieved), (unsigned long long)S.established,
            (unsigned long long)S.requests, (unsigned long long)S.replies, (unsigned long long)S.replies_ok,
            (unsigned long long)S.replies_in_window);
    fprintf(o, " \"replies_recv_in_window\": %llu, \"replies_ok_recv_in_window\": %llu,\n",
            (unsigned long long)S.replies_recv_in_window, (unsigned long long)S.replies_ok_recv_in_window);
    fprintf(o, " \"status\": {\"2xx\": %llu, \"3xx\": %llu, \"4xx\": %llu, \"5xx\": %llu},\n",
            (unsigned long long)S.st2, (unsigned long long)S.st3, (unsigned long long)S.st4,
            (unsigned long long)S.st5);
    fprintf(o, " \"timeouts\": %llu, \"timeouts_connect\": %llu, \"timeouts_reply\": %llu, \"resets\": %llu, "
               "\"refused\": %llu, \"local_errors\": %llu, \"unlaunched\": %llu, \"other_errors\": %llu, \"conns_done\": %llu, "
               "\"bytes\": %llu, \"reconnects\": %llu,\n",
            (unsigned long long)S.timeouts, (unsigned long long)S.timeouts_connect,
            (unsigned long long)S.timeouts_reply, (unsigned long long)S.resets, (unsigned long long)S.refused,
            (unsigned long long)S.local_errors, (unsigned long long)unlaunched, (unsigned long long)S.other_errors,
            (unsigned long long)S.conns_done, (unsigned long long)S.bytes, (unsigned long long)S.reconnects);
    stats_hists_json(o, &S);
    /* The warmup's connections are discarded from every count but one: a reply to one of
     * them that arrives in the window is in replies_recv_in_window.  A stall in the warmup
     * (the generator or the server descheduled) moves such replies into the window, and
     * only these histograms show it; S's, of the window's connections, stay clean. */
    fprintf(o, ",\n \"warmup\": {\"attempts\": %llu, \"replies\": %llu, \"timeouts\": %llu, \"resets\": %llu,\n",
            (unsigned long long)W.attempts, (unsigned long long)W.replies, (unsigned long long)W.timeouts,
            (unsigned long long)W.resets);
    stats_hists_json(o, &W);
    fprintf(o, "}}\n");
}

/* Prints the usage and exits: to stdout with status 0 when asked for (--help, -h), to
 * stderr with status 2 after a bad command line, so a caller can tell the two apart. */
static void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: loadgen --server IP [--port P] [--bind IP[,IP...]] --rate CONN_PER_S --duration S\n"
            "               [--timeout S] [--timeout-from connect|first-syn]\n"
            "               [--arrivals deterministic|poisson] [--seed N]\n"
            "               [--workload one-packet|specweb] [--uri PATH] [--http10] [--zipf A]\n"
            "               [--think-ms MS] [--request-delay-ms MS]\n"
            "               [--max-conns N] [--warmup S] [--out FILE] [--help]\n");
    exit(status);
}

int main(int argc, char **argv)
{
    int port = 80;
    uint64_t seed = 1;
    const char *srv = NULL;
    static const struct option lo[] = {
        {"server", 1, 0, 'S'}, {"port", 1, 0, 'p'}, {"bind", 1, 0, 'b'}, {"rate", 1, 0, 'r'},
        {"duration", 1, 0, 'd'}, {"timeout", 1, 0, 't'}, {"arrivals", 1, 0, 'a'}, {"seed", 1, 0, 's'},
        {"workload", 1, 0, 'w'}, {"uri", 1, 0, 'u'}, {"http10", 0, 0, 'H'}, {"max-conns", 1, 0, 'm'},
        {"out", 1, 0, 'o'}, {"zipf", 1, 0, 'z'}, {"warmup", 1, 0, 'W'}, {"timeout-from", 1, 0, 'T'},
        {"think-ms", 1, 0, 'k'}, {"request-delay-ms", 1, 0, 'D'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    static const char *const timeout_froms[] = {"connect", "first-syn", NULL};
    static const char *const arrivals[] = {"deterministic", "poisson", NULL};
    static const char *const workloads[] = {"one-packet", "specweb", "specweb99", NULL};
    int o;
    while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (o) {
        case 'S': srv = opt_ipv4("loadgen", "server", optarg, &server.sin_addr); break;
        case 'p': port = (int)opt_long("loadgen", "port", optarg, 1, 65535); break;
        case 'b': {
            /* strtok_r skips empty fields, so "" and "a,,b" used to pass (an empty list
             * bound nothing, silently); past 256 addresses the rest were dropped */
            nbinds = 0;
            for (const char *t = optarg;; t++) {
                const char *e = strchrnul(t, ',');
                char a[INET_ADDRSTRLEN];
                if (nbinds == (int)(sizeof binds / sizeof binds[0]))
                    opt_refuse("loadgen", "bind", "expected at most 256 addresses", optarg);
                if (e == t || e - t >= (long)sizeof a)
                    opt_refuse("loadgen", "bind", "expected IPv4 addresses separated by commas", optarg);
                memcpy(a, t, (size_t)(e - t));
                a[e - t] = '\0';
                if (inet_pton(AF_INET, a, &binds[nbinds++]) != 1)
                    opt_refuse("loadgen", "bind", "expected IPv4 addresses separated by commas", optarg);
                if (!*e) break;
                t = e;
            }
            break;
        }
        /* Bounded by construction: a run's length and timeout are capped. */
        case 'r': rate = opt_double("loadgen", "rate", optarg, 0, 1e6, 1); break;
        case 'd': duration = opt_double("loadgen", "duration", optarg, 0, 3600, 1); break;
        case 't': timeout_s = opt_double("loadgen", "timeout", optarg, 0, 600, 1); break;
        case 'T': timeout_from_syn = opt_choice("loadgen", "timeout-from", optarg, timeout_froms); break;
        case 'a': poisson = opt_choice("loadgen", "arrivals", optarg, arrivals) == 1; break;
        case 's': seed = (uint64_t)opt_long("loadgen", "seed", optarg, 0, LONG_MAX); break;
        case 'w': specweb = opt_choice("loadgen", "workload", optarg, workloads) >= 1; break;
        case 'u':
            /* the request is built in lconn.req[256]: a longer target used to be sent cut off
             * and followed by whatever lay beyond the buffer */
            uri = optarg;
            if (uri[0] != '/' || strlen(uri) > URI_MAX || strspn(uri, URI_CHARS) != strlen(uri))
                opt_refuse("loadgen", "uri", "expected a path from '/' of at most " URI_MAX_S
                           " printable characters without spaces", optarg);
            break;
        case 'H': http10 = 1; break;
        case 'm': max_conns = (int)opt_long("loadgen", "max-conns", optarg, 1, 1L << 22); break;
        case 'o': out_path = opt_outpath("loadgen", "out", optarg); break;
        case 'z': zipf_alpha = opt_double("loadgen", "zipf", optarg, 0, 100, 0); break;
        case 'W': warmup = opt_double("loadgen", "warmup", optarg, 0, 600, 0); break;
        case 'k': thinkq.delay_ns = (uint64_t)(opt_double("loadgen", "think-ms", optarg, 0, 600000, 0) * 1e6); break;
        case 'D': delayq.delay_ns = (uint64_t)(opt_double("loadgen", "request-delay-ms", optarg, 0, 600000, 0) * 1e6);
            break;
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (optind < argc)
        opt_stray("loadgen", argv[optind]);
    if (!srv) {
        fprintf(stderr, "loadgen: --server is required\n");
        usage(2);
    }
    /* each of these ran the whole duration with every launch a local_error, exit 0 and not a
     * word (0.0.0.0 quietly meant this host) */
    uint32_t sa = ntohl(server.sin_addr.s_addr);
    if (sa == 0 || sa == 0xffffffffu || (sa >> 28) == 0xe)
        opt_refuse("loadgen", "server", "expected a unicast address a server listens on (not 0.0.0.0, "
                   "broadcast or multicast)", srv);
    for (int i = 0; i < nbinds; i++) {
        struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr = binds[i] };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&b, sizeof b) < 0) {
            char a[INET_ADDRSTRLEN], why[160];
            inet_ntop(AF_INET, &binds[i], a, sizeof a);
            snprintf(why, sizeof why, "cannot bind %s (%s): expected addresses of this host", a, strerror(errno));
            opt_refuse("loadgen", "bind", why, a);
        }
        if (fd >= 0) close(fd);
    }
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)port);
    host_hdr = srv;
    rng_state ^= seed * 0x9E3779B97F4A7C15ull;
    if (!rng_state) rng_state = 1;
    for (int i = 0; i < 10; i++) rng_next();
    static const double cls[4] = {0.35, 0.50, 0.14, 0.01};
    double acc = 0;
    for (int i = 0; i < 4; i++) class_cdf[i] = (acc += cls[i]);
    double zs = 0;
    for (int i = 0; i < 9; i++) zs += 1.0 / pow(i + 1, zipf_alpha);
    acc = 0;
    for (int i = 0; i < 9; i++) file_cdf[i] = (acc += 1.0 / pow(i + 1, zipf_alpha) / zs);

    struct rlimit rl = { (rlim_t)max_conns + 64, (rlim_t)max_conns + 64 };
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max; /* no CAP_SYS_RESOURCE: all of the hard limit, at least */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max_conns + 64)
        /* not fatal (few runs hold that many open), but past it socket() fails, counted in
         * local_errors, which the runner turns into a failed point */
        fprintf(stderr, "loadgen: open files capped at %llu (wanted %d): above about %llu connections "
                        "open at once, launches fail as local_errors\n",
                (unsigned long long)rl.rlim_cur, max_conns + 64, (unsigned long long)rl.rlim_cur - 64);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event tev = { .events = EPOLLIN, .data.ptr = NULL };
    if (epfd < 0 || tfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev) < 0) {
        perror("loadgen: epoll/timerfd");
        return 1;
    }

    t0 = now_ns() + 1000000; /* first arrival 1 ms from now */
    t_meas = t0 + (uint64_t)(warmup * 1e9);
    t_end = t_meas + (uint64_t)(duration * 1e9);
    t_mid0 = t_meas + (t_end - t_meas) / 10;
    t_mid1 = t_end - (t_end - t_meas) / 10;
    /* a connection launched last may take a timeout to connect and, from connect, another */
    uint64_t hard_end = t_end + (uint64_t)(((timeout_from_syn ? 1 : 2) * timeout_s + 1.0) * 1e9) +
                        (timeout_from_syn ? 0 : delayq.delay_ns); /* with connect no deadline runs in the delay */
    uint64_t t_next = t0;
    double gap_ns = 1e9 / rate;
    int launching = 1;
    struct epoll_event evs[1024];
    while (!stop_now) {
        uint64_t now = now_ns();
        if (launching && now >= t_end + GIVE_UP_NS) {
            /* a --rate past what one process launches: catching up ran a 1 s run 14 s, and
             * its connections' replies waited behind the launches, counted as timeouts */
            unlaunched = count_unlaunched(t_next, gap_ns);
            launching = 0;
            fprintf(stderr, "loadgen: %llu connections due by the schedule's end were never launched: the "
                            "generator fell %.1f s behind it (--rate %g is more than this process launches)\n",
                    (unsigned long long)unlaunched, GIVE_UP_NS / 1e9, rate);
        }
        /* a burst at most, then the sockets: a generator behind its schedule read no reply
         * while it launched the whole backlog at once */
        for (int burst = 0; launching && t_next <= now && burst < LAUNCH_BURST; burst++) {
            launch(t_next);
            double g = poisson ? -log(rng_unit()) * gap_ns : gap_ns;
            /* compared in double first: at a tiny --rate the gap overflows uint64_t, and the
             * cast (undefined) once gave 0, so the loop launched forever and never saw SIGTERM */
            if ((double)t_next + g >= (double)t_end) {
                launching = 0;
                break;
            }
            t_next += (uint64_t)(g < 1 ? 1 : g);
            if (t_next >= t_end) launching = 0;
        }
        now = now_ns();
        expire(now);
        wait_run(&delayq, now);
        wait_run(&thinkq, now);
        if (!launching && (nactive == 0 || now >= hard_end)) break;
        uint64_t wake = hard_end;
        if (launching && t_next < wake) wake = t_next;
        if (head && head->deadline < wake) wake = head->deadline;
        if (delayq.head && delayq.head->wake < wake) wake = delayq.head->wake;
        if (thinkq.head && thinkq.head->wake < wake) wake = thinkq.head->wake;
        struct itimerspec its = {{0, 0}, {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)}};
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
        int n = epoll_wait(epfd, evs, 1024, 1000);
        for (int i = 0; i < n; i++) {
            if (!evs[i].data.ptr) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) < 0) { /* spurious: nothing to do */ }
                continue;
            }
            on_event(evs[i].data.ptr, evs[i].events);
        }
    }
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    sigprocmask(SIG_BLOCK, &ss, NULL);
    stopped_by = stop_now;
    uint64_t t_stop = now_ns();
    if (stopped_by && t_stop < t_mid1)
        t_mid1 = t_stop > t_mid0 ? t_stop : t_mid0;   /* achieved_rate_mid over what ran (NaN if none) */
    /* Neither kind of leftover is a timeout.  After a signal a connection was cut short.  At
     * the hard end expire() has already ended every connection past its deadline, and a
     * one-packet connection launched by t_end meets its last deadline before the hard end:
     * what is left is a keep-alive session (up to 15 requests, each with its own timeout)
     * whose current request is still inside it.  Both were once counted as timeouts, which
     * charged the server with the generator's own bounded run. */
    while (head) {
        if (stopped_by)
            open_at_stop++;
        else
            head->st->open_at_end++;
        conn_end(head);
    }
    /* waiting with a request still to send: a session the run's end cut, like the above;
     * waiting to close: done, its replies all counted */
    struct waitq *qs[2] = {&delayq, &thinkq};
    for (int i = 0; i < 2; i++)
        while (qs[i]->head) {
            struct lconn *c = qs[i]->head;
            if (c->wait != W_CLOSE) {
                if (stopped_by) open_at_stop++; else c->st->open_at_end++;
            }
            conn_end(c);
        }
    uint64_t w_end = stopped_by && t_stop < t_end ? t_stop : t_end;
    double window = w_end > t_meas ? (double)(w_end - t_meas) / 1e9 : 0.0;
    FILE *out = stdout;
    char tmp[4096];
    if (out_path) {
        snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
        out = fopen(tmp, "w");
        if (!out) { perror("loadgen: out"); return 1; }
    }
    write_json(out, window);
    /* A failed write (a full disk, a file-size limit) sets the stream's error flag, and fclose's
     * final flush may still succeed: a cut-off JSON must not be renamed into place for the
     * runner to read, nor a cut-off stdout end with status 0. */
    if (out_path) {
        int bad = ferror(out), saved = errno;
        if (fclose(out) != 0 || bad) {
            if (bad)
                errno = saved ? saved : EIO;
            perror("loadgen: writing the output");
            unlink(tmp);
            return 1;
        }
        if (rename(tmp, out_path) < 0) { perror("loadgen: rename"); return 1; }
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        if (!errno)
            errno = EIO;
        perror("loadgen: writing the output");
        return 1;
    }
    if (stopped_by) {
        /* the output is kept (marked "interrupted"), and the status says the run did not end */
        fprintf(stderr, "loadgen: interrupted by signal %d, %.3f s into the %.3f s window; %llu connections "
                        "were open; output marked \"interrupted\"\n",
                stopped_by, window, duration, (unsigned long long)open_at_stop);
        return 128 + stopped_by;
    }
    return 0;
}
