/* switchcost - what one block-and-wake of a pthread costs on this machine, for the threaded
 * server's model (simaccept/servers/knot.py, cost thread_switch).
 *
 * The model charges a thread_switch each time a thread that blocked in a call runs again.
 * Capriccio's thread_switch (6 us in the thesis-era profile) is a user-level switch plus its
 * bookkeeping and the retried call; realsys/c/knot.c's threads are pthreads blocking in the
 * kernel, so the same event there is: the blocking call's path into schedule(), the waker's
 * try_to_wake_up, the context switch, and the call's return.  This measures exactly that:
 *
 *   ping-pong   two threads on ONE CPU bounce a byte over an AF_UNIX socketpair with blocking
 *               read/write; a round trip is 2 writes + 2 reads + 2 block-and-wakes;
 *   calls       one thread, the same socketpair: write a byte, read it back (data already
 *               there, nothing blocks): a write + a read;
 *   switch      (round trip - 2 x calls) / 2.
 *
 * One CPU, so wall time is the CPU time of the two threads (nothing else should run on that
 * CPU: the machine is shared, so each of --rounds rounds is timed and the median taken).
 * AF_UNIX rather than loopback TCP: a TCP write runs the receive path inline, which the model
 * charges apart as kernel packet work (k_data_rx ...).
 *
 * Output: one JSON object on stdout (switch_us, round_trip_us, calls_us, per round, the CPU).
 * Returns 0; 2 on a bad option; 1 when a system call fails (the message names it). */
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long iters = 100000, rounds = 9;
static int sv[2];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "switchcost: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Returns only after exactly one byte has moved; exits on an error or EOF. */
static void put(int fd)
{
    char c = 'x';
    ssize_t n;
    while ((n = write(fd, &c, 1)) < 0 && errno == EINTR)
        ;
    if (n != 1)
        die("write");
}

static void get(int fd)
{
    char c;
    ssize_t n;
    while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
        ;
    if (n != 1) {
        if (n == 0)
            errno = EPIPE;
        die("read");
    }
}

static void *echo(void *arg)
{
    long n = *(long *)arg;
    for (long i = 0; i < n; i++) {
        get(sv[1]);
        put(sv[1]);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Microseconds per round trip of one round: iters bounces with a fresh echo thread. */
static double round_trip(void)
{
    pthread_t t;
    long n = iters;
    int e = pthread_create(&t, NULL, echo, &n);
    if (e) {
        errno = e;
        die("pthread_create");
    }
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        put(sv[0]);
        get(sv[0]);
    }
    uint64_t t1 = now_ns();
    pthread_join(t, NULL);
    return (double)(t1 - t0) / 1e3 / (double)n;
}

/* Microseconds per write + read of one round, one thread, nothing blocking. */
static double calls(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        put(sv[0]);
        get(sv[1]);
    }
    return (double)(now_ns() - t0) / 1e3 / (double)iters;
}

int main(int argc, char **argv)
{
    int cpu = -1;
    static const struct option lo[] = {
        {"iterations", 1, 0, 'n'}, {"rounds", 1, 0, 'r'}, {"cpu", 1, 0, 'c'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'n': iters = opt_long("switchcost", "iterations", optarg, 1000, 100000000); break;
        case 'r': rounds = opt_long("switchcost", "rounds", optarg, 1, 1000); break;
        case 'c': cpu = (int)opt_long("switchcost", "cpu", optarg, 0, CPU_SETSIZE - 1); break;
        default:
            fprintf(o == 'h' ? stdout : stderr,
                    "usage: switchcost [--iterations N] [--rounds R] [--cpu C]\n"
                    "  one pthread block-and-wake on one CPU (default: the last CPU this process may use),\n"
                    "  the median of R rounds of N round trips; JSON on stdout\n");
            return o == 'h' ? 0 : 2;
        }
    }
    if (optind < argc)
        opt_stray("switchcost", argv[optind]);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        die("sched_getaffinity");
    if (cpu < 0) {
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
    } else if (!CPU_ISSET(cpu, &set)) {
        fprintf(stderr, "switchcost: --cpu %d: not a CPU this process may run on\n", cpu);
        return 2;
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* Threads created after this inherit the mask: both ends of the ping-pong share the CPU. */
    if (sched_setaffinity(0, sizeof set, &set))
        die("sched_setaffinity");
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        die("socketpair");

    double *rt = calloc((size_t)rounds, sizeof *rt), *cl = calloc((size_t)rounds, sizeof *cl);
    double *sw = calloc((size_t)rounds, sizeof *sw);
    if (!rt || !cl || !sw) {
        errno = ENOMEM;
        die("calloc");
    }
    calls(); /* warm the path and the caches once, unmeasured */
    for (long r = 0; r < rounds; r++) {
        cl[r] = calls();
        rt[r] = round_trip();
        sw[r] = (rt[r] - 2 * cl[r]) / 2;
    }
    printf("{\"tool\": \"switchcost\", \"cpu\": %d, \"iterations\": %ld, \"rounds\": %ld, \"per_round\": [", cpu,
           iters, rounds);
    for (long r = 0; r < rounds; r++)
        printf("%s{\"round_trip_us\": %.4f, \"calls_us\": %.4f, \"switch_us\": %.4f}", r ? ", " : "", rt[r],
               cl[r], sw[r]);
    /* medians of each column on its own: sorting reorders the arrays, so after printing them */
    double m_rt = median(rt, rounds), m_cl = median(cl, rounds), m_sw = median(sw, rounds);
    printf("], \"round_trip_us\": %.4f, \"calls_us\": %.4f, \"switch_us\": %.4f}\n", m_rt, m_cl, m_sw);
    free(rt);
    free(cl);
    free(sw);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
