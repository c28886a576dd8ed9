/* ev_poll.c - poll(2) backend.
 *
 * Costs: the kernel copies and polls all n pollfds on every call and we scan all n
 * revents afterwards: O(n interested fds) per call, but no maxfd-sized bitmaps and no
 * FD_SETSIZE limit.  Interest changes are O(1) user-space edits (idx[] maps fd -> slot;
 * removal swaps the last slot in), no system call.  Caveat: a descriptor closed while
 * still in the set returns POLLNVAL at once on every call, which maps to no event, so the
 * loop would spin: the server takes an fd out (EV_CLOSING) before it closes it. */
#include "common.h"
#include "ev.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

struct pl {
    int maxfds, n;
    struct pollfd *pfd;
    int *idx;               /* fd -> slot+1, 0 = absent */
};

static void *pl_create(int maxfds)
{
    struct pl *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->maxfds = maxfds;
    p->pfd = calloc((size_t)maxfds, sizeof *p->pfd);
    p->idx = calloc((size_t)maxfds, sizeof *p->idx);
    if (!p->pfd || !p->idx) {
        free(p->pfd), free(p->idx), free(p);
        return NULL;
    }
    return p;
}

static int pl_set(void *st, int fd, int oldmask, int newmask)
{
    struct pl *p = st;
    (void)oldmask;
    if (fd < 0 || fd >= p->maxfds) {
        errno = EMFILE;
        return -1;
    }
    short ev = (short)(((newmask & EV_READ) ? POLLIN : 0) | ((newmask & EV_WRITE) ? POLLOUT : 0));
    int slot = p->idx[fd] - 1;
    if (ev) {
        if (slot < 0) {
            slot = p->n++;
            p->idx[fd] = slot + 1;
            p->pfd[slot].fd = fd;
        }
        p->pfd[slot].events = ev;
        p->pfd[slot].revents = 0;
    } else if (slot >= 0) {
        int last = --p->n;
        if (slot != last) {
            p->pfd[slot] = p->pfd[last];
            p->idx[p->pfd[slot].fd] = slot + 1;
        }
        p->idx[fd] = 0;
    }
    return 0;
}

static int pl_wait(void *st, struct ev_fired *out, int maxout, int timeout_ms)
{
    struct pl *p = st;
    int n = TIMED(SC_POLL, poll(p->pfd, (nfds_t)p->n, timeout_ms));
    if (n <= 0)
        return n;
    int k = 0;
    for (int i = 0; i < p->n && k < maxout; i++) {
        short re = p->pfd[i].revents;
        if (!re)
            continue;
        int m = 0;
        if (re & (POLLIN | POLLHUP | POLLERR))
            m |= (p->pfd[i].events & POLLIN) ? EV_READ : 0;
        if (re & (POLLOUT | POLLHUP | POLLERR))
            m |= (p->pfd[i].events & POLLOUT) ? EV_WRITE : 0;
        if (!m)
            continue;
        out[k].fd = p->pfd[i].fd;
        out[k++].mask = m;
    }
    return k;
}

static void pl_destroy(void *st)
{
    struct pl *p = st;
    free(p->pfd), free(p->idx), free(p);
}

const struct ev_backend ev_poll_backend = { "poll", pl_create, pl_set, pl_wait, pl_destroy };
