/* knot - a thread-per-connection HTTP server in Knot-C's shape (Pariag 2004, 3.1.2):
 * a fixed pool of --threads pthreads pre-created at start; each thread loops
 *
 *   accept-phase  accept up to --accept-limit connections without blocking
 *                 (non-blocking listener; if none is pending, sleep in poll on it)
 *   work-phase    serve each accepted connection to completion, one after another,
 *                 with blocking I/O (all its keep-alive requests, until it closes)
 *
 * Accept-limit 1 is unmodified Knot-C.  Capriccio's user-level scheduler is replaced
 * by the kernel's: the poll() that Capriccio ran on blocked threads' fds shows up here
 * as kernel scheduling, so getevents statistics stay 0.  Statistics are kept per
 * thread (no sharing in the fast path) and summed at exit. */
#include "common.h"
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int lfd, nthreads = 64, idle_timeout_s = 10;
static long accept_limit = 1;
static int max_conns = INT_MAX; /* --max-conns: open connections, all threads together */
static unsigned spin_us;
/* Each thread counts into its own tstats[i], never reset.  The measured window's counts are
 * tstats minus tbase, the copy taken at SIGUSR1: threads used to zero their own counts when
 * they next reached the top of their loop, which a thread serving a batch of held
 * connections did only after the batch, dropping the replies it made in the window before
 * (at accept-limit inf 5-10 % of them, read as accepted connections left unanswered). */
static struct stats *tstats, *tbase;
static atomic_int nopen;

/* Bound the next blocking call on fd by deadline: the socket's timeout opt (SO_RCVTIMEO,
 * SO_SNDTIMEO), whose value is *cur_ns, is lowered to what remains when it would run past
 * the deadline by more than 10 ms.  A request that comes in one read and a reply that goes
 * in one write never get here with a timeout to lower: no setsockopt beyond the listener's
 * (inherited); a trickling client pays one per read or write, each shorter than the last.
 * A timeout left lower than what remains only ends a call early (EAGAIN); the caller then
 * comes back here, which raises it.
 * Returns: 0 COMPLETE: the call may block; -1 the deadline has passed. */
static int bound_by(int fd, int opt, uint64_t *cur_ns, uint64_t deadline)
{
    uint64_t now = now_ns();
    if (now >= deadline)
        return -1;
    uint64_t rem = deadline - now, slack = 10000000;
    if (*cur_ns <= rem + slack && *cur_ns + slack >= rem)
        return 0;
    /* Rounded up to a microsecond: a zero timeval would mean no timeout at all. */
    struct timeval tv = { (time_t)(rem / 1000000000u), (suseconds_t)(rem % 1000000000u / 1000u + 1) };
    if (tv.tv_usec >= 1000000) {
        tv.tv_sec++;
        tv.tv_usec -= 1000000;
    }
    TIMED(SC_SETSOCKOPT, setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv));
    *cur_ns = rem;
    return 0;
}

/* One connection to its end.  --idle-timeout S is one deadline per step, not per system
 * call: a request must be whole within S of the connection's accept or of the previous
 * reply's end (however it trickles in), and a reply sent within S of the request's end
 * (however slowly it is read).  Both timeouts are at S already, from the listener. */
