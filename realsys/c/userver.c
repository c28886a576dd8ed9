/* userver - a single-process event-driven HTTP server in the μserver's shape
 * (Pariag 2004, fig. 3.1):
 *
 *   loop:  getevents-phase  select | poll | epoll_wait over all interested fds
 *          accept-phase     if the listener was reported readable: accept up to
 *                           --accept-limit connections (or until EAGAIN for "inf")
 *          work-phase       for each fd getevents returned (never the ones just
 *                           accepted): read a request, or write a reply
 *
 * A request is read in one work-phase and the reply written in a later one, when
 * getevents reports the socket writable.  After the work-phase, connections whose
 * request or reply has taken --idle-timeout are closed (idle_expire).  Statistics JSON
 * on SIGTERM/SIGINT; SIGUSR1 zeroes the statistics (end of warm-up). */
#include "common.h"
#include "ev.h"
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { S_READING = 1, S_WRITING = 2 };

struct conn {
    int fd, state, mask;
    uint64_t since;             /* start of the current step: see idle_touch */
    struct conn *older, *newer; /* the idle list, oldest step first */
    size_t rlen;
    size_t rlen_parsed;         /* rlen when last parsed (0: not since it emptied): http_worth_parsing */
    struct reply rp;
    char rbuf[HTTP_MAX_HEAD + 1];
};

static struct conn **conns;
static struct conn *freelist_head[1];
static int nopen;
static const struct ev_backend *ev;
static void *evs;
static unsigned spin_us;
static struct stats stats_main;
/* --idle-timeout in ns; the getevents-phase's return time, the clock of the idle list
 * (at most one work-phase old when read: a step starts that much early at worst). */
static uint64_t idle_ns = 10 * 1000000000ull, loop_now;
static struct conn *idle_oldest, *idle_newest;

/* Connection structs are never returned to malloc: the freelist keeps them, so
 * memory grows only when the number open at once reaches a new high.
 * conn_structs counts them so a soak can tell that growth from a leak. */
static unsigned long conn_structs;
/* Replies part sent at the last SIGUSR1: see the reset in main. */
static unsigned long begun_before_window;

/* Returns: a connection struct from the free list or newly allocated (its fields are the
 * caller's to set), or NULL when out of memory (the accept is then closed, conns_refused_fd). */
static struct conn *conn_new(void)
{
    struct conn *c = freelist_head[0];
    if (c) {
        freelist_head[0] = *(struct conn **)c;
        return c;
    }
    c = malloc(sizeof(struct conn));
    if (c)
        conn_structs++;
    return c;
}

static void conn_free(struct conn *c)
{
    *(struct conn **)c = freelist_head[0];
    freelist_head[0] = c;
}

/* The idle list holds every open connection in the order its current step began: a
 * request from the accept or the previous reply's end, however it trickles in, a reply
 * from the request's end, however slowly it is read.  A step is never restarted by
 * progress within it, so a list (two pointer moves per request) stays ordered, and
 * idle_expire only looks at its head: no scan of all connections. */
static void idle_unlink(struct conn *c)
{
    if (c->older)
        c->older->newer = c->newer;
    else
        idle_oldest = c->newer;
    if (c->newer)
        c->newer->older = c->older;
    else
        idle_newest = c->older;
}

static void idle_append(struct conn *c)
{
    c->since = loop_now;
    c->newer = NULL;
    c->older = idle_newest;
    if (idle_newest)
        idle_newest->newer = c;
    else
        idle_oldest = c;
    idle_newest = c;
}

/* A new step (request or reply) begins for c: it goes to the young end. */
static void idle_touch(struct conn *c)
{
    idle_unlink(c);
    idle_append(c);
}

static void set_mask(struct conn *c, int m)
{
    if (c->mask == m)
        return;
    ev->set(evs, c->fd, c->mask, m);
    c->mask = m;
}

/* Take c out of the interest set and the idle list, close it and free c (counted in
 * conns_closed, and conns_reset with reset). */
static void conn_close(struct conn *c, int reset)
{
    ev->set(evs, c->fd, c->mask, EV_CLOSING);
    idle_unlink(c);
    TIMED(SC_CLOSE, close(c->fd));
    conns[c->fd] = NULL;
    nopen--;
    ST->conns_closed++;
    if (reset)
        ST->conns_reset++;
    conn_free(c);
}

