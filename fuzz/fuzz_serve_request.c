/* libFuzzer harness: the request handling of `ckey serve` (tools/ckey/serve/serve_req.c), everything a client
 * controls before it reaches the file system or the keyer. The input's first line is a request target as sent
 * (path and query, before any decoding), the rest a relative path as /files/ would resolve it under a served
 * folder: a temporary tree with a file, a hidden file, a folder and a symbolic link to "/" (a way out).
 *
 * Beyond "no crash", each answer is checked (abort on a violation): a parsed target's path starts with '/' and
 * its query keys are non-empty and distinct; accepted settings lie in the ranges `ckey key` takes; a resolved
 * path is a regular file inside the served folder's realpath; the token comparison agrees with strcmp. */
#define _GNU_SOURCE /* nftw */
#include "fuzz_common.h"
#include "serve_req.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[PATH_MAX]; /* the served folder's realpath */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static void cleanup(void) { nftw(g_root, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

static void put(const char *rel, const char *text) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    FILE *f = fopen(p, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

static void setup(void) {
    char tmpl[] = "/tmp/ckey-fuzz-serve-XXXXXX", sub[PATH_MAX + 64];
    if (!mkdtemp(tmpl) || !realpath(tmpl, g_root)) abort();
    snprintf(sub, sizeof sub, "%s/Plate", g_root);
    mkdir(sub, 0700);
    put("Plate/0000.png", "a frame\n");
    put(".hidden", "hidden\n");
    snprintf(sub, sizeof sub, "%s/link", g_root);
    if (symlink("/", sub) != 0) abort();
    atexit(cleanup);
}

static void check_settings(const sv_req *r) {
    sv_settings s = {512, 0, 0, 3, 0.5f, 1, 400, 1.0f}, before = s;
    char        why[256];
    if (sv_settings_from_query(r, &s, why, sizeof why) != 0) {
        CK_ASSERT(!memcmp(&s, &before, sizeof s)); /* a refused query changes nothing */
        return;
    }
    CK_ASSERT(s.size >= 32 && s.size <= 16384 && s.size % 32 == 0);
    CK_ASSERT(s.tile == 0 || (s.tile >= 32 && s.tile <= 16384 && s.tile % 32 == 0));
    CK_ASSERT(s.tile ? s.overlap >= 0 && s.overlap < s.tile : s.overlap == 0);
    CK_ASSERT(s.despill >= 0.0f && s.despill <= 1.0f && s.refiner_scale >= -100.0f && s.refiner_scale <= 100.0f);
    CK_ASSERT((s.despeckle == 0 || s.despeckle == 1) && s.despeckle_size >= 1 && s.precision >= 0 && s.precision <= 3);
}

static void check_resolve(const char *rel) {
    char      out[PATH_MAX], why[256];
    const int st = sv_resolve(g_root, rel, out, sizeof out, why, sizeof why);
    CK_ASSERT(st == 0 || st == 400 || st == 403 || st == 404);
    if (st) return;
    const size_t rl = strlen(g_root);
    struct stat  sb;
    CK_ASSERT(!strncmp(out, g_root, rl) && out[rl] == '/' && !strstr(out + rl, "/."));
    CK_ASSERT(stat(out, &sb) == 0 && S_ISREG(sb.st_mode));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_root[0]) setup();
    ck_fuzz_quiet();
    char         target[SV_TARGET_MAX + 16], rel[PATH_MAX];
    const void  *nl = memchr(data, '\n', size);
    const size_t tn = nl ? (size_t)((const uint8_t *)nl - data) : size;
    const size_t rn = nl ? size - tn - 1 : 0;
    snprintf(target, sizeof target, "%.*s", (int)(tn < sizeof target - 1 ? tn : sizeof target - 1), (const char *)data);
    snprintf(rel, sizeof rel, "%.*s", (int)(rn < sizeof rel - 1 ? rn : sizeof rel - 1), nl ? (const char *)nl + 1 : "");

    static sv_req r; /* 14 KB */
    char          why[256];
    const int     st = sv_req_parse(target, &r, why, sizeof why);
    CK_ASSERT(st == 0 || st == 400 || st == 414);
    if (st == 0) {
        CK_ASSERT(r.path[0] == '/' && strlen(r.path) < SV_PATH_MAX && r.nq >= 0 && r.nq <= SV_PARAMS_MAX);
        for (int i = 0; i < r.nq; i++) {
            CK_ASSERT(r.q[i].key[0] != '\0');
            for (int j = 0; j < i; j++) CK_ASSERT(strcmp(r.q[i].key, r.q[j].key) != 0);
        }
        check_settings(&r);
        (void)sv_req_only(&r, "shot,frame," SV_SETTINGS_KEYS, why, sizeof why);
        long v = 0;
        if (sv_query_int(&r, "frame", 0, 1000, &v, why, sizeof why) == 0) CK_ASSERT(v >= 0 && v <= 1000);
        if (!strncmp(r.path, "/files/0/", 9)) check_resolve(r.path + 9);
        const char *tok = sv_query(&r, "token");
        if (tok) CK_ASSERT(sv_token_equal(tok, "0123456789abcdef") == !strcmp(tok, "0123456789abcdef"));
    }
    check_resolve(rel);
    CK_ASSERT(sv_token_equal(rel, target) == !strcmp(rel, target));
    ck_fuzz_status = st ? CK_STATUS_EINVAL : CK_OK;
    return 0;
}
