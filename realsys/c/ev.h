/* ev.h - the getevents interface of userver: one backend per file (ev_select.c,
 * ev_poll.c, ev_epoll.c) in the style of redis's ae_*.c, chosen at run time by --mux.
 *
 * All backends are level-triggered, like the μserver's: an fd whose interest is
 * EV_READ is reported on every call while it has unread data.  The interest mask of
 * an fd is changed with set(); the backend times its own system calls into ST. */
#ifndef REALSYS_EV_H
#define REALSYS_EV_H

#define EV_READ 1
#define EV_WRITE 2
#define EV_CLOSING 4   /* with new mask 0: the fd is about to be closed */

struct ev_fired {
    int fd;
    int mask;          /* EV_READ and/or EV_WRITE; errors and hang-ups are reported as the interest by
                        * select and poll, as EV_READ|EV_WRITE whatever it by epoll (callers look at
                        * the connection's state before acting on a mask) */
};

struct ev_backend {
    const char *name;
    /* Returns: backend state, or NULL with errno set. maxfds bounds every fd passed later. */
    void *(*create)(int maxfds);
    /* Change fd's interest from oldmask to newmask (0 = forget it).
     * Returns: 0 COMPLETE; -1 error (fd out of range for this backend, or the syscall failed). */
    int (*set)(void *st, int fd, int oldmask, int newmask);
    /* Wait up to timeout_ms for ready fds, writing at most maxout of them to out.
     * Returns: >= 0 COMPLETE: number of fired entries; -1 error (EINTR included). */
    int (*wait)(void *st, struct ev_fired *out, int maxout, int timeout_ms);
    void (*destroy)(void *st);
};

extern const struct ev_backend ev_select_backend, ev_poll_backend, ev_epoll_backend;

#endif
