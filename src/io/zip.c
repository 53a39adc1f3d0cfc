/* Zip archive index for torch.save checkpoints (PKWARE APPNOTE 6.3: end record, zip64 end record and
 * locator, central directory, local headers, zip64 extra field 0x0001).
 *
 * Rules kept here: every offset read from the file is checked against the buffer size before it is
 * dereferenced, with overflow-safe arithmetic; the central directory is the authority for sizes
 * (torch sets the data-descriptor flag, so local headers carry zero sizes); nothing is decompressed.
 */
#include "io/zip.h"

#include <stdlib.h>
#include <string.h>

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64   0x06064b50u
#define SIG_LOC64   0x07064b50u

#define END_SIZE    22
#define END64_SIZE  56
#define LOC64_SIZE  20
#define CENTRAL_SIZE 46
#define LOCAL_SIZE  30
#define MAX_COMMENT 65535
#define MAX_ENTRIES (1 << 22) /* far above any checkpoint; bounds the index allocation */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

/* [off, off+len) lies inside [0, size) */
static int in_range(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* Printable prefix length for names quoted in messages. */
static int shown(size_t n) { return n > 120 ? 120 : (int)n; }

static int cmp_name(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

typedef struct span {
    uint64_t start, end;
    int      idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

typedef struct name_ref {
    const char *name;
    size_t      len;
    int         idx;
} name_ref;

static int cmp_ref(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    int c = cmp_name(x->name, x->len, y->name, y->len);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Locates the end-of-central-directory record: the last signature whose comment ends inside the file. */
static int find_end(const uint8_t *buf, size_t size, size_t *pos) {
    if (size < END_SIZE) return 0;
    size_t lo = size - END_SIZE > MAX_COMMENT ? size - END_SIZE - MAX_COMMENT : 0;
    for (size_t p = size - END_SIZE + 1; p-- > lo;) {
        if (rd32(buf + p) == SIG_END && p + END_SIZE + rd16(buf + p + 20) <= size) {
            *pos = p;
            return 1;
        }
    }
    return 0;
}

ck_status ck_zip_open(ck_zip *z, const uint8_t *buf, size_t size, const char *label, ck_err *err) {
    memset(z, 0, sizeof *z);
    size_t end;
    if (!find_end(buf, size, &end))
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: truncated or not a zip archive: no end-of-central-directory record", label);
    const uint8_t *e      = buf + end;
    uint64_t       disk   = rd16(e + 4), cd_disk = rd16(e + 6);
    uint64_t       n_this = rd16(e + 8), n_total = rd16(e + 10);
    uint64_t       cd_size = rd32(e + 12), cd_off = rd32(e + 16);
    uint64_t       cd_limit = end; /* the central directory ends before the end record(s) */

    if (end >= LOC64_SIZE && rd32(buf + end - LOC64_SIZE) == SIG_LOC64) {
        const uint8_t *loc   = buf + end - LOC64_SIZE;
        uint64_t       e64   = rd64(loc + 8);
        if (rd32(loc + 4) != 0 || rd32(loc + 16) > 1)
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: multi-disk zip archives are not supported", label);
        if (!in_range(e64, END64_SIZE, end - LOC64_SIZE))
            return ck__fail(err, CK_STATUS_EFORMAT,
                            "%s: truncated: zip64 end record offset %llu outside the file", label,
                            (unsigned long long)e64);
        const uint8_t *r = buf + e64;
        if (rd32(r) != SIG_END64)
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: bad zip64 end record signature at offset %llu",
                            label, (unsigned long long)e64);
        disk     = rd32(r + 16);
        cd_disk  = rd32(r + 20);
        n_this   = rd64(r + 24);
        n_total  = rd64(r + 32);
        cd_size  = rd64(r + 40);
        cd_off   = rd64(r + 48);
        cd_limit = e64;
    }
    if (disk != 0 || cd_disk != 0 || n_this != n_total)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: multi-disk zip archives are not supported", label);
    if (!in_range(cd_off, cd_size, size))
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: truncated: zip central directory [%llu, +%llu) extends past end of file (%zu bytes)",
                        label, (unsigned long long)cd_off, (unsigned long long)cd_size, size);
    if (cd_off + cd_size > cd_limit)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: zip central directory overlaps the end record", label);
    if (n_total > cd_size / CENTRAL_SIZE || n_total > MAX_ENTRIES)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: zip claims %llu entries in a %llu-byte central directory",
                        label, (unsigned long long)n_total, (unsigned long long)cd_size);

    int n = (int)n_total;
    z->entries = calloc(n ? (size_t)n : 1, sizeof *z->entries);
    z->by_name = calloc(n ? (size_t)n : 1, sizeof *z->by_name);
    name_ref *refs  = calloc(n ? (size_t)n : 1, sizeof *refs);
    span     *spans = calloc(n ? (size_t)n : 1, sizeof *spans); /* each record, local header to data end */
    if (!z->entries || !z->by_name || !refs || !spans) {
        free(refs), free(spans);
        ck_zip_close(z);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory indexing %d zip entries", label, n);
    }

    ck_status      st  = CK_OK;
    const uint8_t *p   = buf + cd_off;
    const uint8_t *cde = buf + cd_off + cd_size;
    for (int i = 0; i < n; i++) {
        if ((size_t)(cde - p) < CENTRAL_SIZE || rd32(p) != SIG_CENTRAL) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: bad zip central directory entry %d at offset %zu", label,
                          i, (size_t)(p - buf));
            goto done;
        }
        uint16_t flags = rd16(p + 8), method = rd16(p + 10);
        uint64_t csize = rd32(p + 20), usize = rd32(p + 24), lho = rd32(p + 42);
        uint64_t edisk = rd16(p + 34);
        size_t   nlen = rd16(p + 28), xlen = rd16(p + 30), clen = rd16(p + 32);
        if ((size_t)(cde - p) - CENTRAL_SIZE < nlen + xlen + clen) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated: zip central directory entry %d overruns the directory",
                          label, i);
            goto done;
        }
        const char    *name = (const char *)p + CENTRAL_SIZE;
        const uint8_t *x = p + CENTRAL_SIZE + nlen, *xe = x + xlen;
        while (xe - x >= 4) {
            uint16_t id = rd16(x), sz = rd16(x + 2);
            if ((size_t)(xe - x) - 4 < sz) break; /* a torn trailing extra block is ignored, like other readers */
            if (id == 0x0001) {
                const uint8_t *f = x + 4, *fe = x + 4 + sz;
                uint64_t      *want[3] = {&usize, &csize, &lho};
                for (int k = 0; k < 3; k++) {
                    if (*want[k] != 0xFFFFFFFFu) continue;
                    if (fe - f < 8) {
                        st = ck__fail(err, CK_STATUS_EFORMAT, "%s: bad zip64 extra field in entry '%.*s'", label,
                                      shown(nlen), name);
                        goto done;
                    }
                    *want[k] = rd64(f);
                    f += 8;
                }
                if (edisk == 0xFFFF && fe - f >= 4) edisk = rd32(f);
            }
            x += 4 + (size_t)sz;
        }
        if (edisk != 0) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: multi-disk zip archives are not supported", label);
            goto done;
        }
        if (flags & 1) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: zip entry '%.*s' is encrypted", label, shown(nlen), name);
            goto done;
        }
        if (method == 0 && csize != usize) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: stored zip entry '%.*s' has size %llu but %llu stored bytes",
                          label, shown(nlen), name, (unsigned long long)usize, (unsigned long long)csize);
            goto done;
        }
        if (!in_range(lho, LOCAL_SIZE, size) || rd32(buf + lho) != SIG_LOCAL) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: zip entry '%.*s': no local header at offset %llu", label,
                          shown(nlen), name, (unsigned long long)lho);
            goto done;
        }
        const uint8_t *lh   = buf + lho;
        uint64_t       lnl  = rd16(lh + 26), lxl = rd16(lh + 28);
        uint64_t       doff = lho + LOCAL_SIZE + lnl + lxl; /* < 2^64: lho < size and the rest < 2^17 */
        if (lnl != nlen || !in_range(lho + LOCAL_SIZE, lnl, size) || memcmp(lh + LOCAL_SIZE, name, nlen) != 0) {
            st = ck__fail(err, CK_STATUS_EFORMAT,
                          "%s: zip entry '%.*s': local header name differs from the central directory", label,
                          shown(nlen), name);
            goto done;
        }
        if (!in_range(doff, csize, size)) {
            st = ck__fail(err, CK_STATUS_EFORMAT,
                          "%s: truncated: zip entry '%.*s' data [%llu, +%llu) extends past end of file (%zu bytes)",
                          label, shown(nlen), name, (unsigned long long)doff, (unsigned long long)csize, size);
            goto done;
        }
        ck_zip_entry *ze = &z->entries[i];
        ze->name         = name;
        ze->name_len     = nlen;
        ze->method       = method;
        ze->data         = buf + doff;
        ze->size         = (size_t)csize;
        ze->offset       = (size_t)doff;
        ze->crc32        = rd32(p + 16);
        refs[i]          = (name_ref){name, nlen, i};
        spans[i]         = (span){lho, doff + csize, i};
        p += CENTRAL_SIZE + nlen + xlen + clen;
    }
    /* records share no byte with one another or with the central directory (overlapping records would let
     * one tensor's bytes be read as another's) */
    qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    for (int i = 0; i < n; i++)
        if ((i > 0 && spans[i].start < spans[i - 1].end) || spans[i].end > cd_off) {
            const ck_zip_entry *ov = &z->entries[spans[i].idx];
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: zip entry '%.*s' overlaps %s", label, shown(ov->name_len), ov->name,
                          spans[i].end > cd_off ? "the central directory" : "another entry");
            goto done;
        }
    z->n = n;
    qsort(refs, (size_t)n, sizeof *refs, cmp_ref);
    for (int i = 0; i < n; i++) {
        if (i > 0 && cmp_name(refs[i - 1].name, refs[i - 1].len, refs[i].name, refs[i].len) == 0) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: duplicate zip entry '%.*s'", label, shown(refs[i].len),
                          refs[i].name);
            goto done;
        }
        z->by_name[i] = refs[i].idx;
    }
done:
    free(refs), free(spans);
    if (st != CK_OK) ck_zip_close(z);
    return st;
}

const ck_zip_entry *ck_zip_find(const ck_zip *z, const char *name, size_t name_len) {
    int lo = 0, hi = z->n;
    while (lo < hi) {
        int                 mid = lo + (hi - lo) / 2;
        const ck_zip_entry *e   = &z->entries[z->by_name[mid]];
        int                 c   = cmp_name(e->name, e->name_len, name, name_len);
        if (c == 0) return e;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

void ck_zip_close(ck_zip *z) {
    free(z->entries);
    free(z->by_name);
    memset(z, 0, sizeof *z);
}

uint32_t ck_crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}
