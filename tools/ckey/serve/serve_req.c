/* `ckey serve`: request targets, query values and file paths (serve_req.h). Everything a client controls
 * passes through here before it reaches the file system or the keyer, so this file is plain C over strings
 * (no HTTP library) and fuzzed on its own (fuzz/fuzz_serve_request.c). */
#include "serve_req.h"

#include "ckey.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fail(int status, char *why, size_t n, const char *msg) {
    snprintf(why, n, "%s", msg);
    return status;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) into out (cap bytes with the terminator); '+' is a space in queries only.
 * A decoded NUL is refused: C strings would silently cut the path or value there. */
static int decode(const char *s, size_t len, char *out, size_t cap, int plus_space, char *why, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= len) return fail(400, why, n, "truncated %-escape");
            const int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) return fail(400, why, n, "malformed %-escape");
            c = (char)(hi << 4 | lo);
            if (!c) return fail(400, why, n, "%00 in the request");
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        } else if ((unsigned char)c < 0x20 || c == 0x7f) {
            return fail(400, why, n, "control character in the request target");
        }
        if (o + 1 >= cap) return fail(414, why, n, "request target part too long");
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int sv_req_parse(const char *target, sv_req *r, char *why, size_t n) {
    memset(r, 0, sizeof *r);
    if (!target || target[0] != '/') return fail(400, why, n, "the request target is not a path");
    const size_t len = strnlen(target, SV_TARGET_MAX + 1);
    if (len > SV_TARGET_MAX) return fail(414, why, n, "request target too long");
    const char  *qm   = memchr(target, '?', len);
    const char  *hash = memchr(target, '#', len);
    if (hash) return fail(400, why, n, "a fragment in the request target");
    const size_t plen = qm ? (size_t)(qm - target) : len;
    int          st   = decode(target, plen, r->path, sizeof r->path, 0, why, n);
    if (st) return st;
    if (!qm) return 0;
    for (const char *p = qm + 1, *end = target + len; p < end;) {
        const char  *amp = memchr(p, '&', (size_t)(end - p));
        const char  *pe  = amp ? amp : end;
        const char  *eq  = memchr(p, '=', (size_t)(pe - p));
        if (pe == p) { /* "a=1&&b=2" or a trailing '&': nothing to read */
            p = pe + 1;
            continue;
        }
        if (r->nq == SV_PARAMS_MAX) return fail(400, why, n, "too many query parameters");
        sv_param *q = &r->q[r->nq];
        st = decode(p, (size_t)((eq ? eq : pe) - p), q->key, sizeof q->key, 1, why, n);
        if (!st) st = eq ? decode(eq + 1, (size_t)(pe - eq - 1), q->val, sizeof q->val, 1, why, n) : 0;
        if (st) return st == 414 ? fail(400, why, n, "query key or value too long") : st;
        if (!q->key[0]) return fail(400, why, n, "a query parameter without a name");
        if (sv_query(r, q->key)) {
            snprintf(why, n, "query parameter '%s' given twice", q->key);
            return 400;
        }
        r->nq++;
        p = pe + 1;
    }
    return 0;
}

const char *sv_query(const sv_req *r, const char *key) {
    for (int i = 0; i < r->nq; i++)
        if (!strcmp(r->q[i].key, key)) return r->q[i].val;
    return NULL;
}

int sv_req_only(const sv_req *r, const char *allowed, char *why, size_t n) {
    for (int i = 0; i < r->nq; i++) {
        const size_t kl = strlen(r->q[i].key);
        int          ok = 0;
        for (const char *a = allowed; a && *a && !ok;) {
            const char  *comma = strchr(a, ',');
            const size_t al    = comma ? (size_t)(comma - a) : strlen(a);
            ok                 = al == kl && !strncmp(a, r->q[i].key, kl);
            a += al + (comma != NULL);
        }
        if (!ok) {
            snprintf(why, n, "unknown query parameter '%.32s'", r->q[i].key);
            return 400;
        }
    }
    return 0;
}

int sv_query_int(const sv_req *r, const char *key, long lo, long hi, long *out, char *why, size_t n) {
    const char *v = sv_query(r, key);
    if (!v) return 0;
    char *end;
    errno        = 0;
    const long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi || (v[0] != '-' && (v[0] < '0' || v[0] > '9'))) {
        snprintf(why, n, "%s expects an integer from %ld to %ld, got '%.40s'", key, lo, hi, v);
        return 400;
    }
    *out = x;
    return 0;
}

static int query_real(const sv_req *r, const char *key, double lo, double hi, float *out, char *why, size_t n) {
    const char *v = sv_query(r, key);
    if (!v) return 0;
    char *end;
    errno          = 0;
    const double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x) || x < lo || x > hi) {
        snprintf(why, n, "%s expects a number from %g to %g, got '%.40s'", key, lo, hi, v);
        return 400;
    }
    *out = (float)x;
    return 0;
}

