/* Frame files of `ckey key`: plates and hints in, CorridorKey's passes out (written as a set: each pass
 * into a hidden temporary file, then all renamed), plus the small file-system and event helpers. */
#include "key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pipeline/frame_ops.h"

int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
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

int mkdir_p(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(tmp, 0777) == 0 || errno == EEXIST;
}

void file_stem(char *out, size_t n, const char *path) {
    const char *base = strrchr(path, '/');
    base             = base ? base + 1 : path;
    snprintf(out, n, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

/* Reads the plate as 3-channel sRGB-or-linear floats following CorridorKey's CLI conventions. An RGB
 * file's decoded buffer becomes the plate itself (converted in place for EXR): a 4K frame is 100 MB,
 * and a copy per frame costs as much memory traffic as the decoding. */
ck_status read_plate(const char *path, int input_is_linear, float *buf, size_t cap, ck_image *rgb, ck_err *err) {
    ck_image  raw;
    ck_status st = ck_image_read_into(path, &raw, buf, cap, NULL, err);
    if (st != CK_OK) return st;
    const int    is_exr = ck_image_is_linear(path); /* EXR or float TIFF: scene-linear */
    const size_t n      = (size_t)raw.width * raw.height;
    float       *dst    = raw.channels == 3 ? raw.data : malloc(sizeof(float) * n * 3);
    if (!dst) {
        if (raw.data != buf) ck_image_release(&raw);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    if (raw.channels != 3 || is_exr) {
        for (size_t i = 0; i < n; i++) {
            for (int c = 0; c < 3; c++) {
                /* grey files are replicated; alpha (4th channel) is dropped */
                float v = raw.data[i * raw.channels + (raw.channels >= 3 ? c : 0)];
                if (is_exr) {
                    v = v > 0.0f ? v : 0.0f; /* negatives clamped as CorridorKey does */
                    if (!input_is_linear) v = ck_linear_to_srgb(v);
                }
                dst[i * 3 + c] = v;
            }
        }
    }
    *rgb = (ck_image){raw.width, raw.height, 3, dst};
    if (dst != raw.data && raw.data != buf) ck_image_release(&raw);
    return CK_OK;
}

/* The hint is the file's first channel (a 1-channel file as decoded). */
ck_status read_hint(const char *path, float *buf, size_t cap, ck_image *hint, ck_err *err) {
    ck_image  raw;
    ck_status st = ck_image_read_into(path, &raw, buf, cap, NULL, err);
    if (st != CK_OK) return st;
    if (raw.channels == 1) {
        *hint = raw;
        return CK_OK;
    }
    size_t n    = (size_t)raw.width * raw.height;
    hint->width = raw.width, hint->height = raw.height, hint->channels = 1;
    hint->data  = malloc(sizeof(float) * n);
    if (!hint->data) {
        if (raw.data != buf) ck_image_release(&raw);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) hint->data[i] = raw.data[i * raw.channels];
    if (raw.data != buf) ck_image_release(&raw);
    return CK_OK;
}

typedef struct pass_out {
    const char     *dir;
    const char     *ext;
    int             channels;
    const uint16_t *half; /* EXR passes */
    const uint8_t  *u8;   /* the comp (PNG) */
    char        final_path[5200];
    char        tmp_path[5300];
} pass_out;

double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* CorridorKey's passes, in writing order (Comp only when enabled); samples bound when pv is given. */
static int init_passes(pass_out *passes, const key_opts *o, const ck_passes *pv) {
    static const char *dirs[4]     = {"Matte", "FG", "Processed", "Comp"};
    static const char *exts[4]     = {"exr", "exr", "exr", "png"};
    static const int   channels[4] = {1, 3, 4, 3};
    const uint16_t    *half[4]     = {pv ? pv->alpha : NULL, pv ? pv->fg : NULL, pv ? pv->processed : NULL, NULL};
    for (int i = 0; i < 4; i++) {
        passes[i].dir = dirs[i], passes[i].ext = exts[i], passes[i].channels = channels[i];
        passes[i].half = half[i], passes[i].u8 = i == 3 && pv ? pv->comp : NULL;
        passes[i].final_path[0] = passes[i].tmp_path[0] = '\0';
    }
    return o->p.comp ? 4 : 3;
}

void pass_paths(pass_out *passes, int npass, const char *out, const char *stem) {
    for (int i = 0; i < npass; i++) {
        pass_out *p = &passes[i];
        snprintf(p->final_path, sizeof p->final_path, "%s/%s/%s.%s", out, p->dir, stem, p->ext);
        snprintf(p->tmp_path, sizeof p->tmp_path, "%s/%s/.%s.partial%d.%s", out, p->dir, stem, (int)getpid(), p->ext);
    }
}

/* Writes every pass of one frame: phase 1 each pass into a hidden temporary file, phase 2 rename all.
 * A failure in phase 1 removes what was written, so the output folder never holds a partial set. */
int write_passes(const key_opts *o, const char *stem, const ck_passes *pv) {
    pass_out  passes[4];
    const int npass = init_passes(passes, o, pv);
    ck_err    err   = {{0}};
    int       rc = 0, written = 0;
    size_t    chunk_ofs = 0; /* where the next EXR pass's encoded chunks start */
    pass_paths(passes, npass, o->out, stem);
    for (int i = 0; i < npass && rc == 0; i++) {
        pass_out *p = &passes[i];
        char      dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->out, p->dir);
        if (!mkdir_p(dir)) {
            fprintf(stderr, "ckey: cannot create output folder %s: %s\n", dir, strerror(errno));
            rc = EXIT_RUNTIME;
            break;
        }
        ck_status st;
        if (p->u8) {
            st = ck_image_write_png_u8(p->tmp_path, pv->width, pv->height, p->channels, p->u8, &err);
        } else if (pv->exr_chunks > 0 && o->exr == CK_EXR_PXR24) { /* encoded on the device */
            const int32_t *bytes = pv->chunk_bytes + (size_t)i * pv->exr_chunks;
            st = ck_image_write_exr_chunks(p->tmp_path, pv->width, pv->height, p->channels, p->half, pv->exr_lines,
                                           bytes, pv->chunk_data + chunk_ofs, &err);
            for (int c = 0; c < pv->exr_chunks; c++) chunk_ofs += (size_t)bytes[c];
        } else {
            st = ck_image_write_exr_half(p->tmp_path, pv->width, pv->height, p->channels, p->half, o->exr, &err);
        }
        if (st != CK_OK) rc = EXIT_RUNTIME;
        else written = i + 1;
    }
    if (rc == 0) {
        for (int i = 0; i < npass; i++)
            if (rename(passes[i].tmp_path, passes[i].final_path) != 0) {
                fprintf(stderr, "ckey: cannot move %s into place: %s\n", passes[i].final_path, strerror(errno));
                rc = EXIT_RUNTIME;
            }
        for (int i = 0; i < npass && rc == 0; i++) /* the renames themselves on disk */
            if (!ck_fsync_parent(passes[i].final_path)) {
                fprintf(stderr, "ckey: cannot flush %s to disk: %s\n", passes[i].final_path, strerror(errno));
                rc = EXIT_RUNTIME;
            }
    } else {
        for (int i = 0; i < written; i++) remove(passes[i].tmp_path);
    }
    return rc;
}

int pass_final_paths(const key_opts *o, const char *stem, char paths[4][CK_PATH_MAX]) {
    pass_out  passes[4];
    const int npass = init_passes(passes, o, NULL);
    pass_paths(passes, npass, o->out, stem);
    for (int i = 0; i < npass; i++) snprintf(paths[i], CK_PATH_MAX, "%s", passes[i].final_path);
    return npass;
}

/* --skip-existing: every pass of the frame is already there. */
int frame_done(const key_opts *o, const char *stem) {
    pass_out  passes[4];
    const int npass = init_passes(passes, o, NULL);
    pass_paths(passes, npass, o->out, stem);
    /* present and decoding (an empty or damaged pass is keyed again); a resume decodes each pass once, in
     * the reader threads */
    for (int i = 0; i < npass; i++) {
        if (!file_exists(passes[i].final_path)) return 0;
        ck_image img   = {0};
        int      depth = 0;
        ck_err   err   = {{0}};
        const ck_status st = ck_image_read(passes[i].final_path, &img, &depth, &err);
        ck_image_release(&img);
        if (st != CK_OK) {
            fprintf(stderr, "ckey: warning: %s does not decode (%s): the frame is keyed again\n", passes[i].final_path,
                    ck_status_str(st));
            return 0;
        }
    }
    return 1;
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

