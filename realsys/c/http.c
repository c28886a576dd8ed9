/* http.c - see http.h for the contract of each function. */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

/* Returns: 1 if c is an RFC 9110 token character, else 0. */
static int is_tchar(unsigned char c)
{
    /* RFC 9110 token characters */
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Returns: 1 if a[0..alen) equals the lower-case literal lit, ASCII case ignored; else 0. */
static int ci_eq(const char *a, size_t alen, const char *lit)
{
    size_t n = strlen(lit);
    if (alen != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return 0;
    }
    return 1;
}

/* Does the comma-separated header value contain the token lit (case-insensitive)? */
static int has_token(const char *v, size_t vlen, const char *lit)
{
    size_t i = 0;
    while (i < vlen) {
        while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < vlen && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && ci_eq(v + s, e - s, lit))
            return 1;
    }
    return 0;
}

/* Is a[0..alen), the inside of an IP-literal's brackets less any zone, an IPv6address or
 * (without a zone: RFC 6874 gives one to IPv6 only) an IPvFuture, "v" 1*HEXDIG "." 1*( unreserved /
 * sub-delims / ":" ) (RFC 3986 3.2.2)?  The caller has checked every character is one of those.
 * Returns: 1 yes; 0 no ("[hello]", "[:]", "[!$&]" passed the character check and were served). */
static int ip_literal_ok(const char *a, size_t alen, int has_zone)
{
    if (alen > 0 && (a[0] == 'v' || a[0] == 'V')) {
        size_t k = 1;
        while (k < alen && isxdigit((unsigned char)a[k]))
            k++;
        return !has_zone && k > 1 && k + 1 < alen && a[k] == '.';
    }
    char buf[INET6_ADDRSTRLEN];
    struct in6_addr addr;
    if (alen >= sizeof buf)
        return 0;
    memcpy(buf, a, alen);
    buf[alen] = '\0';
    return inet_pton(AF_INET6, buf, &addr) == 1;
}

/* Is v[0..vlen) a valid Host field value, uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2)?
 * Returns: 1 valid (also empty, which RFC 9110 7.2 allows); 0 invalid (RFC 9112 3.2: a 400).
 * uri-host is an IP-literal in brackets (with an RFC 6874 zone, %25...) or a reg-name (IPv4
 * dotted quads are reg-names by their characters); the port is digits only.  The name is not resolved or compared with
 * anything: the servers here have one site. */
static int host_value_ok(const char *v, size_t vlen)
{
    static const char unreserved_sub[] = "-._~!$&'()*+,;=";
    size_t i = 0;
    if (i < vlen && v[i] == '[') {
        size_t s = ++i, zone = 0; /* zone: where the RFC 6874 zone's first character is */
        while (i < vlen && v[i] != ']') {
            unsigned char c = (unsigned char)v[i];
            if (c == '%' && !zone) { /* "[fe80::1%25eth0]": "%25" once, then the zone */
                if (i + 2 >= vlen || v[i + 1] != '2' || v[i + 2] != '5' || i == s)
                    return 0;
                i += 3;
                zone = i;
                continue;
            }
            if (c == '%') { /* pct-encoded, inside the zone */
                if (i + 2 >= vlen || !isxdigit((unsigned char)v[i + 1]) || !isxdigit((unsigned char)v[i + 2]))
                    return 0;
                i += 3;
                continue;
            }
            int unreserved = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c != 0 && strchr("-._~", c));
            if (zone ? !unreserved : !(unreserved || c == ':' || (c != 0 && strchr(unreserved_sub, c))))
                return 0;
            i++;
        }
        if (i == vlen || i == s || (zone && i == zone))
            return 0; /* no closing bracket, "[]", or an empty zone */
        if (!ip_literal_ok(v + s, (zone ? zone - 3 : i) - s, zone != 0))
            return 0; /* "[hello]", "[:]": the characters allowed, but no address */
        i++;
    } else {
        while (i < vlen && v[i] != ':') {
            unsigned char c = (unsigned char)v[i];
            if (c == '%') {
                if (i + 2 >= vlen || !isxdigit((unsigned char)v[i + 1]) || !isxdigit((unsigned char)v[i + 2]))
                    return 0;
                i += 3;
                continue;
            }
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c != 0 && strchr(unreserved_sub, c))))
                return 0;
            i++;
        }
    }
    if (i == vlen)
        return 1;
    if (v[i] != ':')
        return 0; /* "[::1]x" */
    for (i++; i < vlen; i++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return 1;
}

