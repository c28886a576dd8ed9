/* common.c - shared server code, see common.h. */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

const char *const sc_names[SC_N] = {
    "select", "poll", "epoll_wait", "accept", "read", "write", "writev",
    "sendfile", "close", "setsockopt", "epoll_ctl",
};

__thread struct stats *ST;
volatile sig_atomic_t g_stop, g_reset, g_snap;

void stats_add(struct stats *into, const struct stats *s)
{
    const uint64_t *a = (const uint64_t *)s;
    uint64_t *b = (uint64_t *)into;
    for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++)
        b[i] += a[i];
}

void stats_sub(struct stats *from, const struct stats *s)
{
    const uint64_t *a = (const uint64_t *)s;
    uint64_t *b = (uint64_t *)from;
    for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++)
        b[i] -= a[i];
}

/* ---- document root -------------------------------------------------------------- */
static struct file *files;
static size_t nfiles, capfiles;
static size_t nskipped; /* regular files past DOCROOT_MAX_FILES: not loaded, so 404 */
#define HBITS 12
_Static_assert(DOCROOT_MAX_FILES <= (1 << HBITS) / 2, "the hash table keeps half its slots free");
static int htab[1 << HBITS]; /* open addressing: index+1 into files, 0 = empty */

/* Returns: the FNV-1a hash of the NUL-terminated s (the docroot table's slot, masked). */
static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

size_t writev_max = SMALL_FILE_MAX;

/* Enter the regular file name (rel from the root) into the cache: opened, and read into
 * memory when it is at most writev_max bytes.
 * Returns: 0 entered, or left out past DOCROOT_MAX_FILES (counted in nskipped); -1 with
 *          errno set when it cannot be opened, read or stored (nothing half-entered). */
static int add_file(int dirfd, const char *name, const char *rel, const struct stat *st)
{
    if (nfiles >= DOCROOT_MAX_FILES) {
        nskipped++; /* file set larger than the cache: the rest is not served (docroot_load says so) */
        return 0;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* out of memory at start-up: the old block kept, nothing half-entered (a NULL path
     * reached strcmp in docroot_find), the descriptor not leaked */
    if (nfiles == capfiles) {
        size_t cap = capfiles ? capfiles * 2 : 64;
        struct file *grown = realloc(files, cap * sizeof *files);
        if (!grown) {
            close(fd);
            return -1;
        }
        files = grown;
        capfiles = cap;
    }
    struct file *f = &files[nfiles];
    f->path = strdup(rel);
    f->fd = fd;
    f->size = st->st_size;
    f->data = NULL;
    if (!f->path) {
        close(fd);
        return -1;
    }
    if ((size_t)st->st_size <= writev_max) {
        f->data = malloc((size_t)st->st_size + 1);
        if (!f->data || pread(fd, f->data, (size_t)st->st_size, 0) != st->st_size) {
            free(f->data);
            free(f->path);
            close(fd);
            return -1;
        }
    }
    unsigned h = hash_str(rel) & ((1u << HBITS) - 1);
    while (htab[h])
        h = (h + 1) & ((1u << HBITS) - 1);
    htab[h] = (int)nfiles + 1;
    nfiles++;
    return 0;
}

/* Enter every regular file under dirfd (names prefixed by prefix), four directories deep;
 * hidden names, symlinks, devices and names past HTTP_MAX_PATH are not served.
 * Returns: 0; -1 with errno set at the first file or directory it cannot read (one
 *          unreadable file failed the load while an unreadable directory was skipped with
 *          no word and its files answered 404: both fail it now). */
static int scan_dir(int dirfd, const char *prefix, int depth)
{
    int dfd = dup(dirfd);
    if (dfd < 0)
        return -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", hidden files */
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = -1;
            break;
        }
        char rel[HTTP_MAX_PATH];
        if ((size_t)snprintf(rel, sizeof rel, "%s%s", prefix, e->d_name) >= sizeof rel)
            continue;
        if (S_ISREG(st.st_mode)) {
            if (add_file(dirfd, e->d_name, rel, &st) < 0) {
                rc = -1;
                break;
            }
        } else if (S_ISDIR(st.st_mode) && depth < 4) {
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = -1;
                break;
            }
            char pre[HTTP_MAX_PATH + 2];
            snprintf(pre, sizeof pre, "%s/", rel);
            rc = scan_dir(sub, pre, depth + 1);
            int err = errno;
            close(sub);
            if (rc < 0) { /* named where it failed */
                closedir(d);
                errno = err;
                return rc;
            }
        } /* symlinks, devices, sockets: never served */
    }
    if (rc < 0 && e) { /* name what failed: "docroot: Permission denied" named nothing */
        int err = errno;
        fprintf(stderr, "docroot: cannot read %s%s: %s\n", prefix, e->d_name, strerror(err));
        closedir(d);
        errno = err;
        return rc;
    }
    closedir(d);
    return rc;
}

