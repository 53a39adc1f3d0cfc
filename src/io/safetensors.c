/* .safetensors reader and writer.
 *
 * Format (github.com/huggingface/safetensors, README "Format"): u64 little-endian header length N,
 * N bytes of JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {"k": "v"}}, then the data section; offsets are relative to its start.
 *
 * Rules kept here: the JSON parser is strict and minimal (objects, arrays, strings with escapes,
 * integers; no floats, booleans or null, which no valid header contains), non-recursive except for
 * the fixed header shape, and bounds-checked on every byte; sizes are checked with overflow-safe
 * arithmetic; tensors may not overlap. The writer lays data out by decreasing element size so every
 * tensor is naturally aligned without gaps, and replaces the target only after a complete write.
 */
#define _POSIX_C_SOURCE 200809L
#include "io/ckpt_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HEADER (100u * 1000u * 1000u) /* the library's own limit is 100 MB */
#define NAME_BUF   1024

static const char *const k_dtype_names[CK_DTYPE_COUNT] = {
    [CK_DTYPE_F32] = "F32", [CK_DTYPE_F16] = "F16", [CK_DTYPE_BF16] = "BF16", [CK_DTYPE_I64] = "I64",
    [CK_DTYPE_F64] = "F64", [CK_DTYPE_I32] = "I32", [CK_DTYPE_U8] = "U8",
};

/* ------------------------------------------------------------------------------------------------ */
/* Reader                                                                                           */

typedef struct jp {
    const char *start, *p, *end;
    const char *label;
    ck_err     *err;
} jp;

static ck_status jfail(jp *j, const char *fmt, ...) CK_PRINTF(2, 3);
static ck_status jfail(jp *j, const char *fmt, ...) {
    char    msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ck__fail(j->err, CK_STATUS_EFORMAT, "%s: safetensors header: %s at byte %zu", j->label, msg,
                    (size_t)(j->p - j->start));
}

