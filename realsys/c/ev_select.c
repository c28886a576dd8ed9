/* ev_select.c - select(2) backend.
 *
 * Costs: every call copies both interest bitmaps (O(maxfd/8) bytes), the kernel
 * walks all maxfd+1 bits and polls each set fd, and we walk all bits again to find the
 * ready ones: O(maxfd) per call however few fds are ready (seed 003's point).
 *
 * FD_SETSIZE: glibc's fd_set holds 1024 bits and FD_SET() on a larger fd is undefined
 * (fortified builds abort).  The kernel's select() accepts any nfds, so -- like the
 * thesis's μserver built with a large FD_SETSIZE -- we allocate bitmaps sized for
 * maxfds and manipulate the bits ourselves, never with FD_SET.  fds >= maxfds are
 * refused by set() (the caller closes the connection). */
#include "common.h"
#include "ev.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#define WBITS (sizeof(unsigned long) * CHAR_BIT)

struct sel {
    int maxfds, maxfd;       /* maxfd: highest fd with any interest, -1 if none */
    size_t nwords;
    unsigned long *rset, *wset, *rwork, *wwork;
};

static void *sel_create(int maxfds)
{
    struct sel *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->maxfds = maxfds;
    s->maxfd = -1;
    s->nwords = ((size_t)maxfds + WBITS - 1) / WBITS;
    if (s->nwords * WBITS < FD_SETSIZE) /* never hand the kernel less than one fd_set */
        s->nwords = FD_SETSIZE / WBITS;
    s->rset = calloc(s->nwords, sizeof(unsigned long));
    s->wset = calloc(s->nwords, sizeof(unsigned long));
    s->rwork = calloc(s->nwords, sizeof(unsigned long));
    s->wwork = calloc(s->nwords, sizeof(unsigned long));
    if (!s->rset || !s->wset || !s->rwork || !s->wwork) {
        free(s->rset), free(s->wset), free(s->rwork), free(s->wwork), free(s);
        return NULL;
    }
    return s;
}

/* Returns: nonzero if fd's bit is set in the mask m, else 0. */
static inline int bit_get(const unsigned long *m, int fd)
{
    return (m[(size_t)fd / WBITS] >> ((size_t)fd % WBITS)) & 1ul;
}

static inline void bit_put(unsigned long *m, int fd, int on)
{
    unsigned long b = 1ul << ((size_t)fd % WBITS);
    if (on)
        m[(size_t)fd / WBITS] |= b;
    else
        m[(size_t)fd / WBITS] &= ~b;
}

static int sel_set(void *st, int fd, int oldmask, int newmask)
{
    struct sel *s = st;
    (void)oldmask;
    if (fd < 0 || fd >= s->maxfds) {
        errno = EMFILE;
        return -1;
    }
    bit_put(s->rset, fd, newmask & EV_READ);
    bit_put(s->wset, fd, newmask & EV_WRITE);
    if ((newmask & (EV_READ | EV_WRITE)) && fd > s->maxfd)
        s->maxfd = fd;
    else if (!(newmask & (EV_READ | EV_WRITE)) && fd == s->maxfd)
        while (s->maxfd >= 0 && !bit_get(s->rset, s->maxfd) && !bit_get(s->wset, s->maxfd))
            s->maxfd--;
    return 0;
}

static int sel_wait(void *st, struct ev_fired *out, int maxout, int timeout_ms)
{
    struct sel *s = st;
    size_t nw = (size_t)(s->maxfd + 1 + (int)WBITS - 1) / WBITS;
    memcpy(s->rwork, s->rset, nw * sizeof(unsigned long));
    memcpy(s->wwork, s->wset, nw * sizeof(unsigned long));
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    int n = TIMED(SC_SELECT, select(s->maxfd + 1, (fd_set *)s->rwork, (fd_set *)s->wwork, NULL, &tv));
    if (n <= 0)
        return n;
    int k = 0;
    for (size_t w = 0; w < nw && k < maxout; w++) {
        unsigned long r = s->rwork[w], x = s->wwork[w];
        unsigned long any = r | x;
        while (any && k < maxout) {
            int b = __builtin_ctzl(any);
            unsigned long bit = 1ul << b;
            any &= ~bit;
            out[k].fd = (int)(w * WBITS) + b;
            out[k].mask = ((r & bit) ? EV_READ : 0) | ((x & bit) ? EV_WRITE : 0);
            k++;
        }
    }
    return k;
}

static void sel_destroy(void *st)
{
    struct sel *s = st;
    free(s->rset), free(s->wset), free(s->rwork), free(s->wwork), free(s);
}

const struct ev_backend ev_select_backend = { "select", sel_create, sel_set, sel_wait, sel_destroy };