int docroot_load(const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = scan_dir(fd, "", 0);
    close(fd);
    if (rc == 0 && nskipped)
        /* which ones depends on readdir's order; a silent cut had answered them 404 unexplained */
        fprintf(stderr, "docroot: %s holds %zu regular files, more than the %d loaded: %zu not "
                "served (404)\n", root, nfiles + nskipped, DOCROOT_MAX_FILES, nskipped);
    return rc < 0 ? -1 : (int)nfiles;
}

/* Returns: the loaded file at rel (a path from the root, no leading '/'), or NULL if none. */
const struct file *docroot_find(const char *rel)
{
    unsigned h = hash_str(rel) & ((1u << HBITS) - 1);
    while (htab[h]) {
        const struct file *f = &files[htab[h] - 1];
        if (strcmp(f->path, rel) == 0)
            return f;
        h = (h + 1) & ((1u << HBITS) - 1);
    }
    return NULL;
}

/* ---- replies ------------------------------------------------------------------------ */
/* A reply without a body.  keepalive 0 (400, 501) closes after it; a 403 or 404 answers a
 * well-formed request, so the connection goes on as that request asked (minor and
 * keepalive from it): closing there lost the requests pipelined after a 404. */
static void error_reply(struct reply *rp, int status, int minor, int keepalive)
{
    rp->status = status;
    rp->keepalive = keepalive;
    rp->head_only = 0;
    rp->f = NULL;
    rp->sent = 0;
    rp->corked = 0;
    rp->consumed = 0;
    rp->hdr_len = (size_t)snprintf(rp->hdr, sizeof rp->hdr,
                                   "HTTP/1.%d %d %s\r\nServer: realsys\r\nContent-Length: 0\r\n"
                                   "Connection: %s\r\n\r\n", minor, status, http_reason(status),
                                   keepalive ? "keep-alive" : "close");
}

/* --spin-us is a fixed amount of CPU *work* per request, not a wall-clock wait: a
 * clock-based busy wait would absorb the softirq work that interrupts it and so hide
 * kernel cost.  The loop is calibrated once at start-up against the thread CPU clock. */
static double iters_per_us = 0;
static volatile uint64_t spin_sink;

static void spin_iters(uint64_t n)
{
    uint64_t x = spin_sink | 1;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    spin_sink = x;
}