static void ws(jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int accept(jp *j, char c) {
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

static ck_status expect(jp *j, char c) {
    if (accept(j, c)) return CK_OK;
    if (j->p >= j->end) return jfail(j, "truncated JSON, expected '%c'", c);
    return jfail(j, "expected '%c'", c);
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char     c = p[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

/* Decodes a JSON string into out (NUL-terminated, at most cap-1 bytes kept); *len is the full decoded
 * length, so callers detect truncation. "\u0000" is rejected: names and metadata are C strings. */
static ck_status jstring(jp *j, char *out, size_t cap, size_t *len) {
    size_t n = 0;
#define EMIT(b)                                 \
    do {                                        \
        if (n + 1 < cap) out[n] = (char)(b);    \
        n++;                                    \
    } while (0)
    ws(j);
    if (j->p >= j->end || *j->p != '"') return jfail(j, "expected a string");
    j->p++;
    for (;;) {
        if (j->p >= j->end) return jfail(j, "unterminated string");
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"') break;
        if (c < 0x20) return jfail(j, "control character in string");
        if (c != '\\') {
            EMIT(c);
            continue;
        }
        if (j->p >= j->end) return jfail(j, "unterminated string");
        char e = *j->p++;
        switch (e) {
        case '"': EMIT('"'); break;
        case '\\': EMIT('\\'); break;
        case '/': EMIT('/'); break;
        case 'b': EMIT('\b'); break;
        case 'f': EMIT('\f'); break;
        case 'n': EMIT('\n'); break;
        case 'r': EMIT('\r'); break;
        case 't': EMIT('\t'); break;
        case 'u': {
            unsigned cp, lo;
            if (j->end - j->p < 4 || !hex4(j->p, &cp)) return jfail(j, "bad \\u escape");
            j->p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return jfail(j, "unpaired surrogate in \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || !hex4(j->p + 2, &lo) || lo < 0xDC00 ||
                    lo > 0xDFFF)
                    return jfail(j, "unpaired surrogate in \\u escape");
                j->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) return jfail(j, "\\u0000 in string");
            if (cp < 0x80) {
                EMIT(cp);
            } else if (cp < 0x800) {
                EMIT(0xC0 | (cp >> 6));
                EMIT(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                EMIT(0xE0 | (cp >> 12));
                EMIT(0x80 | ((cp >> 6) & 0x3F));
                EMIT(0x80 | (cp & 0x3F));
            } else {
                EMIT(0xF0 | (cp >> 18));
                EMIT(0x80 | ((cp >> 12) & 0x3F));
                EMIT(0x80 | ((cp >> 6) & 0x3F));
                EMIT(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return jfail(j, "bad escape '\\%c'", e);
        }
    }
#undef EMIT
    out[n < cap ? n : cap - 1] = '\0';
    *len                       = n;
    return CK_OK;
}

static ck_status jint(jp *j, int64_t *out) {
    ws(j);
    int neg = 0;
    if (j->p < j->end && *j->p == '-') {
        neg = 1;
        j->p++;
    }
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "expected an integer");
    uint64_t v = 0;
    if (*j->p == '0' && j->end - j->p > 1 && j->p[1] >= '0' && j->p[1] <= '9') return jfail(j, "leading zero in integer");
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10) return jfail(j, "integer out of range");
        v = v * 10 + d;
        j->p++;
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) return jfail(j, "expected an integer, found a fraction");
    *out = neg ? -(int64_t)v : (int64_t)v;
    return CK_OK;
}

/* [a, b, ...] of at most `max` integers; *n counts all of them (max+1 means "too many"). */
static ck_status jint_array(jp *j, int64_t *vals, int max, int *n) {
    ck_status st = expect(j, '[');
    *n           = 0;
    if (st != CK_OK || accept(j, ']')) return st;
    for (;;) {
        int64_t x = 0;
        if ((st = jint(j, &x)) != CK_OK) return st;
        if (*n >= max) return jfail(j, "array longer than %d", max);
        vals[(*n)++] = x;
        if (accept(j, ']')) return CK_OK;
        if ((st = expect(j, ',')) != CK_OK) return st;
    }
}

typedef struct range {
    uint64_t begin, end;
    int      idx;
} range;

typedef struct st_ctx {
    ck_checkpoint *ck;
    int            cap, meta_cap;
    range         *ranges;
    int            n_ranges, ranges_cap;
    uint64_t       data_start, data_size;
    int            seen_meta;
} st_ctx;

static int cmp_meta_key(const void *a, const void *b) {
    return strcmp((*(const ck_ckpt_meta *const *)a)->key, (*(const ck_ckpt_meta *const *)b)->key);
}

/* Duplicate metadata keys, by sorting (a header of 100,000 keys took 95 s with the pairwise check). */
static ck_status meta_unique(jp *j, const ck_checkpoint *ck) {
    if (ck->n_meta < 2) return CK_OK;
    const ck_ckpt_meta **v = malloc((size_t)ck->n_meta * sizeof *v);
    if (!v) return ck__fail(j->err, CK_STATUS_EOOM, "%s: out of memory for metadata", j->label);
    for (int i = 0; i < ck->n_meta; i++) v[i] = &ck->meta[i];
    qsort(v, (size_t)ck->n_meta, sizeof *v, cmp_meta_key);
    ck_status st = CK_OK;
    for (int i = 1; i < ck->n_meta && st == CK_OK; i++)
        if (strcmp(v[i - 1]->key, v[i]->key) == 0) st = jfail(j, "duplicate metadata key '%.64s'", v[i]->key);
    free(v);
    return st;
}

static ck_status parse_metadata(jp *j, st_ctx *c) {
    ck_checkpoint *ck = c->ck;
    ck_status      st;
    if (!accept(j, '{')) return jfail(j, "\"__metadata__\" must be an object of strings");
    if (accept(j, '}')) return CK_OK;
    for (;;) {
        char   key[NAME_BUF], val[1024];
        size_t kl, vl;
        if ((st = jstring(j, key, sizeof key, &kl)) != CK_OK || (st = expect(j, ':')) != CK_OK) return st;
        ws(j);
        if (j->p < j->end && *j->p != '"') return jfail(j, "metadata value of '%.64s' is not a string", key);
        if ((st = jstring(j, val, sizeof val, &vl)) != CK_OK) return st;
        if (kl >= sizeof ck->meta[0].key || vl >= sizeof ck->meta[0].value) {
            CK_LOG_WARN("%s: skipping metadata entry '%.64s' (key or value too long: %zu / %zu bytes)", j->label, key,
                        kl, vl);
        } else {
            if (ck->n_meta == c->meta_cap) {
                int           ncap = c->meta_cap ? c->meta_cap * 2 : 8;
                ck_ckpt_meta *m    = ncap <= (1 << 20) ? realloc(ck->meta, (size_t)ncap * sizeof *m) : NULL;
                if (!m) return ck__fail(j->err, CK_STATUS_EOOM, "%s: out of memory for metadata", j->label);
                ck->meta    = m;
                c->meta_cap = ncap;
            }
            memcpy(ck->meta[ck->n_meta].key, key, kl + 1);
            memcpy(ck->meta[ck->n_meta].value, val, vl + 1);
            ck->n_meta++;
        }
        if (accept(j, '}')) return meta_unique(j, ck);
        if ((st = expect(j, ',')) != CK_OK) return st;
    }
}

static ck_status parse_tensor(jp *j, st_ctx *c, const char *name, size_t name_len) {
    int      shown = name_len > 120 ? 120 : (int)name_len;
    char     dtype[16];
    size_t   dl = 0;
    int64_t  shape[8], offs[2];
    int      ndim = -1, n_offs = -1, have_dtype = 0;
    ck_status st = expect(j, '{');
    if (st != CK_OK) return st;
    if (!accept(j, '}')) {
        for (;;) {
            char   field[32];
            size_t fl;
            if ((st = jstring(j, field, sizeof field, &fl)) != CK_OK || (st = expect(j, ':')) != CK_OK) return st;
            if (strcmp(field, "dtype") == 0 && fl == 5) {
                if (have_dtype) return jfail(j, "duplicate \"dtype\" in tensor '%.*s'", shown, name);
                if ((st = jstring(j, dtype, sizeof dtype, &dl)) != CK_OK) return st;
                have_dtype = 1;
            } else if (strcmp(field, "shape") == 0 && fl == 5) {
                if (ndim >= 0) return jfail(j, "duplicate \"shape\" in tensor '%.*s'", shown, name);
                if ((st = jint_array(j, shape, 8, &ndim)) != CK_OK) return st;
            } else if (strcmp(field, "data_offsets") == 0 && fl == 12) {
                if (n_offs >= 0) return jfail(j, "duplicate \"data_offsets\" in tensor '%.*s'", shown, name);
                if ((st = jint_array(j, offs, 2, &n_offs)) != CK_OK) return st;
            } else {
                return jfail(j, "unknown field '%.31s' in tensor '%.*s'", field, shown, name);
            }
            if (accept(j, '}')) break;
            if ((st = expect(j, ',')) != CK_OK) return st;
        }
    }
    const char *label = j->label;
    ck_err     *err   = j->err;
    if (!have_dtype || ndim < 0 || n_offs != 2)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' needs \"dtype\", \"shape\" and two \"data_offsets\"",
                        label, shown, name);
    ck_dtype dt = CK_DTYPE_COUNT;
    for (int k = 0; k < CK_DTYPE_COUNT; k++)
        if (dl < sizeof dtype && strcmp(dtype, k_dtype_names[k]) == 0) dt = (ck_dtype)k;
    if (dt == CK_DTYPE_COUNT)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has unsupported dtype '%.15s'", label, shown, name,
                        dtype);
    size_t nbytes;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has a negative dimension", label, shown, name);
    if (!ck__ckpt_nbytes(dt, ndim, shape, &nbytes))
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' shape overflows", label, shown, name);
    if (offs[0] < 0 || offs[1] < offs[0])
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has data_offsets [%lld, %lld] with begin > end", label,
                        shown, name, (long long)offs[0], (long long)offs[1]);
    uint64_t b = (uint64_t)offs[0], e = (uint64_t)offs[1];
    if (e > c->data_size)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: truncated: tensor '%.*s' data_offsets [%llu, %llu] past the end of the %llu-byte data section",
                        label, shown, name, (unsigned long long)b, (unsigned long long)e,
                        (unsigned long long)c->data_size);
    if (e - b != nbytes)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: tensor '%.*s' spans %llu bytes but %s%s needs %zu", label, shown, name,
                        (unsigned long long)(e - b), k_dtype_names[dt], ndim ? " of its shape" : " scalar", nbytes);
    if (c->n_ranges == c->ranges_cap) {
        int    ncap = c->ranges_cap ? c->ranges_cap * 2 : 64;
        range *r    = realloc(c->ranges, (size_t)ncap * sizeof *r);
        if (!r) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", label);
        c->ranges     = r;
        c->ranges_cap = ncap;
    }
    c->ranges[c->n_ranges++] = (range){b, e, c->ck->n_tensors};
    return ck__ckpt_add(c->ck, &c->cap, name, name_len, dt, ndim, shape, (size_t)(c->data_start + b), nbytes, label,
                        err);
}

