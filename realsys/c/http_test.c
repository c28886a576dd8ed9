/* http_test - drive the parser from tests (tests/realsys/test_http_parser.py).
 *   http_test parse < bytes   -> JSON: result on the whole input, plus a byte-by-byte
 *                                check that every shorter prefix was PARTIAL (or already
 *                                an error where the whole is an error)
 *   http_test path < target   -> JSON: http_target_to_path's verdict and the path */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_str(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static const char *name(int r)
{
    if (r > 0) return "complete";
    if (r == HTTP_PARTIAL) return "partial";
    if (r == HTTP_TOO_BIG) return "too_big";
    if (r == HTTP_FORBIDDEN) return "forbidden";
    return "error";
}

int main(int argc, char **argv)
{
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, stdin);
    if (argc < 2) return 2;
    if (strcmp(argv[1], "path") == 0) {
        char out[HTTP_MAX_PATH + 32];
        int r = http_target_to_path(buf, len, out, sizeof out);
        printf("{\"result\": \"%s\"", r >= 0 ? "ok" : name(r));
        if (r >= 0) { printf(", \"path\": "); json_str(out, (size_t)r); }
        printf("}\n");
        return 0;
    }
    if (strcmp(argv[1], "trickle") == 0) {
        /* The input arriving a byte per read, parsed when http_worth_parsing says, as the
         * servers do: how many parses, and at what length the first answer came. */
        size_t parsed = 0;
        long parses = 0, at = -1;
        int r = HTTP_PARTIAL;
        for (size_t k = 1; k <= len && r == HTTP_PARTIAL; k++) {
            if (!http_worth_parsing(buf, parsed, k))
                continue;
            struct http_req q;
            parsed = k;
            parses++;
            r = http_parse_request(buf, k, &q);
            if (r != HTTP_PARTIAL)
                at = (long)k;
        }
        printf("{\"result\": \"%s\", \"at\": %ld, \"parses\": %ld}\n", name(r), at, parses);
        return 0;
    }
    struct http_req req;
    int r = http_parse_request(buf, len, &req);
    /* prefixes: a complete request must be PARTIAL at every shorter length;
     * an erroneous one must never be COMPLETE at a shorter length. */
    int prefix_ok = 1;
    long first_error = -1;
    size_t upto = r > 0 ? (size_t)r : len;
    for (size_t k = 0; k < upto; k++) {
        struct http_req q;
        int p = http_parse_request(buf, k, &q);
        if (p > 0) prefix_ok = 0;
        if (p != HTTP_PARTIAL && first_error < 0) first_error = (long)k;
        if (r > 0 && p != HTTP_PARTIAL) prefix_ok = 0;
    }
    printf("{\"result\": \"%s\", \"consumed\": %d, \"prefix_ok\": %s, \"first_error_at\": %ld", name(r),
           r > 0 ? r : 0, prefix_ok ? "true" : "false", first_error);
    if (r > 0) {
        printf(", \"method\": \"%s\", \"minor\": %d, \"keepalive\": %s, \"target\": ",
               req.method == HTTP_GET ? "GET" : req.method == HTTP_HEAD ? "HEAD" : "OTHER", req.minor,
               req.keepalive ? "true" : "false");
        json_str(req.target, req.target_len);
    }
    printf("}\n");
    return 0;
}
