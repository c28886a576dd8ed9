/* ev_epoll.c - epoll(7) backend, level-triggered.
 *
 * Costs: epoll_wait is O(ready fds), independent of how many are watched; every
 * interest change is an epoll_ctl system call (ADD on accept, MOD read<->write per
 * request, none on close: closing the last reference removes the fd from the set, so
 * EV_CLOSING skips the DEL).  Caveat: a dup()ed fd would keep a closed fd registered;
 * the servers never dup sockets. */
#include "common.h"
#include "ev.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct ep {
    int epfd, maxfds, maxev;
    struct epoll_event *evs;
};

static void *ep_create(int maxfds)
{
    struct ep *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->maxfds = maxfds;
    /* Room for every fd: a getevents-phase returns all that are ready, as select's and poll's
     * do and as the model's does.  It was 4,096, and level-triggered epoll queues the fds it
     * returned behind the rest, so past 4,096 ready a phase could miss the listener (no
     * accept-phase that loop) and a work-phase served part of what select would have. */
    e->maxev = maxfds;
    e->evs = calloc((size_t)e->maxev, sizeof *e->evs);
    if (e->epfd < 0 || !e->evs) {
        if (e->epfd >= 0)
            close(e->epfd);
        free(e->evs), free(e);
        return NULL;
    }
    return e;
}

static int ep_set(void *st, int fd, int oldmask, int newmask)
{
    struct ep *e = st;
    if (fd < 0 || fd >= e->maxfds) {
        errno = EMFILE;
        return -1;
    }
    oldmask &= EV_READ | EV_WRITE;
    int nm = newmask & (EV_READ | EV_WRITE);
    if (!nm && (newmask & EV_CLOSING))
        return 0;
    struct epoll_event ev = { 0 };
    ev.events = ((nm & EV_READ) ? EPOLLIN : 0) | ((nm & EV_WRITE) ? EPOLLOUT : 0);
    ev.data.fd = fd;
    int op = !oldmask ? EPOLL_CTL_ADD : nm ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    if (!oldmask && !nm)
        return 0;
    return TIMED(SC_EPOLL_CTL, epoll_ctl(e->epfd, op, fd, &ev));
}

static int ep_wait(void *st, struct ev_fired *out, int maxout, int timeout_ms)
{
    struct ep *e = st;
    int want = maxout < e->maxev ? maxout : e->maxev;
    int n = TIMED(SC_EPOLL_WAIT, epoll_wait(e->epfd, e->evs, want, timeout_ms));
    if (n <= 0)
        return n;
    for (int i = 0; i < n; i++) {
        unsigned re = e->evs[i].events;
        int m = 0;
        if (re & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
            m |= EV_READ;
        if (re & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            m |= EV_WRITE;
        out[i].fd = e->evs[i].data.fd;
        out[i].mask = m;
    }
    return n;
}

static void ep_destroy(void *st)
{
    struct ep *e = st;
    close(e->epfd);
    free(e->evs), free(e);
}

const struct ev_backend ev_epoll_backend = { "epoll", ep_create, ep_set, ep_wait, ep_destroy };