/* Returns: 1 for an ASCII letter or digit (not the locale's isalnum), else 0. */
static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Can v[0..vlen), a Host value still arriving, become one host_value_ok accepts?  Judged
 * against uri-host[:port] as far as it goes: a bracketed IP-literal by its characters until
 * its ']' arrives and then whole; a reg-name by its characters and %-escapes; a port by digits.
 * Returns: 1 it may; 0 no continuation mends it ("a]", "a:x", "a%g", "[::1]x", "[zz]"). */
static int host_prefix_ok(const char *v, size_t vlen)
{
    size_t i = 0;
    if (vlen > 0 && v[0] == '[') {
        const char *rb = memchr(v, ']', vlen);
        if (rb == NULL) {
            /* An IPv6address (no 'v' first) holds hex digits, ':' and '.' until its zone's
             * "%25", and fits INET6_ADDRSTRLEN: "[zz" or a 60-digit one never closes valid. */
            int fut = vlen > 1 && (v[1] == 'v' || v[1] == 'V');
            for (i = 1; i < vlen && !fut && v[i] != '%'; i++)
                if (!(isxdigit((unsigned char)v[i]) || v[i] == ':' || v[i] == '.') || i >= INET6_ADDRSTRLEN)
                    return 0;
            for (; i < vlen; i++)
                if (!(is_alnum((unsigned char)v[i]) || (v[i] != 0 && strchr("-._~!$&'()*+,;=:%", v[i]))))
                    return 0;
            return 1;
        }
        i = (size_t)(rb - v) + 1;
        if (!host_value_ok(v, i))
            return 0;
    } else {
        while (i < vlen && v[i] != ':') {
            if (v[i] == '%') { /* an escape's hex digits as far as they have arrived */
                for (size_t k = 1; k <= 2 && i + k < vlen; k++)
                    if (!isxdigit((unsigned char)v[i + k]))
                        return 0;
                i += 3;
                continue;
            }
            if (!(is_alnum((unsigned char)v[i]) || (v[i] != 0 && strchr("-._~!$&'()*+,;=", v[i]))))
                return 0;
            i++;
        }
        if (i >= vlen)
            return 1;
    }
    if (i == vlen)
        return 1;
    if (v[i] != ':')
        return 0;
    for (i++; i < vlen; i++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return 1;
}

/* Can val[0..vlen), the value so far of a header line still arriving (OWS trimmed at both
 * ends; more may follow), still become one the line's end accepts?  hosts: Host lines whole
 * before this one.  Only what no continuation can mend is refused: any Transfer-Encoding, a
 * second Host, a Host value no continuation makes uri-host[:port] (host_prefix_ok), a
 * Content-Length that is not digits or whose digits are not all 0 (a body) or past 12.
 * Returns: 1 it may (PARTIAL); 0 it cannot (HTTP_ERROR, as at the line's end). */
static int partial_value_ok(const char *name, size_t nlen, const char *val, size_t vlen, int hosts)
{
    if (ci_eq(name, nlen, "transfer-encoding"))
        return 0;
    if (ci_eq(name, nlen, "host")) {
        if (hosts > 0)
            return 0;
        return host_prefix_ok(val, vlen);
    }
    if (ci_eq(name, nlen, "content-length")) {
        if (vlen > 12)
            return 0;
        for (size_t k = 0; k < vlen; k++)
            if (val[k] != '0')
                return 0; /* a non-digit, a space inside, or a non-zero length: a body */
        return 1;
    }
    return 1;
}

/* Absolute-form "http://authority[/path]" (RFC 9112 3.2.2: a server MUST accept it; the
 * scheme is case-insensitive, RFC 3986 3.1).  The authority is checked as a Host value,
 * and must name a host (RFC 9110 4.2.1: an empty host is invalid, so is "user@host",
 * which host_value_ok refuses).  It is then ignored like the Host field: one site.
 * Returns: 1 COMPLETE: req->target now the path part, handled from here on exactly as
 *            origin-form (an empty path is "/");
 *          0 not an http URI with a valid authority (other schemes too: answered 400). */
static int absolute_form(struct http_req *req)
{
    const char *t = req->target;
    size_t n = req->target_len, a = 7, e = 7;
    if (n < 7 || !ci_eq(t, 7, "http://"))
        return 0;
    while (e < n && t[e] != '/' && t[e] != '?' && t[e] != '#')
        e++;
    if (e == a || t[a] == ':' || !host_value_ok(t + a, e - a))
        return 0;
    if (e < n && t[e] == '/') {
        req->target = t + e;
        req->target_len = n - e;
    } else {
        /* Empty path ("http://x", "http://x?q"): "/", taken from the scheme's "//" so that
         * target stays inside the caller's buffer; the query goes, as http_target_to_path
         * would drop it anyway. */
        req->target = t + 6;
        req->target_len = 1;
    }
    return 1;
}

/* Find the end of the line starting at p (exclusive of CRLF / LF).
 * Returns: >= 0 COMPLETE: offset of the line terminator, *eol_len set to 1 or 2;
 *          HTTP_PARTIAL: no terminator yet; HTTP_ERROR: NUL, bare CR or other control byte. */
static long line_end(const char *buf, size_t len, size_t p, int *eol_len)
{
    for (size_t i = p; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n') {
            *eol_len = 1;
            return (long)i;
        }
        if (c == '\r') {
            if (i + 1 == len)
                return HTTP_PARTIAL;
            if (buf[i + 1] != '\n')
                return HTTP_ERROR;
            *eol_len = 2;
            return (long)i;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return HTTP_ERROR;
    }
    return HTTP_PARTIAL;
}

int http_parse_request(const char *buf, size_t len, struct http_req *req)
{
    size_t scan = len > HTTP_MAX_HEAD ? HTTP_MAX_HEAD : len;
    size_t p = 0;
    int eol, hosts = 0, closed = 0; /* closed: a Connection field said "close" */

    memset(req, 0, sizeof *req);
    /* Tolerate (RFC 9112 2.2) empty lines before the request line. */
    while (p < scan && (buf[p] == '\r' || buf[p] == '\n')) {
        if (buf[p] == '\r' && p + 1 < scan && buf[p + 1] != '\n')
            return HTTP_ERROR;
        p++;
    }
    /* Request line: method SP target SP HTTP/1.x */
    long le = line_end(buf, scan, p, &eol);
    if (le == HTTP_ERROR)
        return HTTP_ERROR;
    /* Validate the partial request line as far as it goes, so garbage fails early. */
    size_t lend = le == HTTP_PARTIAL ? scan : (size_t)le;
    size_t i = p;
    while (i < lend && is_tchar((unsigned char)buf[i]))
        i++;
    if (i < lend && (buf[i] != ' ' || i == p))
        return HTTP_ERROR;
    /* No length bound on the method: a long token is a method we do not serve (501, RFC 9110
     * 9.1 and RFC 9112 3: "longer than any that it implements SHOULD" get 501), not a
     * malformed request; one over 16 bytes had been a 400.  The head's bound still holds. */
    if (i == lend) {
        if (le == HTTP_PARTIAL)
            return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
        return HTTP_ERROR;
    }
    size_t mlen = i - p;
    if (mlen == 3 && memcmp(buf + p, "GET", 3) == 0)
        req->method = HTTP_GET;
    else if (mlen == 4 && memcmp(buf + p, "HEAD", 4) == 0)
        req->method = HTTP_HEAD;
    else
        req->method = HTTP_OTHER;
    i++; /* SP */
    size_t t0 = i;
    while (i < lend && buf[i] != ' ') {
        if ((unsigned char)buf[i] <= 0x20 || (unsigned char)buf[i] >= 0x7f)
            return HTTP_ERROR;
        i++;
    }
    if (i == lend) {
        if (le == HTTP_PARTIAL)
            return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
        return HTTP_ERROR; /* HTTP/0.9 "GET /" is not served */
    }
    if (i == t0)
        return HTTP_ERROR;
    req->target = buf + t0;
    req->target_len = i - t0;
    /* The target's form is judged as soon as its closing space arrives, not at the line's end:
     * "GET abc " can never become valid, and a client need never send the CRLF that would
     * refuse it (the servers held such a connection to its idle timeout, unanswered). */
    int asterisk = 0;
    if (req->target[0] != '/') {
        if (req->target_len == 1 && req->target[0] == '*' && mlen == 7 && memcmp(buf + p, "OPTIONS", 7) == 0)
            asterisk = 1; /* asterisk-form (RFC 9112 3.2.4), OPTIONS only */
        else if (!absolute_form(req))
            return HTTP_ERROR; /* authority-form, other schemes, "*" with another method */
    }
    i++;
    /* version: compare against "HTTP/1.x" as far as we have it (another major, HTTP/2.0 sent
     * here, is a 400 like any bad version: there is no 505 in these servers) */
    static const char ver[] = "HTTP/1.";
    size_t v0 = i;
    for (size_t k = 0; k < 7 && i < lend; k++, i++)
        if (buf[i] != ver[k])
            return HTTP_ERROR;
    if (le == HTTP_PARTIAL) {
        if (i < lend && !(buf[i] >= '0' && buf[i] <= '9'))
            return HTTP_ERROR;
        if (i + 1 < lend && !(i + 2 == lend && buf[i + 1] == '\r'))
            return HTTP_ERROR; /* junk after the version (a final CR awaits its LF) */
        return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
    }
    if (lend - v0 != 8 || !(buf[v0 + 7] >= '0' && buf[v0 + 7] <= '9'))
        return HTTP_ERROR;
    /* RFC 9110 2.5, RFC 9112 2.3: a higher minor of major 1 is answered as 1.1. */
    req->minor = buf[v0 + 7] == '0' ? 0 : 1;
    req->keepalive = req->minor == 1;
    if (asterisk) {
        /* Parsed, so that the method is answered 501 like any other we do not serve.  target
         * becomes the "/" of "HTTP/", inside the buffer and origin-form as the contract says;
         * never used. */
        req->target = buf + v0 + 4;
    }
    p = (size_t)le + (size_t)eol;

    /* Header fields until the empty line. */
    for (;;) {
        le = line_end(buf, scan, p, &eol);
        if (le == HTTP_ERROR)
            return HTTP_ERROR;
        lend = le == HTTP_PARTIAL ? scan : (size_t)le;
        if (le != HTTP_PARTIAL && lend == p) {
            /* RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
             * Only here, at the blank line: until then a Host line may still arrive. */
            if (req->minor == 1 && hosts == 0)
                return HTTP_ERROR;
            return (int)(p + (size_t)eol); /* COMPLETE */
        }
        if (le == HTTP_PARTIAL && lend > p && buf[lend - 1] == '\r')
            lend--; /* a CR at the very end awaits its LF */
        if (le == HTTP_PARTIAL && lend == p)
            return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
        /* field-name ":" OWS value OWS */
        i = p;
        if (i < lend && (buf[i] == ' ' || buf[i] == '\t'))
            return HTTP_ERROR; /* obsolete line folding: refused */
        while (i < lend && is_tchar((unsigned char)buf[i]))
            i++;
        if (i < lend && (buf[i] != ':' || i == p))
            return HTTP_ERROR;
        if (i == lend) {
            if (le == HTTP_PARTIAL) /* the name still arriving */
                return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
            return HTTP_ERROR; /* no colon */
        }
        const char *name = buf + p;
        size_t nlen = i - p;
        i++;
        while (i < lend && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        const char *val = buf + i;
        size_t vlen = lend - i;
        while (vlen > 0 && (val[vlen - 1] == ' ' || val[vlen - 1] == '\t'))
            vlen--;
        if (++req->nheaders > HTTP_MAX_HEADERS)
            return HTTP_ERROR;
        if (le == HTTP_PARTIAL) {
            /* The value still arriving: line_end has refused its bytes that no field value may
             * hold (NUL, other CTLs but HTAB, DEL, a CR not followed by LF); what this field's
             * value can already be told never to become is refused now too, not when the
             * line ends (a client may never end it). */
            if (!partial_value_ok(name, nlen, val, vlen, hosts))
                return HTTP_ERROR;
            return len > HTTP_MAX_HEAD ? HTTP_TOO_BIG : HTTP_PARTIAL;
        }
        if (ci_eq(name, nlen, "connection")) {
            /* RFC 9112 9.6: "close" in any Connection field ends the connection after this
             * reply; a later "Connection: keep-alive" had undone it. */
            if (has_token(val, vlen, "close"))
                req->keepalive = 0, closed = 1;
            else if (!closed && has_token(val, vlen, "keep-alive"))
                req->keepalive = 1;
        } else if (ci_eq(name, nlen, "content-length")) {
            size_t n = 0;
            if (vlen == 0 || vlen > 12)
                return HTTP_ERROR;
            for (size_t k = 0; k < vlen; k++) {
                if (val[k] < '0' || val[k] > '9')
                    return HTTP_ERROR;
                n = n * 10 + (size_t)(val[k] - '0');
            }
            req->content_length = n;
            if (n != 0)
                return HTTP_ERROR; /* a body on GET/HEAD: refused */
        } else if (ci_eq(name, nlen, "transfer-encoding")) {
            return HTTP_ERROR;
        } else if (ci_eq(name, nlen, "host")) {
            if (++hosts > 1)
                return HTTP_ERROR; /* RFC 9112 3.2: more than one Host is a 400, any version */
            if (!host_value_ok(val, vlen))
                return HTTP_ERROR; /* RFC 9112 3.2: so is a Host with an invalid value */
        }
        p = (size_t)le + (size_t)eol;
    }
}

/* Returns: the value 0-15 of the hex digit c, or -1 if c is none. */
static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_target_to_path(const char *target, size_t len, char *out, size_t outsz)
{
    if (len == 0 || target[0] != '/')
        return HTTP_ERROR;
    size_t o = 0;
    /* decode into out, stop at '?' or '#' */
    for (size_t i = 0; i < len; i++) {
        char c = target[i];
        if (c == '?' || c == '#')
            break;
        if (c == '%') {
            if (i + 2 >= len)
                return HTTP_ERROR;
            int h = hexval(target[i + 1]), l = hexval(target[i + 2]);
            if (h < 0 || l < 0)
                return HTTP_ERROR;
            c = (char)(h * 16 + l);
            i += 2;
        }
        if ((unsigned char)c < 0x20 || (unsigned char)c == 0x7f)
            return HTTP_ERROR; /* includes decoded NUL */
        if (c == '\\')
            return HTTP_FORBIDDEN; /* no Windows-style separators */
        if (o + 1 >= outsz || o >= HTTP_MAX_PATH)
            return HTTP_ERROR;
        out[o++] = c;
    }
    out[o] = '\0';
    /* Check segments on the decoded path: "/a/../b", "/%2e%2e/x", "/./x", "//x". */
    size_t s = 1;
    if (o > 1 && out[1] == '/')
        return HTTP_FORBIDDEN;
    while (s <= o) {
        size_t e = s;
        while (e < o && out[e] != '/')
            e++;
        size_t sl = e - s;
        if ((sl == 2 && out[s] == '.' && out[s + 1] == '.') || (sl == 1 && out[s] == '.'))
            return HTTP_FORBIDDEN;
        if (sl == 0 && e < o)
            return HTTP_FORBIDDEN; /* empty segment "a//b" */
        s = e + 1;
    }
    /* Strip the leading '/', add index.html for directory targets. */
    memmove(out, out + 1, o); /* includes the NUL */
    o--;
    if (o == 0 || out[o - 1] == '/') {
        static const char idx[] = "index.html";
        if (o + sizeof idx > outsz)
            return HTTP_ERROR;
        memcpy(out + o, idx, sizeof idx);
        o += sizeof idx - 1;
    }
    return (int)o;
}

const char *http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}