static int cmp_range(const void *a, const void *b) {
    const range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

ck_status ck__safetensors_load(ck_checkpoint *ck, const char *label, ck_err *err) {
    const uint8_t *m = ck->map;
    size_t         n = ck->map_size;
    if (n < 8)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated: %zu bytes is too small for a checkpoint", label, n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | m[i];
    if (hlen > MAX_HEADER)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: not a torch zip archive, and the safetensors header length %llu is implausible (over 100 MB)",
                        label, (unsigned long long)hlen);
    if (hlen > n - 8)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: truncated: safetensors header of %llu bytes extends past end of file (%zu bytes)", label,
                        (unsigned long long)hlen, n);
    jp j = {(const char *)m + 8, (const char *)m + 8, (const char *)m + 8 + hlen, label, err};
    st_ctx c = {0};
    c.ck         = ck;
    c.data_start = 8 + hlen;
    c.data_size  = n - 8 - hlen;
    ck_status st = CK_OK;
    ws(&j);
    if (j.p >= j.end || *j.p != '{') {
        st = jfail(&j, "not a JSON object (is this a safetensors file?)");
        goto done;
    }
    j.p++;
    if (!accept(&j, '}')) {
        for (;;) {
            char   name[NAME_BUF];
            size_t nl;
            if ((st = jstring(&j, name, sizeof name, &nl)) != CK_OK || (st = expect(&j, ':')) != CK_OK) goto done;
            if (nl >= sizeof name) {
                st = jfail(&j, "tensor name of %zu bytes is too long", nl);
                goto done;
            }
            if (strcmp(name, "__metadata__") == 0) {
                if (c.seen_meta++) st = jfail(&j, "duplicate \"__metadata__\"");
                else st = parse_metadata(&j, &c);
            } else {
                st = parse_tensor(&j, &c, name, nl);
            }
            if (st != CK_OK) goto done;
            if (accept(&j, '}')) break;
            if ((st = expect(&j, ',')) != CK_OK) goto done;
        }
    }
    ws(&j);
    if (j.p != j.end) {
        st = jfail(&j, "unexpected data after the JSON object");
        goto done;
    }
    /* Overlapping tensors would alias each other's data: a corrupt or hand-edited header. */
    if (c.n_ranges > 1) qsort(c.ranges, (size_t)c.n_ranges, sizeof *c.ranges, cmp_range);
    uint64_t prev_end = 0;
    int      prev     = -1;
    for (int i = 0; i < c.n_ranges; i++) {
        const range *r = &c.ranges[i];
        if (r->begin == r->end) continue;
        if (prev >= 0 && r->begin < prev_end) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: tensors '%s' and '%s' overlap in the data section", label,
                          ck->tensors[prev].name, ck->tensors[r->idx].name);
            goto done;
        }
        prev_end = r->end;
        prev     = r->idx;
    }
