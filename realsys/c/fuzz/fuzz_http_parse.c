/* fuzz_http_parse.c - libFuzzer harness for http_parse_request (http.h).
 *
 * Beyond "no crash, no out-of-bounds read" (ASan/UBSan), it checks the contract:
 *   COMPLETE (> 0): count <= len and <= HTTP_MAX_HEAD, the head ends with a line
 *       terminator, method/minor in range, target inside the buffer and origin-form;
 *   the result on a prefix is consistent with the result on the whole input:
 *       a COMPLETE prefix stays COMPLETE with the same count (the parser only looks at
 *       the head), and an ERROR prefix ("can never become a valid request") never turns
 *       COMPLETE once more bytes arrive.
 * Build: make -C realsys/c fuzz (clang) or fuzz-replay (cc, corpus replay only). */
#include "../http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { __builtin_trap(); } } while (0)

static int parse_exact(const uint8_t *data, size_t n, struct http_req *req)
{
    /* an exactly sized heap copy, so any read past n is an ASan error */
    char *b = malloc(n ? n : 1);
    if (!b)
        return HTTP_ERROR;
    if (n)
        memcpy(b, data, n);
    int r = http_parse_request(b, n, req);
    if (r > 0) {
        CHECK((size_t)r <= n && r <= HTTP_MAX_HEAD);
        CHECK(b[r - 1] == '\n');
        CHECK(req->method >= HTTP_GET && req->method <= HTTP_OTHER);
        CHECK(req->minor == 0 || req->minor == 1);
        CHECK(req->keepalive == 0 || req->keepalive == 1);
        CHECK(req->target >= b && req->target_len > 0 && req->target + req->target_len <= b + r);
        CHECK(req->target[0] == '/');
        CHECK(req->content_length == 0);
        CHECK(req->nheaders >= 0 && req->nheaders <= HTTP_MAX_HEADERS);
        for (size_t i = 0; i < req->target_len; i++)
            CHECK((unsigned char)req->target[i] > 0x20 && (unsigned char)req->target[i] < 0x7f);
    } else {
        CHECK(r == HTTP_PARTIAL || r == HTTP_ERROR || r == HTTP_TOO_BIG);
        if (r == HTTP_TOO_BIG)
            CHECK(n > HTTP_MAX_HEAD);
    }
    free(b);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct http_req req;
    if (size > 3 * HTTP_MAX_HEAD)
        return 0;
    int full = parse_exact(data, size, &req);
    size_t cuts[3] = { size / 2, size > 0 ? size - 1 : 0, size > 16 ? 16 : size };
    for (int k = 0; k < 3; k++) {
        struct http_req pr;
        int part = parse_exact(data, cuts[k], &pr);
        if (part > 0)
            CHECK(full == part); /* a complete head does not change with what follows */
        if (part == HTTP_ERROR)
            CHECK(full <= 0);    /* an error never becomes a request */
    }
    return 0;
}
