/* Replays files through one harness's LLVMFuzzerTestOneInput without libFuzzer (any compiler): the
 * crashers corpus as a regression test (ctest crashers_replay), or a crash file found by a fuzzer.
 *
 *     replay_jpeg tests/crashers [more files or folders]
 *
 * Memory is bounded: the address space is limited to 2 GB first (RLIMIT_AS; under AddressSanitizer, whose
 * shadow memory needs terabytes of address space, ASAN_OPTIONS=hard_rss_limit_mb does it), and a loader
 * that reports an allocation failure fails the replay: no input of the corpus may need that much.
 * Folders are read recursively, files in name order. Exit status 1 when any input failed.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define REPLAY_AS_LIMIT ((rlim_t)2 << 30)

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

typedef struct paths {
    char **v;
    size_t n, cap;
} paths;

static void add_path(paths *p, const char *s) {
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v   = realloc(p->v, p->cap * sizeof *p->v);
        if (!p->v) abort();
    }
    p->v[p->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void collect(paths *p, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: cannot stat\n", path);
        add_path(p, path); /* reported as unreadable below */
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        add_path(p, path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden files (.gitattributes) */
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        collect(p, sub);
    }
    closedir(d);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *b   = NULL;
    size_t   cap = 0;
    *n           = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4096;
            b   = realloc(b, cap);
            if (!b) abort();
        }
        size_t k = fread(b + *n, 1, cap - *n, f);
        if (k == 0) break;
        *n += k;
    }
    fclose(f);
    /* an exact-size copy, as libFuzzer passes it, so that a sanitizer sees a read past the end */
    uint8_t *exact = malloc(*n ? *n : 1);
    if (!exact) abort();
    memcpy(exact, b, *n);
    free(b);
    return exact;
}

int main(int argc, char **argv) {
#ifndef REPLAY_ASAN
    struct rlimit lim = {REPLAY_AS_LIMIT, REPLAY_AS_LIMIT};
    if (setrlimit(RLIMIT_AS, &lim) != 0) perror("replay: setrlimit(RLIMIT_AS)");
#endif
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    paths p = {0};
    for (int i = 1; i < argc; i++) collect(&p, argv[i]);
    if (p.n > 1) qsort(p.v, p.n, sizeof *p.v, cmp_str);
    int failed = 0;
    for (size_t i = 0; i < p.n; i++) {
        size_t   n;
        uint8_t *data = slurp(p.v[i], &n);
        if (!data) {
            printf("FAIL   %s: cannot read\n", p.v[i]);
            failed++;
            continue;
        }
        printf("run    %s\n", p.v[i]); /* the input's name is out before it runs, should it crash */
        fflush(stdout);
        memset(&ck_fuzz_err, 0, sizeof ck_fuzz_err);
        ck_fuzz_status = CK_OK;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        LLVMFuzzerTestOneInput(data, n);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double ms  = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        const int    bad = ck_fuzz_status == CK_STATUS_EOOM;
        failed += bad;
        printf("%-6s %s (%zu bytes, %.1f ms): %s\n", bad ? "FAIL" : "ok", p.v[i], n, ms,
               ck_fuzz_status == CK_OK ? "loaded" : ck_fuzz_err.msg);
        free(data);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s: %zu inputs, %d failed, peak RSS %.0f MB\n", failed ? "FAIL" : "PASS", p.n, failed,
           (double)ru.ru_maxrss / 1024.0);
    for (size_t i = 0; i < p.n; i++) free(p.v[i]);
    free(p.v);
    return failed ? 1 : 0;
}