static void serve(int fd, uint64_t t_accept)
{
    char buf[HTTP_MAX_HEAD + 1];
    size_t len = 0;
    struct reply rp;
    uint64_t limit = (uint64_t)idle_timeout_s * 1000000000u, rcv = limit, snd = limit;
    /* From the accept, not from here: a connection a batch held behind slower ones had had
     * its whole S again once its turn came. */
    uint64_t deadline = t_accept + limit;
    int reset = 0, idle = 0, late = 0; /* late: the one look past the deadline is taken */
    size_t len_parsed = 0;             /* len when last parsed (0: not since it emptied) */
    for (;;) {
        int r = HTTP_PARTIAL;
        if (http_worth_parsing(buf, len_parsed, len)) {
            len_parsed = len;
            r = reply_prepare(&rp, buf, len, spin_us);
        }
        if (r == HTTP_PARTIAL) {
            if (bound_by(fd, SO_RCVTIMEO, &rcv, deadline) < 0) {
                /* Past the deadline, what arrived in time still counts: the request of a
                 * connection a batch held may be waiting whole in its socket (userver, too,
                 * reads it in the work-phase before its idle check).  One look, no wait. */
                ssize_t n = late ? -1 : TIMED(SC_READ, recv(fd, buf + len, sizeof buf - len, MSG_DONTWAIT));
                late = 1;
                if (n > 0) {
                    len += (size_t)n;
                    continue;
                }
                if (n == 0)
                    break; /* the client had closed: a close, as userver's work-phase finds it */
                /* Bytes not parsed since they came (a bad head trickled in pieces under
                 * HTTP_REPARSE_BYTES, with no '\n', then stalled) are parsed once more: a 400
                 * where there was a bare close.  len_parsed = 0 forces it, once: it is len
                 * after that parse. */
                if (len > len_parsed) {
                    len_parsed = 0;
                    continue;
                }
                idle = 1;
                break;
            }
            ssize_t n = TIMED(SC_READ, read(fd, buf + len, sizeof buf - len));
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue; /* a timeout set for an earlier deadline; bound_by decides */
            if (n <= 0) {
                reset = n < 0;
                break;
            }
            len += (size_t)n;
            continue;
        }
        size_t used = r > 0 ? (size_t)r : rp.consumed;
        memmove(buf, buf + used, len - used);
        len -= used;
        len_parsed = 0;
        deadline = now_ns() + limit;
        late = 0;
        int s;
        while ((s = reply_send_step(fd, &rp)) == 0) {
            if (bound_by(fd, SO_SNDTIMEO, &snd, deadline) < 0) {
                idle = 1;
                break;
            }
        }
        if (s < 0 || idle) {
            reset = 1; /* a reply cut short, as a send timeout always counted */
            break;
        }
        if (!rp.keepalive) {
            close_drain(fd);
            break;
        }
        deadline = now_ns() + limit;
    }
    /* Counted before the close: a client that has seen the close must find it counted.  After
     * it, a worker descheduled between close() and the counts (a loaded machine) let a stats
     * file written at SIGTERM miss a close its client had already seen. */
    ST->conns_closed++;
    if (reset)
        ST->conns_reset++;
    if (idle)
        ST->conns_idle_closed++;
    TIMED(SC_CLOSE, close(fd));
    atomic_fetch_sub(&nopen, 1);
}

/* The threads' counts since the last SIGUSR1 (since the start before one). */
static struct stats window_total(int started)
{
    struct stats total = {0}, base = {0};
    for (int i = 0; i < started; i++) {
        stats_add(&total, &tstats[i]);
        stats_add(&base, &tbase[i]);
    }
    stats_sub(&total, &base);
    return total;
}

static void *worker(void *arg)
{
    ST = arg;
    /* The accept-phase's batch grows to the accept-limit (inf: without bound) as it is needed.
     * It was a fixed 4096, so accept-limit inf and any limit above 4096 were 4096 in truth;
     * the accept queue rarely holds that many, but a phase also takes what arrives meanwhile. */
    size_t cap = accept_limit > 0 && accept_limit < 64 ? (size_t)accept_limit : 64;
    struct held { int fd; uint64_t t_accept; } *acc = malloc(cap * sizeof *acc);
    if (!acc)
        return NULL;
    while (!g_stop) {
        size_t n = 0;
        int capped = 0;
        while (accept_limit < 0 || n < (size_t)accept_limit) {
            if (n == cap) {
                size_t want = accept_limit > 0 && (size_t)accept_limit < 2 * cap ? (size_t)accept_limit : 2 * cap;
                struct held *more = realloc(acc, want * sizeof *acc);
                if (!more)
                    break;   /* out of memory: this phase serves what it has */
                acc = more;
                cap = want;
            }
            /* --max-conns, as server.max_conns bounds the simulated Knot-C's accepts: a slot is
             * taken before the accept, so threads racing for the last one cannot pass the cap;
             * the connections past it wait in the accept queue. */
            if (atomic_fetch_add(&nopen, 1) >= max_conns) {
                atomic_fetch_sub(&nopen, 1);
                capped = 1;
                break;
            }
            int fd = TIMED(SC_ACCEPT, accept4(lfd, NULL, NULL, SOCK_CLOEXEC));
            if (fd < 0) {
                atomic_fetch_sub(&nopen, 1);
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    ST->accepts_eagain++;
                } else {
                    ST->accept_errors++;
                    /* Out of fds (EMFILE/ENFILE) or memory, the listener stays readable: with
                     * nothing accepted the poll below returned at once and this thread spun on
                     * accept() until another thread closed a connection.  Back off instead. */
                    if (n == 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM))
                        TIMED(SC_POLL, poll(NULL, 0, 10));
                    /* One connection's failure, not the queue's (accept(2)), as userver: the phase
                     * goes on; each such failure took its entry off the queue, so no spin. */
                    else if (errno == ECONNABORTED || errno == EPROTO || errno == EINTR)
                        continue;
                }
                break;
            }
            ST->accepts++;
            acc[n].fd = fd;
            acc[n++].t_accept = now_ns();
        }
        if (n == 0 && capped) { /* the listener stays readable: polling it would spin */
            TIMED(SC_POLL, poll(NULL, 0, 10));
            continue;
        }
        if (n == 0) { /* lost the race for a woken listener, or none queued: not a phase (common.h) */
            struct pollfd p = { lfd, POLLIN, 0 };
            TIMED(SC_POLL, poll(&p, 1, 100));
            continue;
        }
        ST->accept_phases++;
        ST->work_phases++;
        ST->work_items += n;
        for (size_t i = 0; i < n; i++)
            serve(acc[i].fd, acc[i].t_accept);
    }
    free(acc);
    return NULL;
}

