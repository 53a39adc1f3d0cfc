/* The shot API (include/ckey_shot.h) where `ckey key`'s tests do not reach it: frame events in order with
 * their files and counts (ordered_events), the cancel hook stopping between frames with complete sets only,
 * ranges refused, a shot keyed once, the resume check naming a pass that does not decode, the sweep of dead
 * processes' partial files (a live process's kept). Plates are written here (8-bit PNG); the tiny fixture
 * model keys them at S = 128 on the CPU. */
#include "ckey.h"
#include "ckey_shot.h"
#include "harness.h"
#include "io/image.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_FRAMES = 5, W = 72, H = 40 };

typedef struct events {
    int  n, skipped, warnings, auto_hint;
    int  frame[16], done[16], npaths[16];
    int  files_there; /* every reported path existed when reported */
    int  polls;         /* times the cancel hook was asked */
    int  cancel_at_poll; /* the hook answers 1 from this call on (0: never) */
    char stem[16][32];
} events;

static void on_event(void *user, const ck_shot_event *ev) {
    events *e = user;
    if (ev->kind == CK_SHOT_WARNING) {
        e->warnings++;
        e->auto_hint += ev->warning == CK_SHOT_WARN_AUTO_HINT;
        return;
    }
    if (e->n >= 16) return;
    e->frame[e->n] = ev->frame, e->done[e->n] = ev->done, e->npaths[e->n] = ev->npaths;
    snprintf(e->stem[e->n], sizeof e->stem[0], "%s", ev->stem);
    for (int i = 0; i < ev->npaths; i++) {
        struct stat st;
        if (stat(ev->paths[i], &st) != 0 || st.st_size == 0) e->files_there = 0;
    }
    e->skipped += ev->skipped;
    e->n++;
}

/* Counts its calls rather than frames done: how far the writers are when the network asks depends on the
 * machine's load, the number of times the hook is asked does not (once before loading, once before each frame). */
static int on_cancelled(void *user) {
    events *e = user;
    e->polls++;
    return e->cancel_at_poll > 0 && e->polls >= e->cancel_at_poll;
}

/* Files in dir (hidden ones too), and how many of them start with '.'. */
static int count_files(const char *dir, int *hidden) {
    DIR *d = opendir(dir);
    int  n = 0;
    if (hidden) *hidden = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            n++;
            if (hidden && e->d_name[0] == '.') (*hidden)++;
        }
    closedir(d);
    return n;
}

static void write_plates(const char *dir) {
    ck_shot_mkdirs(dir);
    float *px = malloc(sizeof(float) * 3 * W * H);
    for (int f = 0; f < N_FRAMES; f++) {
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) { /* a grey square on green, moving */
                const int   in = x > 10 + 4 * f && x < 40 + 4 * f && y > 8 && y < 30;
                float      *p  = px + 3 * (y * W + x);
                p[0] = in ? 0.6f : 0.1f, p[1] = in ? 0.6f : 0.8f, p[2] = in ? 0.6f : 0.15f;
            }
        char path[512];
        snprintf(path, sizeof path, "%s/f%d.png", dir, f + 1); /* f1 .. f5, natural order */
        ck_image img = {W, H, 3, px};
        ck_err   err = {{0}};
        CHECK(ck_image_write_png8(path, &img, &err) == CK_OK);
    }
    free(px);
}

static ck_shot *open_shot(const char *plates, const char *out, events *e) {
    ck_shot_opts o = ck_shot_opts_default();
    o.image = plates, o.out = out, o.ordered_events = 1, o.workers = 3, o.readers = 2;
    o.user = e, o.event = on_event, o.cancelled = on_cancelled;
    ck_shot *s = NULL;
    const ck_status st = ck_shot_open(&s, &o);
    CHECK_MSG(st == CK_OK, "%s", ck_shot_last_error(s));
    return s;
}

