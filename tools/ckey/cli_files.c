/* Small helpers of the key commands: the checkpoint search, file tests, the clock, the resume check with
 * its warning, and the failure and progress reports. The frame files themselves are the library's
 * (ckey_shot.h). */
#include "key.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int checkpoint_candidates(char out[][CK_PATH_MAX], int *from_env) {
    const char *env = getenv("CKEY_CHECKPOINT"), *home = getenv("HOME");
    int         n   = 0;
    *from_env       = env && *env;
    if (*from_env) snprintf(out[n++], CK_PATH_MAX, "%s", env);
    snprintf(out[n++], CK_PATH_MAX, "./CorridorKey.pth");
    if (home) snprintf(out[n++], CK_PATH_MAX, "%s/.cache/ckey/CorridorKey.pth", home);
    return n;
}

const char *default_checkpoint(char *buf, size_t n) {
    char      cand[3][CK_PATH_MAX];
    int       from_env;
    const int nc = checkpoint_candidates(cand, &from_env);
    for (int i = 0; i < nc; i++)
        if ((i == 0 && from_env) || file_exists(cand[i])) { /* $CKEY_CHECKPOINT is taken as given */
            snprintf(buf, n, "%s", cand[i]);
            return buf;
        }
    return NULL;
}

int frame_done(const key_opts *o, const char *stem) {
    char      why[CK_SHOT_PATH_MAX + 200];
    const int ok = ck_shot_frame_written(o->out, stem, o->p.comp, why, sizeof why);
    if (!ok && why[0]) fprintf(stderr, "ckey: warning: %s\n", why);
    return ok;
}

void json_failed(const key_opts *o, const char *msg, int code) {
    if (!o->json) return;
    printf("{\"event\": \"failed\", \"exit_code\": %d, \"message\": ", code);
    ck_cli_json_str(stdout, msg);
    printf("}\n");
    fflush(stdout);
}

/* Human progress: a redrawn bar on a terminal, one line per frame otherwise. */
void progress_human(int done_idx, int count, const char *stem, double fps, double eta) {
    if (isatty(2)) {
        const int width = 30, fill = count ? (int)((double)done_idx / count * width) : width;
        fprintf(stderr, "\r[");
        for (int i = 0; i < width; i++) fputc(i < fill ? '=' : ' ', stderr);
        fprintf(stderr, "] %d/%d  %.2f fps  ETA %.0f s  %-24.24s", done_idx, count, fps, eta, stem);
        if (done_idx == count) fputc('\n', stderr);
    } else {
        fprintf(stderr, "ckey: [%d/%d] %s  %.2f fps  ETA %.0f s\n", done_idx, count, stem, fps, eta);
    }
}