int sv_settings_from_query(const sv_req *r, sv_settings *s, char *why, size_t n) {
    sv_settings t = *s;
    long        size = t.size, tile = t.tile, overlap = t.overlap, despeckle = t.despeckle, dsize = t.despeckle_size;
    int         st;
    if ((st = sv_query_int(r, "size", 32, 16384, &size, why, n)) || (st = sv_query_int(r, "tile", 0, 16384, &tile, why, n)) ||
        (st = sv_query_int(r, "overlap", 0, 16383, &overlap, why, n)) ||
        (st = sv_query_int(r, "despeckle", 0, 1, &despeckle, why, n)) ||
        (st = sv_query_int(r, "despeckle_size", 1, 1L << 30, &dsize, why, n)) ||
        (st = query_real(r, "despill", 0, 1, &t.despill, why, n)) ||
        (st = query_real(r, "refiner_scale", -100, 100, &t.refiner_scale, why, n)))
        return st;
    if (size % 32) return fail(400, why, n, "size expects a multiple of 32 from 32 to 16384");
    if (tile && (tile < 32 || tile % 32)) return fail(400, why, n, "tile expects 0 (full frame) or a multiple of 32 from 32 to 16384");
    if (sv_query(r, "tile") && !sv_query(r, "overlap")) overlap = tile > 128 ? 64 : tile / 4; /* as ckey key --tile */
    if (!tile) overlap = 0;
    if (tile && overlap >= tile) return fail(400, why, n, "overlap must be smaller than tile");
    const char *prec = sv_query(r, "precision");
    if (prec) {
        static const struct { const char *name; int value; } P[] = {
            {"auto", CK_PREC_AUTO}, {"fp32", CK_PREC_FP32}, {"bf16", CK_PREC_BF16}, {"fp16", CK_PREC_FP16}};
        int found = 0;
        for (size_t i = 0; i < sizeof P / sizeof P[0] && !found; i++)
            if (!strcmp(prec, P[i].name)) t.precision = P[i].value, found = 1;
        if (!found) return fail(400, why, n, "precision expects auto, fp32, bf16 or fp16");
    }
    t.size = (int)size, t.tile = (int)tile, t.overlap = (int)overlap;
    t.despeckle = (int)despeckle, t.despeckle_size = (int)dsize;
    *s = t;
    return 0;
}

int sv_resolve(const char *root, const char *rel, char *out, size_t n, char *why, size_t wn) {
    if (!rel[0]) return fail(400, why, wn, "empty path");
    if (rel[0] == '/') return fail(403, why, wn, "absolute paths are not served");
    for (const char *c = rel; *c;) { /* component by component */
        const char  *slash = strchr(c, '/');
        const size_t cl    = slash ? (size_t)(slash - c) : strlen(c);
        if (cl == 0) return fail(400, why, wn, "empty path component");
        if ((cl == 2 && !strncmp(c, "..", 2))) return fail(403, why, wn, "'..' in the path");
        if (c[0] == '.') return fail(404, why, wn, "hidden files are not served");
        if (cl > NAME_MAX) return fail(400, why, wn, "path component too long");
        c += cl + (slash != NULL);
    }
    char         joined[PATH_MAX], real[PATH_MAX];
    const size_t rl = strlen(root), ll = strlen(rel);
    if (rl == 0 || rl + 1 + ll >= sizeof joined) return fail(400, why, wn, "path too long");
    memcpy(joined, root, rl), joined[rl] = '/', memcpy(joined + rl + 1, rel, ll + 1);
    if (!realpath(joined, real)) return fail(errno == ENOENT || errno == ENOTDIR ? 404 : 403, why, wn, "no such file");
    /* a symbolic link inside the shot may point anywhere: only where it ends counts */
    if (strncmp(real, root, rl) != 0 || real[rl] != '/') return fail(403, why, wn, "the path leaves the served folder");
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return fail(404, why, wn, "not a file");
    if (strlen(real) >= n) return fail(400, why, wn, "path too long");
    snprintf(out, n, "%s", real);
    return 0;
}

int sv_token_equal(const char *a, const char *b) {
    const size_t  bl   = strlen(b);
    unsigned char diff = 0;
    size_t        al   = 0;
    /* every byte of b is compared wherever a differs; reading a stops at its end (then 0 bytes compare) */
    for (size_t i = 0; i < bl; i++) {
        const unsigned char c = al == i && a[i] ? (unsigned char)a[al++] : 0;
        diff |= (unsigned char)(c ^ (unsigned char)b[i]);
    }
    return diff == 0 && al == bl && a[al] == '\0';
}