/* Returns: the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double spin_calibrate(void)
{
    double best = 0;
    for (int r = 0; r < 5; r++) {
        uint64_t n = 2000000, t0 = thread_cpu_ns();
        spin_iters(n);
        uint64_t dt = thread_cpu_ns() - t0;
        if (dt > 0 && (double)n * 1000.0 / (double)dt > best)
            best = (double)n * 1000.0 / (double)dt;
    }
    iters_per_us = best > 0 ? best : 1000.0;
    return iters_per_us;
}

void spin_for_us(unsigned us)
{
    if (!us)
        return;
    if (iters_per_us <= 0)
        spin_calibrate();
    uint64_t t0 = now_ns();
    spin_iters((uint64_t)(us * iters_per_us));
    ST->spin_ns += now_ns() - t0;
}

int reply_prepare(struct reply *rp, const char *buf, size_t len, unsigned spin_us)
{
    struct http_req req;
    int r = http_parse_request(buf, len, &req);
    if (r == HTTP_PARTIAL)
        return HTTP_PARTIAL;
    ST->requests++;
    if (r < 0) {
        error_reply(rp, 400, 1, 0);
        return 0;
    }
    spin_for_us(spin_us);
    if (req.method == HTTP_OTHER) {
        error_reply(rp, 501, 1, 0);
        return 0;
    }
    char path[HTTP_MAX_PATH + 16];
    int pr = http_target_to_path(req.target, req.target_len, path, sizeof path);
    if (pr == HTTP_FORBIDDEN) {
        error_reply(rp, 403, req.minor, req.keepalive);
        rp->consumed = (size_t)r;
        return 0;
    }
    if (pr < 0) {
        error_reply(rp, 400, 1, 0);
        return 0;
    }
    const struct file *f = docroot_find(path);
    if (!f) {
        error_reply(rp, 404, req.minor, req.keepalive);
        rp->consumed = (size_t)r;
        return 0;
    }
    rp->status = 200;
    rp->consumed = (size_t)r;
    rp->keepalive = req.keepalive;
    rp->head_only = req.method == HTTP_HEAD;
    rp->f = f;
    rp->sent = 0;
    rp->corked = 0;
    rp->hdr_len = (size_t)snprintf(rp->hdr, sizeof rp->hdr,
                                   "HTTP/1.%d 200 OK\r\nServer: realsys\r\nContent-Type: text/html\r\n"
                                   "Content-Length: %lld\r\nConnection: %s\r\n\r\n",
                                   req.minor, (long long)f->size, req.keepalive ? "keep-alive" : "close");
    return r;
}

/* Returns: setsockopt's: 0, or -1 with errno set (the send path goes on uncorked). */
static int set_cork(int fd, int on)
{
    return TIMED(SC_SETSOCKOPT, setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on));
}

/* step: return 0 after each call that leaves bytes to send (see reply_send_step). */
static int reply_send_(int fd, struct reply *rp, int step)
{
    size_t body = (rp->f && !rp->head_only) ? (size_t)rp->f->size : 0;
    size_t total = rp->hdr_len + body;
    if (!rp->f || rp->head_only || rp->f->data) {
        /* One packet: header and (cached) body in one writev. */
        while (rp->sent < total) {
            struct iovec iov[2];
            int n = 0;
            if (rp->sent < rp->hdr_len) {
                iov[n].iov_base = rp->hdr + rp->sent;
                iov[n++].iov_len = rp->hdr_len - rp->sent;
                if (body) {
                    iov[n].iov_base = rp->f->data;
                    iov[n++].iov_len = body;
                }
            } else {
                iov[n].iov_base = rp->f->data + (rp->sent - rp->hdr_len);
                iov[n++].iov_len = total - rp->sent;
            }
            ssize_t w = TIMED(SC_WRITEV, writev(fd, iov, n));
            if (w < 0)
                return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
            rp->sent += (size_t)w;
            ST->bytes_sent += (uint64_t)w;
            if (step && rp->sent < total)
                return 0;
        }
    } else {
        /* Big file: cork, header with write, body with sendfile, uncork (one partial
         * segment at the end instead of one after the header). */
        if (!rp->corked) {
            if (set_cork(fd, 1) < 0)
                return -1;
            rp->corked = 1;
        }
        while (rp->sent < rp->hdr_len) {
            ssize_t w = TIMED(SC_WRITE, write(fd, rp->hdr + rp->sent, rp->hdr_len - rp->sent));
            if (w < 0)
                return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
            rp->sent += (size_t)w;
            ST->bytes_sent += (uint64_t)w;
            if (step && rp->sent < rp->hdr_len)
                return 0;
        }
        while (rp->sent < total) {
            off_t off = (off_t)(rp->sent - rp->hdr_len);
            size_t want = total - rp->sent;
            /* step: at most the 64 KiB of sendfile's internal pipe per call.  A larger count
             * is sent as a loop of 64 KiB sends inside the one call, each with a whole send
             * timeout, so a client reading a chunk per timeout held a blocking call (and
             * knot's thread) for the whole file.  Costs knot one sendfile per 64 KiB of a big
             * file (a 900 KB class-3 file: 15 calls, not 1). */
            if (step && want > 65536)
                want = 65536;
            ssize_t w = TIMED(SC_SENDFILE, sendfile(fd, rp->f->fd, &off, want));
            if (w < 0)
                return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
            if (w == 0)
                return -1; /* file shrank */
            rp->sent += (size_t)w;
            ST->bytes_sent += (uint64_t)w;
            if (step && rp->sent < total)
                return 0;
        }
        set_cork(fd, 0);
        rp->corked = 0;
    }
    ST->replies++;
    if (rp->status < 300)
        ST->status_2xx++;
    else if (rp->status < 500)
        ST->status_4xx++;
    else
        ST->status_5xx++;
    return 1;
}

