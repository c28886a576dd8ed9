/* Command-line values, checked and refused by name.
 *
 * atoi()/atof() turn "abc" into 0 and "10x" into 10, so a typo on the command line
 * used to become a silent value (port 0, spin 0 us, rate 0) or a bare usage text that
 * did not say which option was wrong.  These parse the whole argument or exit(2) with
 * "PROG: --OPTION: expected ..., got 'ARG'".  Header-only so that loadgen, which links
 * nothing of the servers, shares it.
 */
#ifndef SIMACCEPT_OPT_H
#define SIMACCEPT_OPT_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Prints "prog: --opt: WHAT, got 'arg'" and exits with status 2 (bad input). */
static inline void opt_refuse(const char *prog, const char *opt, const char *what, const char *arg)
{
    fprintf(stderr, "%s: --%s: %s, got '%s'\n", prog, opt, what, arg);
    exit(2);
}

/* Prints "prog: unexpected argument 'arg' ..." and exits with status 2: every option
 * is --name value, so a bare word is a mistake (a missing --, a value without a name). */
static inline void opt_stray(const char *prog, const char *arg)
{
    fprintf(stderr, "%s: unexpected argument '%s' (every option is --name value)\n", prog, arg);
    exit(2);
}

/* strtol and strtod skip leading blanks and take a '+' (strtod also "0x" hex), so " +7"
 * was read as 7: an argument must start as a number we print would. */
static inline int opt_starts_number(const char *arg)
{
    return isdigit((unsigned char)arg[0]) || arg[0] == '-' || arg[0] == '.';
}

/* Returns arg as a decimal integer in [lo, hi]; anything else (empty, leading blanks or '+',
 * trailing text, out of range, overflow) exits via opt_refuse. */
static inline long opt_long(const char *prog, const char *opt, const char *arg, long lo, long hi)
{
    char *end = NULL, what[96];
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!opt_starts_number(arg) || end == arg || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        snprintf(what, sizeof what, "expected an integer from %ld to %ld", lo, hi);
        opt_refuse(prog, opt, what, arg);
    }
    return v;
}

/* Returns arg as a finite decimal number in [lo, hi], or in (lo, hi] when lo_open; anything
 * else (empty, leading blanks or '+', hex, trailing text, nan, inf, out of range) exits via
 * opt_refuse. */
static inline double opt_double(const char *prog, const char *opt, const char *arg, double lo, double hi,
                                int lo_open)
{
    char *end = NULL, what[96];
    errno = 0;
    double v = strtod(arg, &end);
    if (!opt_starts_number(arg) || strpbrk(arg, "xX") != NULL || end == arg || *end != '\0' || errno == ERANGE || !isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) ||
        v > hi) {
        snprintf(what, sizeof what, "expected a number %s %g and <= %g", lo_open ? ">" : ">=", lo, hi);
        opt_refuse(prog, opt, what, arg);
    }
    return v;
}

/* Returns the index of arg in the NULL-terminated choices; anything else exits via
 * opt_refuse, listing the choices. */
static inline int opt_choice(const char *prog, const char *opt, const char *arg, const char *const *choices)
{
    char what[160] = "expected one of:";
    for (int i = 0; choices[i]; i++) {
        if (strcmp(arg, choices[i]) == 0)
            return i;
        size_t n = strlen(what);
        snprintf(what + n, sizeof what - n, " %s", choices[i]);
    }
    opt_refuse(prog, opt, what, arg);
    return -1;
}

/* Returns arg when it is an IPv4 dotted quad (inet_pton, what bind and connect are given);
 * anything else (a host name, IPv6, "") exits via opt_refuse.  Names are not resolved: a
 * lookup could block or pick another family, and a server used to accept "localhost" here
 * only to fail later with "listen: Invalid argument", not naming the option. */
static inline const char *opt_ipv4(const char *prog, const char *opt, const char *arg, struct in_addr *out)
{
    struct in_addr a;
    if (inet_pton(AF_INET, arg, &a) != 1)
        opt_refuse(prog, opt, "expected an IPv4 address (dotted quad)", arg);
    if (out)
        *out = a;
    return arg;
}

/* An output file (--stats, --out) is written at the end as "PATH.tmp" and renamed to PATH;
 * a server's SIGUSR2 snapshot as "PATH.snap.tmp" renamed to "PATH.snap".  Those names are
 * built in 4096-byte buffers, so the longest path accepted leaves room for the suffix. */
#define OPT_OUT_SUFFIX ".snap.tmp"
#define OPT_OUT_MAX (4096 - sizeof OPT_OUT_SUFFIX)

/* Returns arg when a file can be created and renamed into place at that path: not empty,
 * not too long, not a directory, in a directory that exists and this process can write
 * (probed by creating a file there).  Anything else exits via opt_refuse.  Checked at
 * start-up because the file is written only when the run ends: a bad path used to be
 * found then, losing the whole run's statistics.  Leaves nothing behind. */
static inline const char *opt_outpath(const char *prog, const char *opt, const char *arg)
{
    const char *slash = strrchr(arg, '/'), *base = slash ? slash + 1 : arg;
    char dir[4096], what[4096 + 128];
    struct stat st;
    if (strlen(arg) > OPT_OUT_MAX) {
        snprintf(what, sizeof what, "expected a path of at most %zu characters", OPT_OUT_MAX);
        opt_refuse(prog, opt, what, arg);
    }
    if (!*arg)
        opt_refuse(prog, opt, "expected a file path", arg);
    /* "d/" and an existing directory: the final rename onto a directory would fail (lstat:
     * rename replaces a symlink, whatever it points to) */
    if (!*base || (lstat(arg, &st) == 0 && S_ISDIR(st.st_mode)))
        opt_refuse(prog, opt, "expected a file path, not a directory", arg);
    if (strlen(base) + strlen(OPT_OUT_SUFFIX) > NAME_MAX) {
        snprintf(what, sizeof what, "expected a file name of at most %zu characters",
                 NAME_MAX - strlen(OPT_OUT_SUFFIX));
        opt_refuse(prog, opt, what, arg);
    }
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == arg)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - arg), arg);
    /* O_TMPFILE: an unnamed file, so nothing is left even if killed here.  Filesystems
     * without it (EOPNOTSUPP; EISDIR from kernels before 3.11) get a named probe instead,
     * unlinked at once. */
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        char probe[4096 + 64];
        snprintf(probe, sizeof probe, "%s/.%s-probe-XXXXXX", dir, prog);
        fd = mkostemp(probe, O_CLOEXEC);
        if (fd >= 0)
            unlink(probe);
    }
    if (fd < 0) {
        snprintf(what, sizeof what, "expected a file in an existing, writable directory ('%s': %s)", dir,
                 strerror(errno));
        opt_refuse(prog, opt, what, arg);
    }
    close(fd);
    return arg;
}

#endif
