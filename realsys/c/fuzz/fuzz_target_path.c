/* fuzz_target_path.c - libFuzzer harness for the request-to-file mapping:
 * http_target_to_path (http.h) followed by the server's own lookup (reply_prepare,
 * docroot_find in common.c) against a document root made at start-up:
 *
 *     <tmp>/secret              "TOP-SECRET-..."   (outside the root)
 *     <tmp>/root/index.html, <tmp>/root/a/b.html, <tmp>/root/a/c/d.html
 *     <tmp>/root/escape    -> ../secret   (symlink: must never be served)
 *     <tmp>/root/a/up      -> ../../secret
 *
 * Checked for every input (any target bytes, any output buffer size):
 *   - the decoded relative path never starts with '/', never has a ".", ".." or empty
 *     segment, a backslash, a NUL or a control byte, fits the buffer, and its length
 *     is the return value; so joined to the root it cannot name anything outside it;
 *   - a request "GET <target> HTTP/1.0" through reply_prepare either fails (400, 403,
 *     404, 501) or serves one of the files under the root, never the secret. */
#include "../common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { __builtin_trap(); } } while (0)

static const char SECRET[] = "TOP-SECRET-4f1c9e-outside-the-docroot";
static char base[256];
static struct stats fstats;

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    if (base[0])
        return;
    snprintf(base, sizeof base, "%s/fuzzroot-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK(mkdtemp(base) != NULL);
    char p[512], q[512];
    put("secret", SECRET);
    snprintf(p, sizeof p, "%s/root", base);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/root/a", base);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/root/a/c", base);
    CHECK(mkdir(p, 0755) == 0);
    put("root/index.html", "index");
    put("root/a/b.html", "bee");
    put("root/a/c/d.html", "dee");
    snprintf(p, sizeof p, "%s/root/escape", base);
    CHECK(symlink("../secret", p) == 0);
    snprintf(p, sizeof p, "%s/root/a/up", base);
    CHECK(symlink("../../secret", p) == 0);
    snprintf(q, sizeof q, "%s/root", base);
    ST = &fstats;
    CHECK(docroot_load(q) == 3); /* index.html, a/b.html, a/c/d.html; symlinks skipped */
    CHECK(docroot_find("escape") == NULL && docroot_find("a/up") == NULL);
    /* the test bed is removed at exit; the loaded files stay open (fds) meanwhile */
    snprintf(p, sizeof p, "rm -rf '%s'", base);
    CHECK(system(p) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setup();
    return 0;
}

static void check_path(const uint8_t *data, size_t size, size_t outsz)
{
    char *out = malloc(outsz);
    CHECK(out != NULL);
    int r = http_target_to_path((const char *)data, size, out, outsz);
    if (r >= 0) {
        CHECK((size_t)r < outsz && strlen(out) == (size_t)r && r > 0);
        CHECK(out[0] != '/');
        size_t s = 0;
        for (size_t i = 0; i <= (size_t)r; i++) {
            if (i < (size_t)r) {
                unsigned char c = (unsigned char)out[i];
                CHECK(c >= 0x20 && c != 0x7f && c != '\\');
            }
            if (i == (size_t)r || out[i] == '/') {
                size_t sl = i - s;
                CHECK(sl > 0);
                CHECK(!(sl == 1 && out[s] == '.'));
                CHECK(!(sl == 2 && out[s] == '.' && out[s + 1] == '.'));
                s = i + 1;
            }
        }
    } else {
        CHECK(r == HTTP_ERROR || r == HTTP_FORBIDDEN);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size > 4096)
        return 0;
    check_path(data, size, HTTP_MAX_PATH + 16); /* the servers' buffer */
    check_path(data, size, 1 + (size % 24));    /* small buffers: must not overflow */

    /* Through the server's request handling. */
    char *req = malloc(size + 32);
    CHECK(req != NULL);
    memcpy(req, "GET ", 4);
    memcpy(req + 4, data, size);
    memcpy(req + 4 + size, " HTTP/1.0\r\n\r\n", 13);
    struct reply rp;
    int r = reply_prepare(&rp, req, size + 17, 0);
    if (r > 0) {
        CHECK(rp.status == 200 && rp.f != NULL && rp.f->data != NULL);
        CHECK(memmem(rp.f->data, (size_t)rp.f->size, "SECRET", 6) == NULL);
        CHECK(strcmp(rp.f->path, "index.html") == 0 || strcmp(rp.f->path, "a/b.html") == 0 ||
              strcmp(rp.f->path, "a/c/d.html") == 0);
    } else if (r == 0) {
        CHECK(rp.status == 400 || rp.status == 403 || rp.status == 404 || rp.status == 501);
        CHECK(rp.f == NULL);
    } else {
        CHECK(r == HTTP_PARTIAL); /* only if the target itself holds CR/LF */
    }
    free(req);
    return 0;
}