int reply_send(int fd, struct reply *rp)
{
    return reply_send_(fd, rp, 0);
}

int reply_send_step(int fd, struct reply *rp)
{
    return reply_send_(fd, rp, 1);
}

/* ---- process helpers -------------------------------------------------------------- */
static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_reset(int sig)
{
    (void)sig;
    g_reset = 1;
}

static void on_snap(int sig)
{
    (void)sig;
    g_snap = 1;
}

void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_reset;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_snap;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

int raise_nofile(int want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    if (rl.rlim_cur >= (rlim_t)want)
        return (int)rl.rlim_cur;
    rl.rlim_cur = (rlim_t)want;
    if (rl.rlim_max < (rlim_t)want)
        rl.rlim_max = (rlim_t)want;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        /* the hard limit could not be raised (no CAP_SYS_RESOURCE): take all of it, at least */
        getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        return rl.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (int)rl.rlim_cur;
    }
    return want;
}

int fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* less the one opendir held */
}

/* Returns: a listening TCP socket on addr:port (TCP_NODELAY, inherited by accepted sockets),
 *          or -1 with errno set (a bad address is EINVAL). */
int make_listener(const char *addr, int port, int backlog, int nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* TCP_NODELAY on the listener is inherited by every accepted socket (tcp_create_openreq_child
     * copies nonagle), which saves one setsockopt per connection. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, backlog) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

void samples_add(struct samples *s, double t, int n)
{
    if (s->len == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        double *nt = realloc(s->t, nc * sizeof *nt);
        if (!nt)
            return;
        s->t = nt;
        int *nn = realloc(s->n, nc * sizeof *nn);
        if (!nn)
            return;
        s->n = nn;
        s->cap = nc;
    }
    s->t[s->len] = t;
    s->n[s->len++] = n;
}

void samples_free(struct samples *s)
{
    free(s->t);
    free(s->n);
    memset(s, 0, sizeof *s);
}

