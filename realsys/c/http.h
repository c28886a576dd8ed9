/* http.h - a tiny HTTP/1.x request-head parser for the realsys servers.
 *
 * Style follows picohttpparser: the caller owns the buffer, the parser never
 * allocates, and every function states its return contract in one comment:
 * a positive count means COMPLETE, HTTP_PARTIAL means "feed me more bytes",
 * HTTP_ERROR means the bytes can never become a valid request (answer 400
 * and close).  The parser is re-run from the start of the buffer, stateless;
 * the servers run it when http_worth_parsing says, not on every read: a head
 * trickled a byte per read cost a parse of the whole buffer each time: an
 * 8 KB head sent a byte at a time over loopback (about 7,900 reads) took
 * 110-153 ms of the μserver's user CPU, 33-44 ms since (6 Dec 2026, epoll,
 * two rounds side by side; the reads' own system time, 86-177 ms, stays).
 */
#ifndef REALSYS_HTTP_H
#define REALSYS_HTTP_H

#include <stddef.h>

#define HTTP_PARTIAL (-2)
#define HTTP_ERROR (-1)
#define HTTP_TOO_BIG (-3)     /* head exceeds HTTP_MAX_HEAD: also answered 400 */
#define HTTP_FORBIDDEN (-4)   /* path escapes the document root: 403 */
#define HTTP_MAX_HEAD 8192
#define HTTP_MAX_HEADERS 64
#define HTTP_MAX_PATH 1024

enum http_method { HTTP_GET = 1, HTTP_HEAD = 2, HTTP_OTHER = 3 };

struct http_req {
    int method;               /* enum http_method; HTTP_OTHER = valid token of any length we do not serve (501) */
    int minor;                /* 0 or 1 (HTTP/1.0; HTTP/1.1 and higher 1.x, answered as 1.1) */
    int keepalive;            /* 1 if the connection stays open after the reply */
    const char *target;       /* origin-form target (points into the caller's buffer): as sent; for an
                               * absolute-form one, its path part ("/" when empty); "/" for "OPTIONS *" */
    size_t target_len;
    size_t content_length;    /* a request body is refused: non-zero makes the parse an error */
    int nheaders;
};

/* Parse one request head from buf[0..len).
 * Returns: > 0  COMPLETE: the number of bytes of the head (up to and including the blank line);
 *          HTTP_PARTIAL: the blank line has not arrived and nothing so far is known to be
 *                        invalid: the request line is valid as far as it goes (its target
 *                        in one of the forms below once its closing space has arrived), every
 *                        whole header line is valid, and
 *                        a header line still arriving is valid as far as it goes: its name,
 *                        and its value so far holds no byte a field value never may (NUL,
 *                        other CTLs but HTAB, DEL, a CR not followed by LF) nor what that
 *                        field's value can no longer mend (any Transfer-Encoding, a second
 *                        Host, a Host value no continuation makes uri-host[:port] (an IP literal
 *                        of valid characters is judged once its ']' arrives), a
 *                        Content-Length not all 0s);
 *          HTTP_TOO_BIG: no blank line within HTTP_MAX_HEAD bytes (treat as an error);
 *          HTTP_ERROR: malformed (a method that is not a token, NUL or control byte, a version other
 *                      than HTTP/1.<digit>, bad header line, a body, a target that is not
 *                      origin-form, "http://" absolute-form with a valid host, or asterisk-form
 *                      with OPTIONS, more than one Host header, a Host value that is not
 *                      uri-host[:port], or an HTTP/1.1 head without Host: RFC 9112 3.2).
 * On COMPLETE *req is filled; otherwise its contents are unspecified. */
int http_parse_request(const char *buf, size_t len, struct http_req *req);

/* Bytes a head may grow by without '\n' before it is parsed again (see http_worth_parsing). */
#define HTTP_REPARSE_BYTES 64

/* Whether buf[0..len), which was len_parsed bytes long when it was last parsed (0: never, or
 * emptied since), is worth parsing again.
 * Returns: 1 when never parsed, when a '\n' came since (a line may have ended, and with it
 *          the head), when HTTP_REPARSE_BYTES or more came since, or at HTTP_MAX_HEAD; else 0.
 * So a head already bad is refused at its first read, at its line's end or within
 * HTTP_REPARSE_BYTES bytes of trickle, and a trickled head costs len / HTTP_REPARSE_BYTES
 * parses plus one a line, not one a read. */
static inline int http_worth_parsing(const char *buf, size_t len_parsed, size_t len)
{
    if (len_parsed == 0 || len <= len_parsed || len - len_parsed >= HTTP_REPARSE_BYTES || len >= HTTP_MAX_HEAD)
        return 1;
    for (size_t i = len_parsed; i < len; i++)
        if (buf[i] == '\n')
            return 1;
    return 0;
}

/* Turn a request-target into a path relative to the document root.
 * Percent-decodes, drops the query string, maps "/" and ".../" to index.html.
 * Returns: >= 0 COMPLETE: length of the NUL-terminated relative path written to out;
 *          HTTP_ERROR: not origin-form ("/..."), bad %-escape, NUL or control byte, too long;
 *          HTTP_FORBIDDEN: a ".." segment (also when percent-encoded) or a "." segment
 *                          or a leading '/' left after decoding ("//etc/passwd").
 * A path accepted here is only looked up among the files docroot_load preloaded (regular
 * files; symlinks skipped), so nothing outside the root is reachable. */
int http_target_to_path(const char *target, size_t len, char *out, size_t outsz);

/* Reason phrase for a status code ("OK", "Bad Request", ...). Never NULL. */
const char *http_reason(int status);

#endif
