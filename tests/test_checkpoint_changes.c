#define _POSIX_C_SOURCE 200809L
/* Checkpoint files that change underneath a run: truncated, rewritten in place or grown while
 * ck_checkpoint_open reads them (an error status and "FILE changed or was truncated while being read",
 * never a crash), and truncated after open (the tensors and a CPU forward are unaffected: the file was
 * read into memory; a mapped file killed the process with SIGBUS here).
 *
 * The file is changed from inside the read through ck__checkpoint_read_hook (called after every block),
 * so the timing is exact. Env: CK_TMP (scratch folder), CK_FIXTURES (tests/fixtures: tiny/s128/model.pth).
 */
#include "harness.h"

#include "ckey.h"
#include "core/tensor.h"
#include "io/checkpoint.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[512];

static void quiet_log(ck_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

/* Values of the test tensors: element i of tensor t. */
static float pattern(int t, size_t i) { return (float)(t + 1) * 0.25f + (float)(i % 1000003) * 0.5f; }

#define BIG_ELEMS ((size_t)3 << 20) /* 12 MiB of float32: more than one read block (8 MiB) */

/* A .safetensors file of a 12 MiB tensor and a small one. */
static void write_checkpoint(const char *path) {
    static const int64_t shapes[2] = {(int64_t)BIG_ELEMS, 1000};
    ck_ckpt_tensor       t[2];
    float               *data[2];
    memset(t, 0, sizeof t);
    for (int k = 0; k < 2; k++) {
        data[k] = malloc(sizeof(float) * (size_t)shapes[k]);
        for (size_t i = 0; i < (size_t)shapes[k]; i++) data[k][i] = pattern(k, i);
        snprintf(t[k].name, sizeof t[k].name, k ? "small" : "big");
        t[k].dtype    = CK_DTYPE_F32;
        t[k].ndim     = 1;
        t[k].shape[0] = shapes[k];
        t[k].data     = data[k];
        t[k].nbytes   = sizeof(float) * (size_t)shapes[k];
    }
    ck_err err = {{0}};
    CHECK_MSG(ck_safetensors_write(path, t, 2, NULL, 0, &err) == CK_OK, "%s", err.msg);
    free(data[0]), free(data[1]);
}

/* Every element of both tensors still holds its pattern value. */
static int tensors_intact(const ck_checkpoint *ck) {
    const ck_ckpt_tensor *big = ck_checkpoint_find(ck, "big"), *small = ck_checkpoint_find(ck, "small");
    if (!big || !small) return 0;
    const ck_ckpt_tensor *t[2] = {big, small};
    for (int k = 0; k < 2; k++) {
        const float *v = t[k]->data;
        for (size_t i = 0; i < t[k]->nbytes / 4; i++)
            if (v[i] != pattern(k, i)) return 0;
    }
    return 1;
}

typedef enum change { TRUNCATE_HALF, TRUNCATE_EMPTY, REWRITE_SAME_SIZE, GROW } change;
static change g_change;
static int    g_calls;

static void change_file(const char *path, size_t done, size_t total) {
    if (g_calls++ != 0) return; /* after the first block only */
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    if (fd < 0) return;
    switch (g_change) {
    case TRUNCATE_HALF: CHECK(ftruncate(fd, (off_t)(total / 2)) == 0); break;
    case TRUNCATE_EMPTY: CHECK(ftruncate(fd, 0) == 0); break;
    case REWRITE_SAME_SIZE: CHECK(pwrite(fd, "\x7f\x7f\x7f\x7f", 4, (off_t)(done - 4)) == 4); break;
    case GROW: CHECK(ftruncate(fd, (off_t)(total + 4096)) == 0); break;
    }
    close(fd);
}

/* The file changes after its first block was read: open must fail with the message, leave ck zeroed. */
static void test_changed_while_read(void) {
    static const char *what[] = {"truncated to half", "truncated to nothing", "rewritten in place", "grown"};
    for (int c = TRUNCATE_HALF; c <= GROW; c++) {
        char path[700];
        snprintf(path, sizeof path, "%s/ckpt_changes_%d.safetensors", g_tmp, c);
        write_checkpoint(path);
        /* an old modification time, so that the rewrite below changes it whatever the clock's resolution */
        const struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
        CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
        g_change                 = (change)c;
        g_calls                  = 0;
        ck__checkpoint_read_hook = change_file;
        ck_checkpoint ck;
        ck_err        err = {{0}};
        ck_status     st  = ck_checkpoint_open(&ck, path, &err);
        ck__checkpoint_read_hook = NULL;
        CHECK(g_calls >= 1);
        const int ok = st == CK_STATUS_EIO && strstr(err.msg, path) &&
                       strstr(err.msg, "changed or was truncated while being read") && ck.map == NULL &&
                       ck.n_tensors == 0;
        CHECK_MSG(ok, "file %s during the read: status %d, message '%s'", what[c], st, err.msg);
        printf("%-6s file %s during the read: %s\n", ok ? "OK" : "NOT OK", what[c], err.msg);
        if (st == CK_OK) ck_checkpoint_close(&ck);
        unlink(path);
    }
}

/* Truncated after open: every tensor still reads its values (with a mapping: SIGBUS at the first access). */
static void test_truncated_after_open(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/ckpt_changes_after.safetensors", g_tmp);
    write_checkpoint(path);
    ck_checkpoint ck;
    ck_err        err = {{0}};
    CHECK_MSG(ck_checkpoint_open(&ck, path, &err) == CK_OK, "%s", err.msg);
    CHECK(truncate(path, 0) == 0);
    const int ok = tensors_intact(&ck);
    CHECK_MSG(ok, "tensors changed after the file was truncated");
    printf("%-6s file truncated after open: the %d tensors keep their values\n", ok ? "OK" : "NOT OK", ck.n_tensors);
    ck_checkpoint_close(&ck);
    unlink(path);
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int   ok = in && out;
    char  b[65536];
    size_t k;
    while (ok && (k = fread(b, 1, sizeof b, in)) > 0) ok = fwrite(b, 1, k, out) == k;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

/* The whole API: a context on the CPU in fp32 uses float32 weights in place; the checkpoint (.pth) is
 * truncated under it and the next forward gives the same output. And a truncation during ck_ctx_init's
 * read is an error naming the file. */
static void test_context(void) {
    char fx[700], path[700];
    test_path(fx, sizeof fx, "CK_FIXTURES", "tiny/s128/model.pth");
    snprintf(path, sizeof path, "%s/ckpt_changes_model.pth", g_tmp);
    CHECK_MSG(copy_file(fx, path), "cannot copy %s", fx);
    ck_params p = ck_params_default();
    p.device    = CK_DEVICE_CPU;
    p.precision = CK_PREC_FP32;
    p.size      = 64;
    p.head_dim  = 8; /* the tiny model's (fixture.json); .pth files carry no metadata */
    ck_ctx   *ctx = NULL;
    ck_status st  = ck_ctx_init(&ctx, path, &p);
    CHECK_MSG(st == CK_OK, "%s", ck_ctx_last_error(ctx));
    if (st == CK_OK) {
        const size_t P = (size_t)p.size * p.size;
        float       *x = malloc(sizeof(float) * P * 4), *a[2], *fg = malloc(sizeof(float) * P * 3);
        for (size_t i = 0; i < P * 4; i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        for (int r = 0; r < 2; r++) {
            a[r] = malloc(sizeof(float) * P);
            if (r == 1) CHECK(truncate(path, 0) == 0);
            CHECK(ck_run_network(ctx, x, a[r], fg) == CK_OK);
        }
        const int same = !memcmp(a[0], a[1], sizeof(float) * P);
        CHECK_MSG(same, "the forward changed after the checkpoint file was truncated");
        printf("%-6s checkpoint truncated under a CPU context: the next forward is bit-identical\n",
               same ? "OK" : "NOT OK");
        free(x), free(fg), free(a[0]), free(a[1]);
    }
    ck_ctx_free(ctx);

    CHECK(copy_file(fx, path));
    g_change                 = TRUNCATE_HALF;
    g_calls                  = 0;
    ck__checkpoint_read_hook = change_file;
    st                       = ck_ctx_init(&ctx, path, &p);
    ck__checkpoint_read_hook = NULL;
    const char *msg          = ck_ctx_last_error(ctx);
    const int   ok = st == CK_STATUS_EIO && strstr(msg, path) && strstr(msg, "changed or was truncated while being read");
    CHECK_MSG(ok, "ck_ctx_init on a checkpoint truncated while read: status %d, '%s'", st, msg);
    printf("%-6s ck_ctx_init, checkpoint truncated while read: %s\n", ok ? "OK" : "NOT OK", msg);
    ck_ctx_free(ctx);
    unlink(path);
}

int main(void) {
    const char *t = getenv("CK_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s", t ? t : "/tmp");
    if (!getenv("CK_VERBOSE")) ck_set_log(quiet_log, NULL, CK_LOG_ERROR);
    test_changed_while_read();
    test_truncated_after_open();
    test_context();
    return test_summary();
}