done:
    free(c.ranges);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* Writer                                                                                           */

typedef struct sbuf {
    char  *s;
    size_t n, cap;
    int    oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s   = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(sbuf *b, const char *fmt, ...) CK_PRINTF(2, 3);
static void sb_fmt(sbuf *b, const char *fmt, ...) {
    char    tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static void sb_json(sbuf *b, const char *s, size_t n) {
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            sb_put(b, esc, 2);
        } else if (ch < 0x20) {
            sb_fmt(b, "\\u%04x", ch);
        } else {
            sb_put(b, (const char *)&ch, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static int write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n) {
        ssize_t k = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

static int cmp_tensor_ptr(const void *a, const void *b) {
    return strcmp((*(const ck_ckpt_tensor *const *)a)->name, (*(const ck_ckpt_tensor *const *)b)->name);
}

ck_status ck_safetensors_write(const char *path, const ck_ckpt_tensor *tensors, int n, const ck_ckpt_meta *meta,
                               int n_meta, ck_err *err) {
    if (!path || n < 0 || n_meta < 0 || (n > 0 && !tensors) || (n_meta > 0 && !meta))
        return ck__fail(err, CK_STATUS_EINVAL, "%s: bad arguments to ck_safetensors_write", path ? path : "(null)");
    for (int i = 0; i < n; i++) {
        const ck_ckpt_tensor *t = &tensors[i];
        size_t                nb;
        if (!memchr(t->name, '\0', sizeof t->name) || t->name[0] == '\0')
            return ck__fail(err, CK_STATUS_EINVAL, "%s: tensor %d has an empty or unterminated name", path, i);
        if ((unsigned)t->dtype >= CK_DTYPE_COUNT || t->ndim < 0 || t->ndim > 8 ||
            !ck__ckpt_nbytes(t->dtype, t->ndim, t->shape, &nb) || nb != t->nbytes || (nb && !t->data))
            return ck__fail(err, CK_STATUS_EINVAL, "%s: tensor '%s' has a bad dtype, shape, byte count or data", path,
                            t->name);
    }
    for (int i = 0; i < n_meta; i++)
        if (!memchr(meta[i].key, '\0', sizeof meta[i].key) || !memchr(meta[i].value, '\0', sizeof meta[i].value))
            return ck__fail(err, CK_STATUS_EINVAL, "%s: metadata entry %d is not NUL-terminated", path, i);

    int                    *order  = malloc((size_t)(n ? n : 1) * sizeof *order);
    uint64_t               *offs   = malloc((size_t)(n ? n : 1) * sizeof *offs);
    const ck_ckpt_tensor  **byname = malloc((size_t)(n ? n : 1) * sizeof *byname);
    sbuf      hb   = {0};
    ck_status st   = CK_OK;
    int       fd   = -1;
    char      tmp[600];
    tmp[0] = '\0';
    if (!order || !offs || !byname) {
        st = ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < n; i++) byname[i] = &tensors[i];
    qsort(byname, (size_t)n, sizeof *byname, cmp_tensor_ptr);
    for (int i = 1; i < n; i++)
        if (strcmp(byname[i - 1]->name, byname[i]->name) == 0) {
            st = ck__fail(err, CK_STATUS_EINVAL, "%s: duplicate tensor name '%s'", path, byname[i]->name);
            goto done;
        }
    /* data layout: element sizes 8, 4, 2, 1 in turn, given order within each */
    int      k   = 0;
    uint64_t pos = 0;
    for (size_t es = 8; es >= 1; es /= 2)
        for (int i = 0; i < n; i++)
            if (ck_dtype_size(tensors[i].dtype) == es) {
                order[k++] = i;
                offs[i]    = pos;
                pos += tensors[i].nbytes;
            }
    CK_ASSERT(k == n);

    sb_str(&hb, "{");
    if (n_meta > 0) {
        sb_str(&hb, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) sb_str(&hb, ",");
            sb_json(&hb, meta[i].key, strlen(meta[i].key));
            sb_str(&hb, ":");
            sb_json(&hb, meta[i].value, strlen(meta[i].value));
        }
        sb_str(&hb, "}");
    }
    for (int i = 0; i < n; i++) {
        const ck_ckpt_tensor *t = &tensors[i];
        if (i || n_meta > 0) sb_str(&hb, ",");
        sb_json(&hb, t->name, strlen(t->name));
        sb_fmt(&hb, ":{\"dtype\":\"%s\",\"shape\":[", k_dtype_names[t->dtype]);
        for (int d = 0; d < t->ndim; d++) sb_fmt(&hb, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        sb_fmt(&hb, "],\"data_offsets\":[%llu,", (unsigned long long)offs[i]);
        sb_fmt(&hb, "%llu]}", (unsigned long long)(offs[i] + t->nbytes));
    }
    sb_str(&hb, "}");
    while ((8 + hb.n) % 8) sb_str(&hb, " "); /* the data section starts 8-byte aligned */
    if (hb.oom) {
        st = ck__fail(err, CK_STATUS_EOOM, "%s: out of memory building the header", path);
        goto done;
    }

    /* a fresh name per attempt: O_EXCL never reuses a file another writer is filling */
    static unsigned counter;
    for (int attempt = 0; attempt < 64 && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        st = ck__fail(err, CK_STATUS_EIO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        tmp[0] = '\0';
        goto done;
    }
    uint8_t  len8[8];
    uint64_t hl = hb.n;
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    int ok = write_all(fd, len8, 8) && write_all(fd, hb.s, hb.n);
    for (int i = 0; ok && i < n; i++) ok = write_all(fd, tensors[order[i]].data, tensors[order[i]].nbytes);
    if (ok) ok = fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e  = errno;
    }
    fd = -1;
    if (!ok) {
        st = ck__fail(err, CK_STATUS_EIO, "%s: write failed: %s", path, strerror(e));
        goto done;
    }
    if (rename(tmp, path) != 0) {
        st = ck__fail(err, CK_STATUS_EIO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        goto done;
    }
    tmp[0] = '\0';
done:
    if (fd >= 0) close(fd);
    if (tmp[0]) unlink(tmp);
    free(order);
    free(offs);
    free(byname);
    free(hb.s);
    return st;
}