/* Returns: a / b, or 0.0 when b is 0 (a statistic of nothing counted). */
static double per(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* One fd held from start-up for the statistics file: a server stopped while at its fd cap
 * (knot at accept-limit inf, every slot an accepted connection) could not open it, and the
 * run's statistics were lost (exit 1, no JSON). */
static int stats_spare_fd = -1;

void stats_reserve_fd(void)
{
    if (stats_spare_fd < 0)
        stats_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Returns the stream for path, giving up the spare fd if out of fds; NULL on failure. */
static FILE *stats_open(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f && (errno == EMFILE || errno == ENFILE) && stats_spare_fd >= 0) {
        /* another thread's accept() may take the slot first: then this fails as before */
        close(stats_spare_fd);
        stats_spare_fd = -1;
        f = fopen(path, "w");
    }
    return f;
}

int stats_write_json(const char *path, const char *extra, const struct stats *s,
                     double wall_s, const struct samples *sm)
{
    char tmp[4096];
    FILE *out = stdout;
    if (path) {
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        out = stats_open(tmp);
        if (!out)
            return -1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(out, "{%s\"wall_s\": %.6f,\n", extra ? extra : "", wall_s);
    fprintf(out, " \"accept_phases\": %llu, \"accepts\": %llu, \"accepts_eagain\": %llu, "
                 "\"accept_errors\": %llu, \"c_avg\": %.4f,\n",
            (unsigned long long)s->accept_phases, (unsigned long long)s->accepts,
            (unsigned long long)s->accepts_eagain, (unsigned long long)s->accept_errors,
            per(s->accepts, s->accept_phases));
    fprintf(out, " \"getevents_calls\": %llu, \"fds_returned\": %llu, \"fds_per_getevents\": %.4f,\n",
            (unsigned long long)s->getevents_calls, (unsigned long long)s->fds_returned,
            per(s->fds_returned, s->getevents_calls));
    fprintf(out, " \"work_phases\": %llu, \"work_items\": %llu, \"work_items_per_phase\": %.4f,\n",
            (unsigned long long)s->work_phases, (unsigned long long)s->work_items,
            per(s->work_items, s->work_phases));
    fprintf(out, " \"requests\": %llu, \"replies\": %llu, \"status_2xx\": %llu, \"status_4xx\": %llu, "
                 "\"status_5xx\": %llu, \"bytes_sent\": %llu,\n",
            (unsigned long long)s->requests, (unsigned long long)s->replies,
            (unsigned long long)s->status_2xx, (unsigned long long)s->status_4xx,
            (unsigned long long)s->status_5xx, (unsigned long long)s->bytes_sent);
    fprintf(out, " \"conns_closed\": %llu, \"conns_reset\": %llu, \"conns_refused_fd\": %llu, "
                 "\"conns_idle_closed\": %llu, \"spin_s\": %.6f, \"writev_max\": %zu,\n",
            (unsigned long long)s->conns_closed, (unsigned long long)s->conns_reset,
            (unsigned long long)s->conns_refused_fd, (unsigned long long)s->conns_idle_closed,
            (double)s->spin_ns / 1e9, writev_max);
    fprintf(out, " \"rusage\": {\"utime_s\": %.6f, \"stime_s\": %.6f, \"nvcsw\": %ld, \"nivcsw\": %ld},\n",
            (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw, ru.ru_nivcsw);
    fprintf(out, " \"syscalls\": {");
    for (int i = 0; i < SC_N; i++)
        fprintf(out, "%s\"%s\": {\"calls\": %llu, \"s\": %.6f}", i ? ", " : "", sc_names[i],
                (unsigned long long)s->sc_calls[i], (double)s->sc_ns[i] / 1e9);
    fprintf(out, "},\n");
    double sum = 0;
    int mx = 0;
    for (size_t i = 0; i < sm->len; i++) {
        sum += sm->n[i];
        if (sm->n[i] > mx)
            mx = sm->n[i];
    }
    fprintf(out, " \"open_conns\": {\"mean\": %.3f, \"max\": %d, \"samples\": [",
            sm->len ? sum / (double)sm->len : 0.0, mx);
    size_t step = sm->len > 600 ? (sm->len + 599) / 600 : 1;
    for (size_t i = 0, k = 0; i < sm->len; i += step, k++)
        fprintf(out, "%s[%.3f, %d]", k ? ", " : "", sm->t[i], sm->n[i]);
    fprintf(out, "]}}\n");
    /* A write that failed (a full disk, a file-size limit) leaves the stream's error flag set
     * though the final flush in fclose may succeed: a cut-off file must not be renamed into
     * place, nor a cut-off stdout end with status 0.  errno is the failed write's. */
    if (path) {
        int bad = ferror(out);
        int saved = errno;
        if (fclose(out) != 0 || bad) {
            if (bad)
                errno = saved ? saved : EIO;
            saved = errno;
            unlink(tmp);
            errno = saved;
            return -1;
        }
        if (rename(tmp, path) < 0)
            return -1;
        stats_reserve_fd();         /* for the next snapshot, if it was given up */
    } else if (fflush(out) != 0 || ferror(out)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

int stats_snapshot(const char *path, const char *extra, const struct stats *s, double wall_s,
                   const struct samples *sm)
{
    char p[4096];
    if (!path)
        return stats_write_json(NULL, extra, s, wall_s, sm);
    snprintf(p, sizeof p, "%s.snap", path);
    return stats_write_json(p, extra, s, wall_s, sm);
}

void close_drain(int fd)
{
    /* Closing with unread input makes the kernel send RST, which can destroy the reply still
     * in flight to the client: an error's, or a 200's to a client that asked for the close
     * and sent more (a review measured a 16 MB reply cut at 12-13 MB, counted as sent whole).  Send FIN first,
     * then discard what is already queued (bounded), like nginx's lingering close without
     * the wait: input that arrives after this still resets the connection.  Costs a
     * shutdown (not timed) and one recv per server-side close, up to 8 while input keeps
     * coming (each counted as a read); in the measured runs the clients (HTTP/1.1, no
     * "Connection: close") close first, so only error replies come here. */
    char junk[16384];
    shutdown(fd, SHUT_WR);
    for (int i = 0; i < 8; i++) {
        ssize_t n = TIMED(SC_READ, recv(fd, junk, sizeof junk, MSG_DONTWAIT));
        if (n <= 0)
            break;
    }
}