/* Prints the usage and exits: to stdout with status 0 when asked for (--help, -h), to
 * stderr with status 2 after a bad command line, so a caller can tell the two apart. */
static void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: knot [--addr A] [--port P] [--backlog N] [--threads T] [--accept-limit N|inf]\n"
            "            [--spin-us U] [--docroot DIR] [--stats FILE] [--sample-ms MS] [--idle-timeout S]\n"
            "            [--writev-max B] [--mux select|poll|epoll] [--max-conns N] [--help]\n"
            "  --max-conns N     at most N connections open, all threads together; the rest wait in\n"
            "                    the accept queue (default: no cap but the open-files limit)\n"
            "  --idle-timeout S  close a connection whose request is not whole S seconds after its\n"
            "                    accept or the previous reply, or whose reply is not sent S seconds\n"
            "                    after its request, however slowly it trickles (default 10)\n"
            "  --writev-max B    files up to B bytes are sent from memory with one writev, larger\n"
            "                    ones with TCP_CORK + write + sendfile (default 16384; 0: all sendfile)\n"
            "  --mux M           taken for a userver command line's sake and ignored: a thread blocks\n"
            "                    in its own calls, with no getevents-phase\n");
    exit(status);
}

int main(int argc, char **argv)
{
    const char *addr = "0.0.0.0", *docroot = ".", *stats_path = NULL;
    int port = 8080, backlog = 128, sample_ms = 100;
    static const struct option lo[] = {
        {"addr", 1, 0, 'a'}, {"port", 1, 0, 'p'}, {"backlog", 1, 0, 'b'}, {"threads", 1, 0, 't'},
        {"accept-limit", 1, 0, 'l'}, {"spin-us", 1, 0, 's'}, {"docroot", 1, 0, 'd'},
        {"stats", 1, 0, 'o'}, {"sample-ms", 1, 0, 'S'}, {"idle-timeout", 1, 0, 'i'}, {"writev-max", 1, 0, 'W'},
        {"mux", 1, 0, 'm'}, {"max-conns", 1, 0, 'c'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (o) {
        case 'a': addr = opt_ipv4("knot", "addr", optarg, NULL); break;
        case 'p': port = (int)opt_long("knot", "port", optarg, 1, 65535); break;
        case 'b': backlog = (int)opt_long("knot", "backlog", optarg, 1, 1 << 20); break;
        case 't': nthreads = (int)opt_long("knot", "threads", optarg, 1, 100000); break;
        case 'l':
            accept_limit = strcmp(optarg, "inf") == 0 ? -1 : opt_long("knot", "accept-limit", optarg, 1, 1L << 30);
            break;
        case 's': spin_us = (unsigned)opt_long("knot", "spin-us", optarg, 0, 1000000); break;
        case 'd': docroot = optarg; break;
        case 'o': stats_path = opt_outpath("knot", "stats", optarg); break;
        case 'S': sample_ms = (int)opt_long("knot", "sample-ms", optarg, 1, 3600000); break;
        case 'i': idle_timeout_s = (int)opt_long("knot", "idle-timeout", optarg, 1, 86400); break;
        case 'm': /* accepted (one argv for every server) and ignored: knot has no getevents-phase */
            opt_choice("knot", "mux", optarg, (const char *const[]){"select", "poll", "epoll", NULL});
            break;
        case 'W': writev_max = (size_t)opt_long("knot", "writev-max", optarg, 0, 1L << 26); break;
        case 'c': max_conns = (int)opt_long("knot", "max-conns", optarg, 1, 1L << 22); break;
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (optind < argc)
        opt_stray("knot", argv[optind]);
    static struct stats main_stats;
    ST = &main_stats;
    install_signals();
    /* Each thread may hold a whole accept-phase's batch at once: accept-limit connections, or
     * at inf as many as there are (ask for everything; raise_nofile falls back to the hard
     * limit).  The old nthreads x min(limit, 64) gave one thread at inf 320 descriptors.
     * Asked for before the document root is loaded, so that its files find room too (as many
     * as it loads, DOCROOT_MAX_FDS: conns + 256 alone had failed a root of 400 files under a
     * soft limit of 256, 2 threads of accept-limit 1, "docroot: Too many open files"); asked
     * again below with what the process then holds counted. */
    long long conns = accept_limit < 0 ? INT_MAX : (long long)nthreads * accept_limit;
    if (conns > max_conns)
        conns = max_conns;
    long long want = conns + 256 + DOCROOT_MAX_FDS;
    raise_nofile(want > INT_MAX ? INT_MAX : (int)want);
    if (spin_us)
        fprintf(stderr, "%s: spin calibrated at %.1f iterations/us\n", argv[0], spin_calibrate());
    if (docroot_load(docroot) < 0) {
        perror("knot: docroot");
        return 1;
    }
    stats_reserve_fd();
    lfd = make_listener(addr, port, backlog, 1);
    if (lfd < 0) {
        perror("knot: listen");
        return 1;
    }
    /* The document root keeps one descriptor per file, and stdio, the listener and the
     * statistics' spare one each: counted on top of the connections, as userver counts them
     * (fds_open).  They had come out of the 256 spare, so a root of more than about 250 files
     * took descriptors the connections were sized for (a batch then met EMFILE). */
    int held = fds_open();
    want = conns + (held < 0 ? 64 : held) + 256;
    raise_nofile(want > INT_MAX ? INT_MAX : (int)want);
    /* Both socket timeouts start at the idle timeout on the listener, inherited by every
     * accepted socket (as TCP_NODELAY is): no setsockopt per connection (there was one, for
     * SO_RCVTIMEO); serve() lowers them only for a request or reply that outlasts one call. */
    struct timeval to = { idle_timeout_s, 0 };
    setsockopt(lfd, SOL_SOCKET, SO_SNDTIMEO, &to, sizeof to);
    setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof to);
    /* Workers must not take the process-directed SIGTERM: block it in them. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    tstats = calloc((size_t)nthreads, sizeof *tstats);
    tbase = calloc((size_t)nthreads, sizeof *tbase);
    pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
    if (!tstats || !tbase || !tid) {
        fprintf(stderr, "knot: out of memory for %d threads\n", nthreads);
        return 1;
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 128 * 1024);
    int started = 0, pc = 0;
    for (int i = 0; i < nthreads; i++) {
        if ((pc = pthread_create(&tid[i], &at, worker, &tstats[i])) != 0)
            break;
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started == 0) { /* listening with no thread to accept would look like a server at 0 replies/s */
        fprintf(stderr, "knot: could not start any thread: %s\n", strerror(pc));
        return 1;
    }
    fprintf(stderr, "knot: %d threads accept-limit %ld on %s:%d backlog %d\n", started, accept_limit,
            addr, port, backlog);
    struct samples sm = {0};
    uint64_t t_start = now_ns();
    char lim[32];
    if (accept_limit < 0)
        snprintf(lim, sizeof lim, "inf");
    else
        snprintf(lim, sizeof lim, "%ld", accept_limit);
    char extra[320];
    while (!g_stop) {
        if (g_snap) {
            g_snap = 0;
            struct stats total = window_total(started);
            snprintf(extra, sizeof extra,
                     "\"server\": \"knot\", \"mux\": \"\", \"accept_limit\": \"%s\", \"threads\": %d, "
                     "\"spin_us\": %u, \"open_conns_now\": %d,\n", lim, started, spin_us, atomic_load(&nopen));
            stats_snapshot(stats_path, extra, &total, (double)(now_ns() - t_start) / 1e9, &sm);
        }
        if (g_reset) {
            g_reset = 0;
            for (int i = 0; i < started; i++)
                tbase[i] = tstats[i]; /* word-sized loads of a running thread's counts, as below */
            sm.len = 0;
            t_start = now_ns();
        }
        samples_add(&sm, (double)(now_ns() - t_start) / 1e9, atomic_load(&nopen));
        struct timespec ts = { sample_ms / 1000, (long)(sample_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    double wall = (double)(now_ns() - t_start) / 1e9;
    /* Threads in blocking reads notice g_stop only after their idle timeout: do not join;
     * sum what they have counted so far (word-sized loads, good enough for statistics). */
    struct stats total = window_total(started);
    snprintf(extra, sizeof extra,
             "\"server\": \"knot\", \"mux\": \"\", \"accept_limit\": \"%s\", \"threads\": %d, "
             "\"spin_us\": %u, \"open_conns_now\": %d,\n",
             lim, started, spin_us, atomic_load(&nopen));
    int rc = stats_write_json(stats_path, extra, &total, wall, &sm);
    if (rc < 0)
        perror("knot: stats");
    _exit(rc < 0 ? 1 : 0);
}