/* Parse what is buffered; on a complete request, or one refused (400, 501: closed after
 * its reply), prepare the reply and switch to write interest (S_WRITING, idle_touch).
 * Returns: nothing; c stays open either way (S_READING while the head may still become
 * valid). */
static void conn_request(struct conn *c)
{
    c->rlen_parsed = c->rlen;
    int r = reply_prepare(&c->rp, c->rbuf, c->rlen, spin_us);
    if (r == HTTP_PARTIAL) {
        c->state = S_READING;
        set_mask(c, EV_READ);
        return;
    }
    size_t used = r > 0 ? (size_t)r : c->rp.consumed;
    if (used > 0) {
        memmove(c->rbuf, c->rbuf + used, c->rlen - used);
        c->rlen -= used;
    } else {
        c->rlen = 0; /* 400/501: closes after the reply */
    }
    c->rlen_parsed = 0; /* a pipelined rest is parsed whole when the reply is out */
    idle_touch(c);
    c->state = S_WRITING;
    set_mask(c, EV_WRITE);
}

/* Read what the socket holds and parse it when worth it (http_worth_parsing).  May close
 * and free c (EOF, an error): the caller must not touch c after. */
static void do_read(struct conn *c)
{
    ssize_t n = TIMED(SC_READ, read(c->fd, c->rbuf + c->rlen, sizeof c->rbuf - c->rlen));
    if (n == 0) {
        conn_close(c, 0);
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            conn_close(c, 1);
        return;
    }
    c->rlen += (size_t)n;
    if (http_worth_parsing(c->rbuf, c->rlen_parsed, c->rlen))
        conn_request(c);
}

/* Send the next part of the reply; at its end close (no keep-alive) or go on to a pipelined
 * request.  May close and free c: the caller must not touch c after. */
static void do_write(struct conn *c)
{
    int r = reply_send(c->fd, &c->rp);
    if (r == 0)
        return;
    if (r < 0 || !c->rp.keepalive) {
        if (r > 0)
            close_drain(c->fd);
        conn_close(c, r < 0);
        return;
    }
    idle_touch(c);
    if (c->rlen > 0) { /* pipelined request already buffered */
        conn_request(c);
        return;
    }
    c->state = S_READING;
    set_mask(c, EV_READ);
}

/* Close the connections whose step began idle_ns ago or more (the oldest first, so this
 * stops at the first that is younger).  One cut short mid-reply counts as a reset too,
 * as knot counts it.  A head with bytes not parsed since they came is parsed once more
 * first: a bad one trickled in pieces under HTTP_REPARSE_BYTES, with no '\n', and then
 * stalled was closed here with no reply; it gets its 400 (conn_request moves it to the
 * young end, S_WRITING), one still able to become valid is closed. */
static void idle_expire(void)
{
    while (idle_oldest && loop_now - idle_oldest->since >= idle_ns) {
        struct conn *c = idle_oldest;
        if (c->state == S_READING && c->rlen > c->rlen_parsed) {
            conn_request(c);
            if (c->state == S_WRITING)
                continue;
        }
        ST->conns_idle_closed++;
        conn_close(c, c->state == S_WRITING);
    }
}

/* Prints the usage and exits: to stdout with status 0 when asked for (--help, -h), to
 * stderr with status 2 after a bad command line, so a caller can tell the two apart. */
static void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: userver [--addr A] [--port P] [--backlog N] [--mux select|poll|epoll]\n"
            "               [--accept-limit N|inf] [--spin-us U] [--docroot DIR] [--stats FILE]\n"
            "               [--max-conns N] [--sample-ms MS] [--idle-timeout S] [--writev-max B] [--help]\n"
            "  --idle-timeout S  close a connection whose request is not whole S seconds after its\n"
            "                    accept or the previous reply, or whose reply is not sent S seconds\n"
            "                    after its request, however slowly it trickles (default 10)\n"
            "  --writev-max B    files up to B bytes are sent from memory with one writev, larger\n"
            "                    ones with TCP_CORK + write + sendfile (default 16384; 0: all sendfile)\n");
    exit(status);
}

