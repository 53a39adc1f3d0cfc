/* A shot's files (ckey_shot.h): plates and hints in, CorridorKey's passes out (written as a set: each pass
 * into a hidden temporary file, then all renamed and flushed), the resume check, the sweep of partial files
 * that dead processes left, folders. Used by shot.c; depends on io/ only. */
#include "shot_int.h"
#include "io/image.h"
#include "frame/frame_ops.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ck__shot_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int ck__shot_is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int ck_shot_mkdirs(const char *path) {
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

void ck_shot_file_stem(char *out, size_t n, const char *path) {
    const char *base = strrchr(path, '/');
    base             = base ? base + 1 : path;
    snprintf(out, n, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

/* An RGB file's decoded buffer becomes the plate itself (converted in place for EXR): a 4K frame is 100 MB,
 * and a copy per frame costs as much memory traffic as the decoding. */
ck_status ck_shot_read_plate(const char *path, int input_is_linear, float *buf, size_t cap, ck_image *rgb,
                              ck_err *err) {
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
ck_status ck_shot_read_hint(const char *path, float *buf, size_t cap, ck_image *hint, ck_err *err) {
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
    const uint16_t *half; /* (h, w, channels) EXR passes */
    const uint8_t  *u8;   /* (h, w, 3) the comp (PNG) */
    char            final_path[CK_SHOT_PATH_MAX];
    char            tmp_path[CK_SHOT_PATH_MAX + 100];
} pass_out;

/* CorridorKey's passes, in writing order (Comp only when comp); samples bound when pv is given. */
static int init_passes(pass_out *passes, int comp, const ck_passes *pv) {
    static const char *dirs[4]     = {"Matte", "FG", "Processed", "Comp"};
    static const char *exts[4]     = {"exr", "exr", "exr", "png"};
    static const int   channels[4] = {1, 3, 4, 3};
    const uint16_t    *half[4]     = {pv ? pv->alpha : NULL, pv ? pv->fg : NULL, pv ? pv->processed : NULL, NULL};
    for (int i = 0; i < 4; i++) {
        passes[i].dir = dirs[i], passes[i].ext = exts[i], passes[i].channels = channels[i];
        passes[i].half = half[i], passes[i].u8 = i == 3 && pv ? pv->comp : NULL;
        passes[i].final_path[0] = passes[i].tmp_path[0] = '\0';
    }
    return comp ? 4 : 3;
}

static void pass_paths(pass_out *passes, int npass, const char *out, const char *stem) {
    for (int i = 0; i < npass; i++) {
        pass_out *p = &passes[i];
        snprintf(p->final_path, sizeof p->final_path, "%s/%s/%s.%s", out, p->dir, stem, p->ext);
        snprintf(p->tmp_path, sizeof p->tmp_path, "%s/%s/.%s.partial%d.%s", out, p->dir, stem, (int)getpid(), p->ext);
    }
}

/* Phase 1 writes each pass into a hidden temporary file, phase 2 renames all. A failure in phase 1 removes
 * what was written, so the output folder never holds a partial set. */
ck_status ck_shot_write_passes(const char *out, const char *stem, int comp, ck_exr_compression exr,
                                const ck_passes *pv, ck_err *err) {
    pass_out  passes[4];
    const int npass = init_passes(passes, comp, pv);
    ck_status rc    = CK_OK;
    int       written = 0;
    size_t    chunk_ofs = 0; /* where the next EXR pass's encoded chunks start */
    pass_paths(passes, npass, out, stem);
    for (int i = 0; i < npass && rc == CK_OK; i++) {
        pass_out *p = &passes[i];
        char      dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", out, p->dir);
        if (!ck_shot_mkdirs(dir)) {
            rc = ck__fail(err, CK_STATUS_EIO, "cannot create output folder %s: %s", dir, strerror(errno));
            break;
        }
        ck_status st;
        if (p->u8) {
            st = ck_image_write_png_u8(p->tmp_path, pv->width, pv->height, p->channels, p->u8, err);
        } else if (pv->exr_chunks > 0 && exr == CK_EXR_PXR24) { /* encoded on the device */
            const int32_t *bytes = pv->chunk_bytes + (size_t)i * pv->exr_chunks;
            st = ck_image_write_exr_chunks(p->tmp_path, pv->width, pv->height, p->channels, p->half, pv->exr_lines,
                                           bytes, pv->chunk_data + chunk_ofs, err);
            for (int c = 0; c < pv->exr_chunks; c++) chunk_ofs += (size_t)bytes[c];
        } else {
            st = ck_image_write_exr_half(p->tmp_path, pv->width, pv->height, p->channels, p->half, exr, err);
        }
        if (st != CK_OK) rc = st;
        else written = i + 1;
    }
    if (rc == CK_OK) {
        for (int i = 0; i < npass; i++)
            if (rename(passes[i].tmp_path, passes[i].final_path) != 0)
                rc = ck__fail(err, CK_STATUS_EIO, "cannot move %s into place: %s", passes[i].final_path, strerror(errno));
        for (int i = 0; i < npass && rc == CK_OK; i++) /* the renames themselves on disk */
            if (!ck_fsync_parent(passes[i].final_path))
                rc = ck__fail(err, CK_STATUS_EIO, "cannot flush %s to disk: %s", passes[i].final_path, strerror(errno));
    } else {
        for (int i = 0; i < written; i++) remove(passes[i].tmp_path);
    }
    return rc;
}

int ck_shot_pass_paths(const char *out, const char *stem, int comp, char paths[4][CK_SHOT_PATH_MAX]) {
    pass_out  passes[4];
    const int npass = init_passes(passes, comp, NULL);
    pass_paths(passes, npass, out, stem);
    for (int i = 0; i < npass; i++) snprintf(paths[i], CK_SHOT_PATH_MAX, "%s", passes[i].final_path);
    return npass;
}

/* Present and decoding: an empty or damaged pass is keyed again. A resume decodes each pass once (in the
 * reader threads). */
int ck_shot_frame_written(const char *out, const char *stem, int comp, char *why, size_t n) {
    pass_out  passes[4];
    const int npass = init_passes(passes, comp, NULL);
    pass_paths(passes, npass, out, stem);
    if (why && n) why[0] = '\0';
    for (int i = 0; i < npass; i++) {
        if (!ck__shot_is_file(passes[i].final_path)) return 0;
        ck_image        img   = {0};
        int             depth = 0;
        ck_err          err   = {{0}};
        const ck_status st    = ck_image_read(passes[i].final_path, &img, &depth, &err);
        ck_image_release(&img);
        if (st != CK_OK) {
            if (why && n)
                snprintf(why, n, "%s does not decode (%s): the frame is keyed again", passes[i].final_path,
                         ck_status_str(st));
            return 0;
        }
    }
    return 1;
}

/* The pid in a temporary name of ours, else 0: ".STEM.partialPID.EXT", ".NAME.partialPIDEXT" (videos) and
 * "NAME.tmp.PID.N" (any file written through a temporary). */
static long temp_pid(const char *name) {
    const char *p = name[0] == '.' ? strstr(name, ".partial") : NULL;
    if (p) p += strlen(".partial");
    else {
        const char *t = strstr(name, ".tmp.");
        if (!t) return 0;
        p = t + strlen(".tmp.");
    }
    char *end;
    long  pid = strtol(p, &end, 10);
    return end > p && pid > 0 ? pid : 0;
}

int ck_shot_sweep_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int            removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const long pid = temp_pid(e->d_name);
        if (!pid || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to judge) */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (remove(path) == 0) removed++;
    }
    closedir(d);
    return removed;
}