int main(void) {
    char model[1024], tmp[900], plates[1000], out[1000], path[1200];
    test_path(model, sizeof model, "CK_FIXTURES", "tiny/s128/model.safetensors");
    snprintf(tmp, sizeof tmp, "%s/shot_%d", getenv("CK_TMP") ? getenv("CK_TMP") : "/tmp", (int)getpid());
    snprintf(plates, sizeof plates, "%s/plates", tmp);
    write_plates(plates);
    ck_set_log(NULL, NULL, CK_LOG_ERROR);
    ck_params p = ck_params_default();
    p.size = 128, p.device = CK_DEVICE_CPU, p.threads = 2;
    ck_ctx *ctx = NULL;
    if (ck_ctx_init(&ctx, model, &p) != CK_OK) {
        fprintf(stderr, "NOT OK: %s\n", ck_ctx_last_error(ctx));
        return 1;
    }

    /* a whole shot: one event per frame, in order, done counting up, its four files there */
    events e = {.files_there = 1};
    snprintf(out, sizeof out, "%s/all", tmp);
    ck_shot *s = open_shot(plates, out, &e);
    CHECK(ck_shot_frames(s) == N_FRAMES && !strcmp(ck_shot_stem(s, 1), "f2") && !strcmp(ck_shot_name(s), "plates"));
    CHECK(ck_shot_stem(s, N_FRAMES) == NULL);
    ck_shot_stats st;
    CHECK(ck_shot_key(s, ctx, &st) == CK_OK);
    CHECK(st.frames == N_FRAMES && st.skipped == 0 && !st.cancelled && st.workers == 3 && st.readers == 2);
    CHECK_MSG(e.n == N_FRAMES, "%d events", e.n);
    for (int i = 0; i < e.n; i++) {
        char want[8];
        snprintf(want, sizeof want, "f%d", i + 1);
        CHECK_MSG(e.frame[i] == i && e.done[i] == i + 1 && e.npaths[i] == 4 && !strcmp(e.stem[i], want),
                  "event %d: frame %d done %d paths %d stem %s", i, e.frame[i], e.done[i], e.npaths[i], e.stem[i]);
    }
    CHECK(e.files_there && e.auto_hint == 1 && e.warnings == 1); /* no hint: said once */
    /* keyed once: the second call is refused */
    CHECK(ck_shot_key(s, ctx, &st) == CK_STATUS_EBADSTATE && strstr(ck_shot_last_error(s), "once"));
    ck_shot_free(s);
    snprintf(path, sizeof path, "%s/Comp", out);
    int hidden;
    CHECK(count_files(path, &hidden) == N_FRAMES && hidden == 0);

    /* cancelled before the third frame (the hook's fourth call): no frame starts after the hook says so, it is
     * not asked again, and the frames keyed before it are complete sets */
    events c = {.files_there = 1, .cancel_at_poll = 4};
    snprintf(out, sizeof out, "%s/cancel", tmp);
    s = open_shot(plates, out, &c);
    CHECK(ck_shot_key(s, ctx, &st) == CK_OK && st.cancelled);
    CHECK_MSG(st.frames == 2 && c.n == 2 && c.polls == 4, "%d frames, %d events, %d polls", st.frames, c.n, c.polls);
    static const char *dirs[4] = {"Matte", "FG", "Processed", "Comp"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", out, dirs[i]);
        CHECK_MSG(count_files(path, &hidden) == st.frames && hidden == 0, "%s", dirs[i]);
    }
    CHECK(ck_shot_encode_pending(s, NULL) == CK_OK);
    ck_shot_free(s);

    /* ranges */
    events r = {.files_there = 1};
    snprintf(out, sizeof out, "%s/range", tmp);
    s = open_shot(plates, out, &r);
    CHECK(ck_shot_select(s, 3, 3) == CK_STATUS_EINVAL && strstr(ck_shot_last_error(s), "frames 3-5 are outside the shot's 0-4"));
    CHECK(ck_shot_select(s, 0, 0) == CK_STATUS_EINVAL);
    CHECK(ck_shot_select(s, 3, 2) == CK_OK && ck_shot_key(s, ctx, &st) == CK_OK && st.frames == 2);
    CHECK(r.n == 2 && r.frame[0] == 3 && r.frame[1] == 4 && r.done[1] == 2 && r.auto_hint == 1);
    ck_shot_free(s);

    /* the resume check: a pass that does not decode is named; a complete frame is written */
    char why[600];
    snprintf(out, sizeof out, "%s/all", tmp);
    CHECK(ck_shot_frame_written(out, "f1", 1, why, sizeof why) == 1 && why[0] == '\0');
    CHECK(ck_shot_frame_written(out, "f9", 1, why, sizeof why) == 0 && why[0] == '\0');
    snprintf(path, sizeof path, "%s/FG/f2.exr", out);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite("v/1\001", 1, 4, f) == 4); /* EXR's magic, then nothing */
    if (f) fclose(f);
    CHECK(ck_shot_frame_written(out, "f2", 1, why, sizeof why) == 0 && strstr(why, "FG/f2.exr does not decode"));
    char paths[4][CK_SHOT_PATH_MAX];
    CHECK(ck_shot_pass_paths(out, "f3", 0, paths) == 3 && strstr(paths[2], "/Processed/f3.exr"));

    /* the sweep: a dead process's partial file goes, a live one's stays */
    const pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    snprintf(path, sizeof path, "%s/Matte/.f1.partial%d.exr", out, (int)child);
    f = fopen(path, "wb");
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/Matte/.f2.partial%d.exr", out, (int)getppid());
    f = fopen(path, "wb");
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/Matte", out);
    CHECK(ck_shot_sweep_dir(path) == 1);
    CHECK(count_files(path, &hidden) == N_FRAMES + 1 && hidden == 1);

    /* a missing source: the message names it */
    ck_shot_opts o = ck_shot_opts_default();
    snprintf(path, sizeof path, "%s/none", tmp);
    o.image = path, o.out = out;
    CHECK(ck_shot_open(&s, &o) == CK_OK && ck_shot_check(s) == CK_STATUS_EIO &&
          strstr(ck_shot_last_error(s), "none: no such file"));
    ck_shot_free(s);

    ck_ctx_free(ctx);
    return test_summary();
}
