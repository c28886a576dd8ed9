/* ev_test - drive one getevents backend from tests (tests/realsys/test_ev_backends.py).
 *   ev_test BACKEND N [ROUNDS]  -> JSON on one line: the backend's name, N, and for each of
 *                                  ROUNDS (default 2) back-to-back wait() calls how many fds it
 *                                  returned, how many distinct, and whether the last one
 *                                  registered (the "listener") was among them
 *
 * N socketpairs each get one unread byte on the end whose EV_READ interest is registered,
 * so all N are ready before the first wait() and stay ready (level-triggered).  A fd
 * registered last stands in for the listener: the phase loop must see it in every call
 * (userver's accept-phase runs only when it is returned).  wait() is given room for all
 * N + 1, as userver gives it (maxfds).
 *
 * Exit status: 0 when the run completed (the verdict is in the JSON), 2 on a bad argument
 * or when the fds cannot be had (RLIMIT_NOFILE is raised to its hard limit first). */
#include "common.h"
#include "ev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const struct ev_backend *b = strcmp(argv[1], "select") == 0 ? &ev_select_backend
                               : strcmp(argv[1], "poll") == 0   ? &ev_poll_backend
                               : strcmp(argv[1], "epoll") == 0  ? &ev_epoll_backend : NULL;
    int n = atoi(argv[2]), rounds = argc > 3 ? atoi(argv[3]) : 2;
    if (!b || n < 0 || rounds < 1) {
        fprintf(stderr, "ev_test: usage: ev_test select|poll|epoll N [ROUNDS]\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    static struct stats st;
    ST = &st;
    int maxfds = 2 * n + 64;
    void *ev = b->create(maxfds);
    int *fds = calloc((size_t)n + 1, sizeof *fds);
    struct ev_fired *fired = calloc((size_t)maxfds, sizeof *fired);
    unsigned char *seen = calloc((size_t)maxfds, 1);
    if (!ev || !fds || !fired || !seen) {
        perror("ev_test: create");
        return 2;
    }
    for (int i = 0; i <= n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
            fprintf(stderr, "ev_test: socketpair %d of %d: %s\n", i + 1, n + 1, strerror(errno));
            return 2;
        }
        if (write(sv[1], "x", 1) != 1 || b->set(ev, sv[0], 0, EV_READ) < 0) {
            fprintf(stderr, "ev_test: fd %d: %s\n", sv[0], strerror(errno));
            return 2;
        }
        fds[i] = sv[0];
    }
    int listener = fds[n];
    printf("{\"backend\": \"%s\", \"ready\": %d, \"rounds\": [", b->name, n + 1);
    for (int r = 0; r < rounds; r++) {
        int got = b->wait(ev, fired, maxfds, 1000);
        if (got < 0) {
            perror("ev_test: wait");
            return 2;
        }
        int distinct = 0, has_listener = 0, not_read = 0;
        memset(seen, 0, (size_t)maxfds);
        for (int i = 0; i < got; i++) {
            int fd = fired[i].fd;
            if (fd < 0 || fd >= maxfds)
                continue;
            distinct += !seen[fd];
            seen[fd] = 1;
            has_listener |= fd == listener;
            not_read += !(fired[i].mask & EV_READ);
        }
        printf("%s{\"fired\": %d, \"distinct\": %d, \"listener\": %s, \"without_read\": %d}",
               r ? ", " : "", got, distinct, has_listener ? "true" : "false", not_read);
    }
    printf("]}\n");
    b->destroy(ev);
    free(fds), free(fired), free(seen);
    return 0;
}