int main(int argc, char **argv)
{
    const char *addr = "0.0.0.0", *docroot = ".", *stats_path = NULL;
    int port = 8080, backlog = 128, max_conns = 15000, sample_ms = 100;
    long accept_limit = -1; /* -1 = inf */
    static const struct option lo[] = {
        {"addr", 1, 0, 'a'}, {"port", 1, 0, 'p'}, {"backlog", 1, 0, 'b'}, {"mux", 1, 0, 'm'},
        {"accept-limit", 1, 0, 'l'}, {"spin-us", 1, 0, 's'}, {"docroot", 1, 0, 'd'},
        {"stats", 1, 0, 'o'}, {"max-conns", 1, 0, 'c'}, {"sample-ms", 1, 0, 'S'},
        {"idle-timeout", 1, 0, 'i'}, {"writev-max", 1, 0, 'W'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    static const char *const muxes[] = {"select", "poll", "epoll", NULL};
    static const struct ev_backend *const backends[] = {&ev_select_backend, &ev_poll_backend, &ev_epoll_backend};
    ev = &ev_select_backend;
    while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (o) {
        case 'a': addr = opt_ipv4("userver", "addr", optarg, NULL); break;
        case 'p': port = (int)opt_long("userver", "port", optarg, 1, 65535); break;
        case 'b': backlog = (int)opt_long("userver", "backlog", optarg, 1, 1 << 20); break;
        case 'm': ev = backends[opt_choice("userver", "mux", optarg, muxes)]; break;
        case 'l':
            accept_limit = strcmp(optarg, "inf") == 0 ? -1 : opt_long("userver", "accept-limit", optarg, 1, 1L << 30);
            break;
        case 's': spin_us = (unsigned)opt_long("userver", "spin-us", optarg, 0, 1000000); break;
        case 'd': docroot = optarg; break;
        case 'o': stats_path = opt_outpath("userver", "stats", optarg); break;
        case 'c': max_conns = (int)opt_long("userver", "max-conns", optarg, 1, 1L << 22); break;
        case 'S': sample_ms = (int)opt_long("userver", "sample-ms", optarg, 1, 3600000); break;
        case 'i':
            idle_ns = (uint64_t)opt_long("userver", "idle-timeout", optarg, 1, 86400) * 1000000000ull;
            break;
        case 'W': writev_max = (size_t)opt_long("userver", "writev-max", optarg, 0, 1L << 26); break;
        case 'h': usage(0); break;
        default: usage(2);
        }
    }
    if (optind < argc)
        opt_stray("userver", argv[optind]);
    ST = &stats_main;
    install_signals();
    /* Asked for before the document root is loaded, which keeps one descriptor per file open:
     * room for the largest root it loads (DOCROOT_MAX_FDS) too.  max_conns + 80 alone left a
     * root of more files than that to the soft limit the server was started with (400 files,
     * a soft limit of 256 under a hard 4096, --max-conns 10: "docroot: Too many open files",
     * exit 1).  The table is sized below from what the root then holds (fds_open). */
    raise_nofile(max_conns + 64 + 16 + DOCROOT_MAX_FDS);
    if (spin_us)
        fprintf(stderr, "%s: spin calibrated at %.1f iterations/us\n", argv[0], spin_calibrate());
    if (docroot_load(docroot) < 0) {
        perror("userver: docroot");
        return 1;
    }
    stats_reserve_fd();
    int lfd = make_listener(addr, port, backlog, 1);
    if (lfd < 0) {
        perror("userver: listen");
        return 1;
    }
    /* The kernel gives the lowest free descriptor, so connections take what the server does
     * not hold itself (the document root keeps one per file; the event backend's own is
     * still to come, hence the 8).  maxfds had been max_conns + 64, so a document root of
     * more than ~58 files left fewer than --max-conns (121 files and --max-conns 10: every
     * connection refused).  Accepted fds >= maxfds are refused and
     * closed.  With maxfds = lim no fd was ever >= maxfds: accept() failed with EMFILE
     * instead, the listener stayed readable and the loop spun at full CPU; 16 descriptors
     * above maxfds leave room to accept and refuse.  They are asked for too: a soft limit
     * raised to exactly maxfds (a low soft limit under a high hard one, systemd's 1024 /
     * 524288) had left none. */
    int held = fds_open();
    int maxfds = (held < 0 ? 64 : held + 8) + max_conns;
    int lim = raise_nofile(maxfds + 16);
    if (lim < maxfds + 16) {
        maxfds = lim > 64 ? lim - 16 : lim;
        /* The cap is then what the table leaves: connections past it wait in the accept
         * queue, as at --max-conns, instead of being accepted on a descriptor >= maxfds and
         * closed.  Said, since the run's cap is not the one asked for. */
        int room = maxfds - (held < 0 ? 64 : held + 8);
        if (room < 1)
            room = 1;
        if (room < max_conns) {
            fprintf(stderr, "userver: --max-conns %d lowered to %d: the open-files limit is %d\n", max_conns,
                    room, lim);
            max_conns = room;
        }
    }
    conns = calloc((size_t)maxfds, sizeof *conns);
    evs = ev->create(maxfds);
    struct ev_fired *fired = malloc((size_t)maxfds * sizeof *fired);
    if (!conns || !evs || !fired) {
        perror("userver: alloc");
        return 1;
    }
    ev->set(evs, lfd, 0, EV_READ);
    fprintf(stderr, "userver: %s accept-limit %ld on %s:%d backlog %d maxfds %d\n", ev->name,
            accept_limit, addr, port, backlog, maxfds);

    struct samples sm = {0};
    uint64_t t_start = now_ns(), next_sample = t_start;
    uint64_t listen_resume = 0; /* != 0: the listener is out of the set until then (ns) */
    int listening = 1;          /* the listener is in the interest set */
    char extra[256];
    if (accept_limit < 0)
        snprintf(extra, sizeof extra, "\"server\": \"userver\", \"mux\": \"%s\", \"accept_limit\": \"inf\", "
                 "\"spin_us\": %u, \"max_conns\": %d, ", ev->name, spin_us, max_conns);
    else
        snprintf(extra, sizeof extra, "\"server\": \"userver\", \"mux\": \"%s\", \"accept_limit\": \"%ld\", "
                 "\"spin_us\": %u, \"max_conns\": %d, ", ev->name, accept_limit, spin_us, max_conns);
    int failed = 0; /* getevents failed: the statistics are still written, and exit 1 */
    while (!g_stop) {
        if (g_snap) {
            g_snap = 0;
            char ex[400];
            snprintf(ex, sizeof ex, "%s\"open_conns_now\": %d, \"conn_structs\": %lu, \"conn_struct_bytes\": %zu, "
                     "\"replies_begun_before_window\": %lu,\n",
                     extra, nopen, conn_structs, sizeof(struct conn), begun_before_window);
            stats_snapshot(stats_path, ex, &stats_main, (double)(now_ns() - t_start) / 1e9, &sm);
        }
        if (g_reset) {
            g_reset = 0;
            /* A reply counts when its last byte goes, so one begun before the window (its
             * CORK or its header's write before the reset) counts in it without them. */
            begun_before_window = 0;
            for (int fd = 0; fd < maxfds; fd++)
                if (conns[fd] && conns[fd]->state == S_WRITING && (conns[fd]->rp.corked || conns[fd]->rp.sent))
                    begun_before_window++;
            memset(&stats_main, 0, sizeof stats_main);
            sm.len = 0;
            t_start = now_ns();
            next_sample = t_start;
        }
        /* getevents-phase.  At --max-conns the listener leaves the interest set, as it leaves
         * the simulated μserver's at server.max_conns: the connections past the cap wait in
         * the accept queue (and the kernel's drop rules apply to the rest) until one closes.
         * It had accepted them and closed each at once, a reset the model has no counterpart
         * of, for an accept and a close a connection; a level-triggered listener left in the
         * set would have the loop spin instead. */
        if (listen_resume && now_ns() >= listen_resume)
            listen_resume = 0;
        int want_listen = nopen < max_conns && !listen_resume;
        if (want_listen != listening) {
            ev->set(evs, lfd, listening ? EV_READ : 0, want_listen ? EV_READ : 0);
            listening = want_listen;
        }
        int n = ev->wait(evs, fired, maxfds, listen_resume ? 10 : 100);
        ST->getevents_calls++;
        if (n < 0) {
            if (errno == EINTR)
                continue; /* a signal (SIGUSR1: statistics) */
            /* Anything else repeats at every call (EBADF: a closed descriptor left in the
             * set; ENOMEM): continuing spun the loop at full CPU with no idle expiry.  A
             * server that cannot wait for events is no server: say why and stop. */
            fprintf(stderr, "userver: %s: %s\n", ev->name, strerror(errno));
            failed = 1;
            break;
        }
        ST->fds_returned += (uint64_t)n;
        uint64_t now = loop_now = now_ns();
        if (now >= next_sample) {
            samples_add(&sm, (double)(now - t_start) / 1e9, nopen);
            next_sample = now + (uint64_t)sample_ms * 1000000ull;
        }
        /* accept-phase */
        int listen_ready = 0;
        for (int i = 0; i < n; i++)
            if (fired[i].fd == lfd) {
                listen_ready = 1;
                fired[i].fd = -1;
                break;
            }
        if (listen_ready) {
            ST->accept_phases++;
            for (long k = 0; (accept_limit < 0 || k < accept_limit) && nopen < max_conns; k++) {
                int fd = TIMED(SC_ACCEPT, accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
                if (fd < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK)
                        ST->accepts_eagain++;
                    else {
                        ST->accept_errors++; /* EMFILE, ECONNABORTED, ... */
                        /* Out of fds or memory (a limit of 64 or less leaves no room above
                         * maxfds; the docroot's open files eat the rest): the level-triggered
                         * listener stays readable and the loop spun at full CPU, millions of
                         * failed accepts a second.  Leave it out of the set for 10 ms. */
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                            listen_resume = now + 10000000ull;
                        /* One connection's failure, not the queue's (accept(2): a connection
                         * aborted or reset in the queue, a signal): the phase goes on, so
                         * "inf" drains until EAGAIN; a try the accept-limit counts. */
                        else if (errno == ECONNABORTED || errno == EPROTO || errno == EINTR)
                            continue;
                    }
                    break;
                }
                ST->accepts++;
                /* --max-conns is the number of connections open, as server.max_conns is in
                 * the simulator (the loop stops there); maxfds only sizes the arrays (it had
                 * been the cap, off from the flag by the descriptors the server holds itself).
                 * A descriptor >= maxfds (one the server opened meanwhile took a lower one)
                 * is still refused: the table has no slot for it. */
                struct conn *c = fd < maxfds ? conn_new() : NULL;
                if (!c || ev->set(evs, fd, 0, EV_READ) < 0) {
                    ST->conns_refused_fd++;
                    TIMED(SC_CLOSE, close(fd));
                    if (c)
                        conn_free(c);
                    continue;
                }
                c->fd = fd;
                c->state = S_READING;
                c->mask = EV_READ;
                c->rlen = 0;
                c->rlen_parsed = 0;
                idle_append(c);
                conns[fd] = c;
                nopen++;
            }
        }
        /* work-phase: only the fds getevents returned */
        ST->work_phases++;
        for (int i = 0; i < n; i++) {
            int fd = fired[i].fd;
            if (fd < 0 || !conns[fd])
                continue;
            struct conn *c = conns[fd];
            ST->work_items++;
            if (c->state == S_READING && (fired[i].mask & EV_READ))
                do_read(c);
            else if (c->state == S_WRITING && (fired[i].mask & EV_WRITE))
                do_write(c);
        }
        idle_expire(); /* the loop wakes at least every 100 ms: the timeout's resolution */
    }
    double wall = (double)(now_ns() - t_start) / 1e9;
    char ex[400];
    snprintf(ex, sizeof ex, "%s\"open_conns_now\": %d, \"conn_structs\": %lu, \"conn_struct_bytes\": %zu, "
             "\"replies_begun_before_window\": %lu,\n",
             extra, nopen, conn_structs, sizeof(struct conn), begun_before_window);
    int rc = stats_write_json(stats_path, ex, &stats_main, wall, &sm);
    if (rc < 0)
        perror("userver: stats");
    /* Process-lifetime buffers held only by locals: freed so that the ASan build's leak check
     * at exit reports real leaks alone.  What statics still point to (conns, the connection
     * structs, the poller, the document root) is reachable, which LeakSanitizer does not report. */
    free(fired);
    samples_free(&sm);
    return rc < 0 || failed ? 1 : 0;
}
