/* common.h - what userver and knot share: syscall timing and statistics, the
 * in-memory file set, building and sending replies, the statistics JSON. */
#ifndef REALSYS_COMMON_H
#define REALSYS_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include "http.h"

/* Syscall classes timed with clock_gettime(CLOCK_MONOTONIC) around each call
 * (vDSO, ~20-40 ns per reading: the timing itself adds roughly 2 readings per call). */
enum sc_id {
    SC_SELECT, SC_POLL, SC_EPOLL_WAIT, SC_ACCEPT, SC_READ, SC_WRITE, SC_WRITEV,
    SC_SENDFILE, SC_CLOSE, SC_SETSOCKOPT, SC_EPOLL_CTL, SC_N
};
extern const char *const sc_names[SC_N];

struct stats {
    uint64_t sc_calls[SC_N], sc_ns[SC_N];
    uint64_t accept_phases;   /* userver: accept-phases that called accept at least once; knot:
                               * those that accepted one at least (its threads all poll the one
                               * listener and all wake: a thread that lost the race for the
                               * connection gets EAGAIN, counted in accepts_eagain, not a phase) */
    uint64_t accepts, accepts_eagain, accept_errors;
    uint64_t getevents_calls, fds_returned;
    uint64_t work_phases, work_items;
    uint64_t requests, replies, status_2xx, status_4xx, status_5xx, bytes_sent;
    uint64_t conns_closed, conns_reset, conns_refused_fd;
    uint64_t conns_idle_closed; /* closed by --idle-timeout (also counted in conns_closed) */
    uint64_t spin_ns;
};

/* The calling thread's statistics (userver: one; knot: one per thread). */
extern __thread struct stats *ST;

/* Returns: CLOCK_MONOTONIC in ns. */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Time one system call into ST. Usage: n = TIMED(SC_READ, read(fd, b, n)); */
#define TIMED(id, call) ({                                   \
        uint64_t t0_ = now_ns();                             \
        __typeof__(call) r_ = (call);                        \
        ST->sc_ns[(id)] += now_ns() - t0_;                   \
        ST->sc_calls[(id)]++;                                \
        r_; })

void stats_add(struct stats *into, const struct stats *s);
/* from -= s, field by field (every field is a uint64_t count) */
void stats_sub(struct stats *from, const struct stats *s);

/* ---- document root: all regular files loaded once at start-up ---------------- */
#define SMALL_FILE_MAX 16384  /* writev_max's default */

/* Files up to writev_max bytes are kept in memory and sent, header and body, with one
 * writev (a copy; the thesis's μserver on the one-packet workload, and Knot, which cannot
 * use sendfile); larger ones with TCP_CORK + write(header) + sendfile(body) + uncork (the
 * thesis's μserver on SPECweb99-like files, sec. 3.1).  0 sends every file with sendfile.
 * Set by --writev-max before docroot_load, which reads it. */
extern size_t writev_max;

struct file {
    char *path;               /* relative to the root, no leading '/' */
    int fd;                   /* kept open for sendfile */
    off_t size;
    char *data;               /* contents when size <= writev_max, else NULL */
};

/* Load every regular file under root (symlinks are skipped, so nothing outside
 * the root is ever reachable). Returns the number of files or -1 with errno.
 * Each file's descriptor stays open (struct file.fd); files past DOCROOT_MAX_FILES are
 * not served, and their number is written to stderr once loaded.  While loading it holds at most DOCROOT_MAX_FDS descriptors: those files, and
 * two for each directory level it is in (5 levels).  A server raises RLIMIT_NOFILE by
 * DOCROOT_MAX_FDS before loading, so that a root larger than the soft limit it was
 * started with (a shell's 1024, or less) still loads when the hard limit allows it. */
#define DOCROOT_MAX_FILES 2048
#define DOCROOT_MAX_FDS (DOCROOT_MAX_FILES + 16)
int docroot_load(const char *root);
const struct file *docroot_find(const char *relpath);

/* ---- replies ------------------------------------------------------------------ */
struct reply {
    int status;
    int keepalive;            /* connection stays open afterwards */
    int head_only;
    const struct file *f;     /* NULL for error replies */
    char hdr[256];
    size_t hdr_len;
    size_t sent;              /* bytes of header + body already sent */
    size_t consumed;          /* bytes of the request head answered (0 after a 400/501) */
    int corked;
};

/* Turn the request head at buf[0..len) into a reply.
 * Returns: > 0 COMPLETE: bytes consumed (the request head), *rp filled (a 200);
 *          HTTP_PARTIAL: need more bytes (rp untouched);
 *          0: an error reply (400/403/404/501) is in *rp.  400 and 501: keepalive = 0
 *             (consume nothing, close after sending).  403 and 404 answer a well-formed
 *             request: keepalive is the request's, and rp->consumed its head's length
 *             (what follows may be a pipelined request). */
int reply_prepare(struct reply *rp, const char *buf, size_t len, unsigned spin_us);

/* Send as much of *rp as the socket takes.
 * Returns: 1 COMPLETE (all sent, TCP_CORK released); 0 would block (call again when
 *          writable); -1 error (errno set; close the connection). */
int reply_send(int fd, struct reply *rp);
/* reply_send for a blocking socket with a send timeout (knot): returns 0 after each system
 * call that leaves bytes to send (a short write: the timeout or a signal ended it; or a
 * 64 KiB step of a big file), so that the caller can check its own deadline before the
 * next; reply_send would write on, each call with a whole timeout, for as long as the
 * client read a little now and then.
 * Returns: 1 COMPLETE (all sent); 0 more to send (check the deadline, call again);
 *          -1 error (errno set; close the connection). */
int reply_send_step(int fd, struct reply *rp);

/* Before a server-side close after a whole reply (an error, or Connection: close): FIN, then
 * discard queued input (bounded), so that the close sends no RST over the reply. */
void close_drain(int fd);

/* ---- process helpers ----------------------------------------------------------- */
extern volatile sig_atomic_t g_stop, g_reset, g_snap;
void install_signals(void);
/* Raise RLIMIT_NOFILE to want (the hard limit too, given CAP_SYS_RESOURCE; else the soft
 * limit up to the hard one).  Returns: the soft limit now in force, which may be below want. */
int raise_nofile(int want);

/* Descriptors this process holds open (the document root's files, the listener, stdio, ...).
 * Returns: their number, from /proc/self/fd; -1 if it cannot be read. */
int fds_open(void);
int make_listener(const char *addr, int port, int backlog, int nonblock);
void spin_for_us(unsigned us);
/* Calibrate the spin loop (iterations per microsecond of CPU); returns the rate. */
double spin_calibrate(void);

/* Open-connection samples: (seconds since start, open count). */
struct samples {
    double *t;
    int *n;
    size_t len, cap;
};
void samples_add(struct samples *s, double t, int n);
/* Frees the samples' arrays and empties s (it can be added to again). */
void samples_free(struct samples *s);

/* Write the statistics JSON (temp file + rename when path != NULL, else stdout).
 * extra: already formatted `"key": value, ` text inserted first (server identity). */
/* Sets aside one fd so that the statistics can be written even when the server is at its
 * fd cap; call once at start-up. */
void stats_reserve_fd(void);
int stats_write_json(const char *path, const char *extra, const struct stats *s,
                     double wall_s, const struct samples *sm);
/* SIGUSR2: a snapshot of the statistics goes to "<stats>.snap" and the server goes on. */
int stats_snapshot(const char *path, const char *extra, const struct stats *s, double wall_s,
                   const struct samples *sm);

#endif
