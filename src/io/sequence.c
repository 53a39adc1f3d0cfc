#define _GNU_SOURCE /* qsort_r */
/* Frame-sequence folders (see sequence.h). */
#include "ckey_io.h"
#include "core/check.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int ck_natural_cmp(const char *a, const char *b) {
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0') a++; /* compare digit runs by value: skip leading zeros, then length, then digits */
            while (*b == '0') b++;
            const char *ea = a, *eb = b;
            while (isdigit((unsigned char)*ea)) ea++;
            while (isdigit((unsigned char)*eb)) eb++;
            if (ea - a != eb - b) return ea - a < eb - b ? -1 : 1;
            const int c = strncmp(a, b, (size_t)(ea - a));
            if (c) return c;
            a = ea, b = eb;
            continue;
        }
        const int ca = tolower((unsigned char)*a), cb = tolower((unsigned char)*b);
        if (ca != cb) return ca < cb ? -1 : 1;
        a++, b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int image_ext(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    return !strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".exr") ||
           !strcasecmp(dot, ".tif") || !strcasecmp(dot, ".tiff") || !strcasecmp(dot, ".dpx");
}

/* Natural order, made total: names equal to it ("1.png" / "01.png", "a.png" / "A.png") by their bytes, so
 * the order never depends on the file system's. */
static int cmp_names(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    const int   c = ck_natural_cmp(x, y);
    return c ? c : strcmp(x, y);
}

static int cmp_stem_index(const void *a, const void *b, void *stems) {
    char **st = stems;
    return strcmp(st[*(const int *)a], st[*(const int *)b]);
}

ck_status ck_seq_list(ck_seq *seq, const char *dir, ck_err *err) {
    memset(seq, 0, sizeof *seq);
    DIR *d = opendir(dir);
    if (!d) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open folder: %s", dir, strerror(errno));
    char         **names = NULL;
    int            n = 0, cap = 0;
    struct dirent *e;
    int  ignored = 0;
    char ignored_names[256] = "";
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (!image_ext(e->d_name)) { /* named in a warning: a plate format this build does not read is no frame */
            char        p[4096];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                const size_t l = strlen(ignored_names);
                if (ignored++ < 3) snprintf(ignored_names + l, sizeof ignored_names - l, "%s%.60s", l ? ", " : "", e->d_name);
            }
            continue;
        }
        if (n == cap) {
            cap       = cap ? 2 * cap : 64;
            char **nn = realloc(names, sizeof *names * (size_t)cap);
            if (!nn) break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    seq->paths = calloc((size_t)(n ? n : 1), sizeof *seq->paths);
    seq->stems = calloc((size_t)(n ? n : 1), sizeof *seq->stems);
    if (!seq->paths || !seq->stems) {
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
        ck_seq_free(seq);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", dir);
    }
    for (int i = 0; i < n; i++) {
        const size_t len = strlen(dir) + strlen(names[i]) + 2;
        seq->paths[i]    = malloc(len);
        snprintf(seq->paths[i], len, "%s/%s", dir, names[i]);
        char *dot = strrchr(names[i], '.');
        if (dot) *dot = '\0';
        seq->stems[i] = names[i];
    }
    free(names);
    seq->n = n;
    if (ignored)
        CK_LOG_WARN("%s: %d file%s that %s not frames (.png, .jpg, .exr, .tif, .dpx) ignored: %s%s", dir, ignored,
                    ignored == 1 ? "" : "s", ignored == 1 ? "is" : "are", ignored_names, ignored > 3 ? ", ..." : "");
    /* two frames of one stem would be written to the same passes: an error naming both */
    int *idx = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!idx) {
        ck_seq_free(seq);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", dir);
    }
    for (int i = 0; i < n; i++) idx[i] = i;
    qsort_r(idx, (size_t)n, sizeof *idx, cmp_stem_index, seq->stems);
    for (int i = 1; i < n; i++)
        if (!strcmp(seq->stems[idx[i - 1]], seq->stems[idx[i]])) {
            ck_status st = ck__fail(err, CK_STATUS_EINVAL,
                                    "%s: %s and %s would both be written as '%s' (the same name without its "
                                    "extension): rename or remove one",
                                    dir, seq->paths[idx[i - 1]], seq->paths[idx[i]], seq->stems[idx[i]]);
            free(idx);
            ck_seq_free(seq);
            return st;
        }
    free(idx);
    return CK_OK;
}

void ck_seq_free(ck_seq *seq) {
    for (int i = 0; i < seq->n; i++) {
        free(seq->paths ? seq->paths[i] : NULL);
        free(seq->stems ? seq->stems[i] : NULL);
    }
    free(seq->paths);
    free(seq->stems);
    memset(seq, 0, sizeof *seq);
}

int ck_parse_frames(const char *s, int *first, int *last) {
    char *end;
    long  a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0) return 0;
    if (*end == '-') {
        const char *t = end + 1;
        b             = strtol(t, &end, 10);
        if (end == t) return 0;
    }
    if (*end || b < a || b > 100000000) return 0;
    *first = (int)a, *last = (int)b;
    return 1;
}

int ck_parse_shard(const char *s, int *index, int *count) {
    char *end;
    long  i = strtol(s, &end, 10);
    if (end == s || *end != '/') return 0;
    const char *t = end + 1;
    long        n = strtol(t, &end, 10);
    if (end == t || *end || n < 1 || i < 0 || i >= n || n > 1000000) return 0;
    *index = (int)i, *count = (int)n;
    return 1;
}

int ck_shard_range(int first, int last, int index, int count, int *shard_first) {
    const int total = last - first + 1, base = total / count, extra = total % count;
    *shard_first    = first + index * base + (index < extra ? index : extra);
    return base + (index < extra ? 1 : 0);
}
