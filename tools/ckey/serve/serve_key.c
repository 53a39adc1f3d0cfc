/* `ckey serve`: keying one frame in the server and showing it (serve.h).
 *
 * A frame is read as `ckey key` reads it (the shot library's ck_shot_read_plate, ck_shot_read_hint or the
 * automatic hint) and keyed with ck_key_passes on one context, so its passes are the samples `ckey key` writes
 * for the same settings: the EXR halves and the comp's bytes, and, when the context encodes on the device, the
 * same PXR24 chunks (/api/pass writes them with the shot's own writer, ck_shot_write_passes). A new context is made only when the model size, the
 * tiles or the precision change; despill, despeckle and the refiner scale go through
 * ck_ctx_set_frame_params.
 *
 * Views are 8-bit PNGs, opaque (a browser's canvas keeps premultiplied 8-bit pixels: transparency would
 * round the colours it shows). The rule, one for every view but the comp: u8 = floor(clip(v, 0, 1) · 255 +
 * 0.5) of the stored value (the half, as float); the comp is the Comp pass's bytes as written. Views over a
 * background composite in linear light as CorridorKey's comp does: fg over bg = srgb(lin(fg) · a + bg · (1
 * − a)), processed over bg = srgb(P + bg · (1 − a)), with bg the 128-px checkerboard of sRGB 0.15 / 0.55, a
 * colour, or black for processed with none (fg with none is the FG pass itself).
 */
#define _GNU_SOURCE /* nftw */
#include "serve.h"

#include "ckey_io.h"
#include "ckey_shot.h" /* frame reading and pass writing: `ckey key`'s own */
#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FRAMES_KEPT = 4, KEYED_KEPT = 6 }; /* a 4K frame: 133 MB decoded, 158 MB keyed */

typedef struct sv_frame { /* a frame as `ckey key` reads it */
    int      refs, shot, frame, auto_hint;
    ck_image rgb, hint;
    double   read_ms;
} sv_frame;

typedef struct sv_keyed { /* a keyed frame: its passes as the files store them */
    int             refs, id, shot, frame;
    sv_settings     set;
    ck_passes       pv; /* a malloc'd copy: contexts come and go, keyed frames stay for comparison */
    sv_frame       *fr;
    pthread_mutex_t files_mu;
    int             files; /* its pass files are written (under the server's folder, <id>/) */
    char            dir[PATH_MAX + 32];
} sv_keyed;

struct sv_keyer {
    sv_server      *s;
    pthread_mutex_t key_mu; /* one key at a time: the context, made, the work passes */
    pthread_mutex_t mu;     /* held briefly: both caches, every reference count, next_id, device, precision */
    ck_ctx         *ctx;
    sv_settings     made; /* the size, tiles and precision ctx was made with */
    ck_passes       work;
    sv_frame       *frames[FRAMES_KEPT]; /* most recent first */
    sv_keyed       *keyed[KEYED_KEPT];
    int             next_id;
    char            device[256], precision[32];
};

sv_keyer *sv_keyer_new(sv_server *s) {
    sv_keyer *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->s = s;
    pthread_mutex_init(&k->mu, NULL);
    pthread_mutex_init(&k->key_mu, NULL);
    return k;
}

static void frame_release(sv_frame *fr) { /* under mu */
    if (!fr || --fr->refs > 0) return;
    free(fr->rgb.data), free(fr->hint.data), free(fr);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static void keyed_release(sv_keyed *kd) { /* under mu */
    if (!kd || --kd->refs > 0) return;
    if (kd->files) nftw(kd->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    ck_passes_free(NULL, &kd->pv);
    frame_release(kd->fr);
    pthread_mutex_destroy(&kd->files_mu);
    free(kd);
}

void sv_keyer_free(sv_keyer *k) {
    if (!k) return;
    for (int i = 0; i < KEYED_KEPT; i++) keyed_release(k->keyed[i]);
    for (int i = 0; i < FRAMES_KEPT; i++) frame_release(k->frames[i]);
    ck_passes_free(k->ctx, &k->work);
    ck_ctx_free(k->ctx);
    pthread_mutex_destroy(&k->mu);
    pthread_mutex_destroy(&k->key_mu);
    free(k);
}

void sv_keyer_describe(sv_keyer *k, FILE *f) {
    pthread_mutex_lock(&k->mu);
    fprintf(f, "{\"device\": ");
    sv_json_str(f, k->device);
    fprintf(f, ", \"precision\": ");
    sv_json_str(f, k->precision);
    fprintf(f, "}");
    pthread_mutex_unlock(&k->mu);
}

/* The decoded frame (cached), with a reference; NULL with the reason in why. Under mu. */
static sv_frame *frame_get(sv_keyer *k, int shot, int f, int *fresh, char *why, size_t n) {
    *fresh = 0;
    for (int i = 0; i < FRAMES_KEPT; i++)
        if (k->frames[i] && k->frames[i]->shot == shot && k->frames[i]->frame == f) {
            k->frames[i]->refs++;
            return k->frames[i];
        }
    const sv_shot *sh = &k->s->shots[shot];
    sv_frame      *fr = calloc(1, sizeof *fr);
    ck_err         err = {{0}};
    const double   t0  = now_s();
    if (!fr) return snprintf(why, n, "out of memory"), NULL;
    fr->shot = shot, fr->frame = f, fr->refs = 1;
    ck_status st = ck_shot_read_plate(sh->frames.paths[f], k->s->o.k.p.input_is_linear, NULL, 0, &fr->rgb, &err);
    if (st == CK_OK && sh->hints.n) {
        st = ck_shot_read_hint(sh->hints.paths[f], NULL, 0, &fr->hint, &err);
    } else if (st == CK_OK) { /* as ckey key without --hint */
        const size_t px = (size_t)fr->rgb.width * fr->rgb.height;
        int          blue;
        fr->hint      = (ck_image){fr->rgb.width, fr->rgb.height, 1, malloc(sizeof(float) * px)};
        fr->auto_hint = 1;
        st = fr->hint.data ? ck_auto_hint(fr->hint.data, fr->rgb.data, fr->rgb.width, fr->rgb.height, &blue) : CK_STATUS_EOOM;
        if (st != CK_OK) snprintf(err.msg, sizeof err.msg, "the automatic hint: %s", ck_status_str(st));
    }
    if (st != CK_OK) {
        snprintf(why, n, "%s", err.msg[0] ? err.msg : ck_status_str(st));
        frame_release(fr);
        return NULL;
    }
    fr->read_ms = 1e3 * (now_s() - t0);
    *fresh      = 1;
    frame_release(k->frames[FRAMES_KEPT - 1]);
    memmove(k->frames + 1, k->frames, sizeof k->frames[0] * (FRAMES_KEPT - 1));
    k->frames[0] = fr;
    fr->refs++; /* the cache's and the caller's */
    return fr;
}

/* A context for set (the current one when size, tiles and precision match). Under key_mu; 0 with why. */
static int ensure_ctx(sv_keyer *k, const sv_settings *set, char *why, size_t n) {
    if (k->ctx && k->made.size == set->size && k->made.tile == set->tile && k->made.overlap == set->overlap &&
        k->made.precision == set->precision)
        return 1;
    ck_passes_free(k->ctx, &k->work);
    ck_ctx_free(k->ctx);
    k->ctx = NULL;
    pthread_mutex_lock(&k->mu);
    k->device[0] = k->precision[0] = '\0';
    pthread_mutex_unlock(&k->mu);
    ck_params p    = k->s->o.k.p;
    p.size         = set->size, p.tile = set->tile, p.tile_overlap = set->overlap, p.precision = set->precision;
    p.comp         = 1;
    ck_ctx   *ctx  = NULL;
    if (ck_ctx_init(&ctx, k->s->ckpt, &p) != CK_OK) {
        snprintf(why, n, "%s", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return 0;
    }
    k->ctx = ctx, k->made = *set;
    pthread_mutex_lock(&k->mu);
    snprintf(k->device, sizeof k->device, "%s", ck_ctx_device_name(ctx));
    snprintf(k->precision, sizeof k->precision, "%s", ck_ctx_precision_name(ctx));
    pthread_mutex_unlock(&k->mu);
    return 1;
}

/* The passes into ordinary memory (ck_passes_copy), kept while the keyer's blocks take the next frame. */
static int copy_passes(const ck_passes *src, ck_passes *dst) {
    memset(dst, 0, sizeof *dst);
    return ck_passes_copy(dst, src) == CK_OK;
}

static void json_settings(FILE *f, const sv_settings *t) {
    static const char *prec[] = {"fp32", "bf16", "fp16", "auto"};
    fprintf(f, "{\"size\": %d, \"tile\": %d, \"overlap\": %d, \"precision\": \"%s\", \"despill\": %.9g, "
               "\"despeckle\": %d, \"despeckle_size\": %d, \"refiner_scale\": %.9g}",
            t->size, t->tile, t->overlap, prec[t->precision & 3], t->despill, t->despeckle, t->despeckle_size,
            t->refiner_scale);
}

int sv_handle_key(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[700];
    long f;
    if (sv_req_only(q, "shot,frame," SV_SETTINGS_KEYS, why, sizeof why)) return sv_error(r, 400, "%s", why);
    sv_shot *sh = sv_shot_of(s, q, &f, r);
    if (!sh) return r->status;
    sv_settings set = s->defaults;
    if (sv_settings_from_query(q, &set, why, sizeof why)) return sv_error(r, 400, "%s", why);
    sv_keyer    *k      = s->keyer;
    const double t_wait = now_s();
    pthread_mutex_lock(&k->key_mu); /* views and other readers go on meanwhile: they take mu only */
    const double t0 = now_s();
    int          fresh;
    pthread_mutex_lock(&k->mu);
    sv_frame *fr = frame_get(k, (int)(sh - s->shots), (int)f, &fresh, why, sizeof why);
    pthread_mutex_unlock(&k->mu);
    if (!fr) {
        pthread_mutex_unlock(&k->key_mu);
        return sv_error(r, 422, "frame %ld: %s", f, why);
    }
    const double t_read = now_s();
    int          code   = 0;
    if (!ensure_ctx(k, &set, why, sizeof why)) code = 422; /* a precision this device lacks, a bad checkpoint ... */
    const double t_ctx = now_s();
    ck_status    st    = CK_OK;
    if (!code) {
        const ck_frame_params fp = {set.refiner_scale, set.despill, set.despeckle, set.despeckle_size, 1};
        st                       = ck_ctx_set_frame_params(k->ctx, &fp);
        k->work.chunks_only      = 0; /* the views need the halves as well as any encoded chunks */
        if (st == CK_OK) st = ck_key_passes(k->ctx, &fr->rgb, &fr->hint, &k->work);
    }
    const double t_key = now_s();
    sv_keyed    *kd    = !code && st == CK_OK ? calloc(1, sizeof *kd) : NULL;
    if (!code && (st != CK_OK || !kd || !copy_passes(&k->work, &kd->pv))) {
        snprintf(why, sizeof why, "keying frame %ld: %s", f, st != CK_OK ? ck_ctx_last_error(k->ctx) : "out of memory");
        code = 500;
        free(kd);
        if (st == CK_STATUS_EBADSTATE || st == CK_STATUS_EDEVICE) { /* a context after a fatal error: a new one */
            ck_passes_free(k->ctx, &k->work);
            ck_ctx_free(k->ctx);
            k->ctx = NULL;
        }
    }
    const int on_device = !code && ck_ctx_postprocess_on_device(k->ctx);
    pthread_mutex_unlock(&k->key_mu);
    const double t_copy = now_s();
    pthread_mutex_lock(&k->mu);
    if (code) {
        frame_release(fr);
        pthread_mutex_unlock(&k->mu);
        return sv_error(r, code, "%s", why);
    }
    kd->id = ++k->next_id, kd->shot = fr->shot, kd->frame = fr->frame, kd->set = set, kd->fr = fr, kd->refs = 1;
    pthread_mutex_init(&kd->files_mu, NULL);
    snprintf(kd->dir, sizeof kd->dir, "%s/%d", s->tmp, kd->id);
    keyed_release(k->keyed[KEYED_KEPT - 1]);
    memmove(k->keyed + 1, k->keyed, sizeof k->keyed[0] * (KEYED_KEPT - 1));
    k->keyed[0] = kd;
    pthread_mutex_unlock(&k->mu);

    const double ms_read = fresh ? fr->read_ms : 0.0, ms_key = 1e3 * (t_key - t_ctx);
    const double ms_load = 1e3 * (t_ctx - t_read), ms_total = 1e3 * (t_copy - t0);
    char        *text = NULL;
    size_t       len  = 0;
    FILE        *out  = open_memstream(&text, &len);
    if (!out) return sv_error(r, 500, "out of memory");
    fprintf(out, "{\"id\": %d, \"shot\": %d, \"frame\": %d, \"stem\": ", kd->id, kd->shot, kd->frame);
    sv_json_str(out, sh->frames.stems[f]);
    fprintf(out, ", \"width\": %d, \"height\": %d, \"hint\": \"%s\", \"settings\": ", kd->pv.width, kd->pv.height,
            fr->auto_hint ? "automatic" : "file");
    json_settings(out, &set);
    /* key: ck_key_passes (upload, network, post-processing, download); total: the request in the server from when
     * it may key (wait: another key before it), with reading the plate (0 when it was cached), making a context
     * and copying the passes out */
    fprintf(out, ", \"ms\": {\"wait\": %.3f, \"read\": %.3f, \"load\": %.3f, \"key\": %.3f, \"copy\": %.3f, \"total\": %.3f}, "
                 "\"postprocess_on_device\": %s, \"keyer\": ",
            1e3 * (t0 - t_wait), ms_read, ms_load, ms_key, 1e3 * (t_copy - t_key), ms_total, on_device ? "true" : "false");
    sv_keyer_describe(k, out);
    fprintf(out, "}\n");
    fclose(out);
    sv_json(r, text, len);
    snprintf(r->hdr, sizeof r->hdr, "Server-Timing: read;dur=%.3f, load;dur=%.3f, key;dur=%.3f, total;dur=%.3f\n",
             ms_read, ms_load, ms_key, ms_total);
    return 200;
}

/* ---- views ---- */

static sv_keyed *keyed_get(sv_keyer *k, long id) {
    sv_keyed *kd = NULL;
    pthread_mutex_lock(&k->mu);
    for (int i = 0; i < KEYED_KEPT && !kd; i++)
        if (k->keyed[i] && k->keyed[i]->id == id) kd = k->keyed[i], kd->refs++;
    pthread_mutex_unlock(&k->mu);
    return kd;
}

static void keyed_put(sv_keyer *k, sv_keyed *kd) {
    pthread_mutex_lock(&k->mu);
    keyed_release(kd);
    pthread_mutex_unlock(&k->mu);
}

static uint8_t u8r(float v) { return !(v > 0.0f) ? 0 : v >= 1.0f ? 255 : (uint8_t)(v * 255.0f + 0.5f); }

/* bg: "checker" (CorridorKey's comp background), "none", or an sRGB colour RRGGBB; linear values into lin. */
static int parse_bg(const char *v, int *checker, float lin[3]) {
    *checker = 0, lin[0] = lin[1] = lin[2] = 0.0f;
    if (!v || !strcmp(v, "checker")) return *checker = 1;
    if (!strcmp(v, "none")) return 1;
    unsigned rgb;
    char     extra;
    if (strlen(v) != 6 || sscanf(v, "%6x%c", &rgb, &extra) != 1) return 0;
    for (int c = 0; c < 3; c++) lin[c] = ck_srgb_to_linear((float)((rgb >> (16 - 8 * c)) & 255) / 255.0f);
    return 1;
}

static const char *VIEWS = "plate,hint,matte,fg,processed,comp";

/* The view's 8-bit pixels (malloc'd; *ch 1 or 3). kd may be NULL for plate and hint. */
static uint8_t *render_view(const sv_server *s, const sv_frame *fr, const ck_passes *pv, const char *view,
                            const char *bg, int *w, int *h, int *ch, char *why, size_t n) {
    int   checker;
    float bgl[3];
    if (!parse_bg(bg, &checker, bgl)) return snprintf(why, n, "bg expects checker, none or RRGGBB"), NULL;
    const int is_hint = !strcmp(view, "hint"), is_plate = !strcmp(view, "plate");
    if (!pv && !is_hint && !is_plate) return snprintf(why, n, "view %s needs a keyed frame (id=N)", view), NULL;
    const ck_image *src = is_hint ? &fr->hint : &fr->rgb;
    *w = is_hint || is_plate ? src->width : pv->width, *h = is_hint || is_plate ? src->height : pv->height;
    *ch = is_hint || !strcmp(view, "matte") ? 1 : 3;
    const size_t px  = (size_t)*w * *h;
    uint8_t     *out = malloc(px * (size_t)*ch);
    if (!out) return snprintf(why, n, "out of memory"), NULL;
    /* a linear plate (--linear) is shown sRGB-encoded; one in a camera's space (--colorspace) as stored */
    const int srgb = s->o.k.p.input_is_linear && s->o.k.p.colorspace == CK_CS_DEFAULT;
    const float cb[2] = {ck_srgb_to_linear(0.15f), ck_srgb_to_linear(0.55f)};
    for (int y = 0; y < *h; y++)
        for (int x = 0; x < *w; x++) {
            const size_t i = (size_t)y * *w + x;
            float        b[3];
            for (int c = 0; c < 3; c++) b[c] = checker ? cb[((x >> 7) + (y >> 7)) & 1] : bgl[c];
            if (is_hint) out[i] = u8r(src->data[i]);
            else if (is_plate)
                for (int c = 0; c < 3; c++) out[3 * i + c] = u8r(srgb ? ck_linear_to_srgb(src->data[3 * i + c]) : src->data[3 * i + c]);
            else if (!strcmp(view, "matte")) out[i] = u8r(ck_half_to_float(pv->alpha[i]));
            else if (!strcmp(view, "comp")) memcpy(out + 3 * i, pv->comp + 3 * i, 3);
            else if (!strcmp(view, "fg")) {
                const float a = ck_half_to_float(pv->alpha[i]);
                for (int c = 0; c < 3; c++) {
                    const float v = ck_half_to_float(pv->fg[3 * i + c]);
                    out[3 * i + c] = !strcmp(bg, "none") ? u8r(v) : u8r(ck_linear_to_srgb(ck_srgb_to_linear(v) * a + b[c] * (1.0f - a)));
                }
            } else { /* processed: premultiplied, so "none" is over black */
                const float a = ck_half_to_float(pv->processed[4 * i + 3]);
                for (int c = 0; c < 3; c++)
                    out[3 * i + c] = u8r(ck_linear_to_srgb(ck_half_to_float(pv->processed[4 * i + c]) + b[c] * (1.0f - a)));
            }
        }
    return out;
}

static int send_view(sv_server *s, const sv_frame *fr, const ck_passes *pv, const char *view, const char *bg,
                     sv_resp *r) {
    char     why[200];
    int      w, h, ch;
    uint8_t *px = render_view(s, fr, pv, view, bg ? bg : "checker", &w, &h, &ch, why, sizeof why);
    if (!px) return sv_error(r, strstr(why, "memory") ? 500 : 400, "%s", why);
    size_t         len;
    unsigned char *png = sv_png_encode(px, w, h, ch, &len);
    free(px);
    if (!png) return sv_error(r, 500, "out of memory for the PNG");
    r->status = 200, r->type = "image/png", r->body = png, r->len = len;
    return 200;
}

static int check_view(const char *view, char *why, size_t n) {
    static const char *names[] = {"plate", "hint", "matte", "fg", "processed", "comp"};
    for (size_t i = 0; view && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(view, names[i])) return 0;
    snprintf(why, n, "view expects one of %s", VIEWS);
    return 400;
}

int sv_handle_view(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[300];
    long id = 0;
    if (sv_req_only(q, "id,view,bg", why, sizeof why) || sv_query_int(q, "id", 1, 1L << 30, &id, why, sizeof why) ||
        check_view(sv_query(q, "view"), why, sizeof why))
        return sv_error(r, 400, "%s", why);
    sv_keyed *kd = keyed_get(s->keyer, id);
    if (!kd) return sv_error(r, 404, "no keyed frame %ld (the server keeps the last %d)", id, KEYED_KEPT);
    send_view(s, kd->fr, &kd->pv, sv_query(q, "view"), sv_query(q, "bg"), r);
    keyed_put(s->keyer, kd);
    return r->status;
}

/* GET /api/frame?shot&frame&view=plate|hint: a frame before it is keyed */
int sv_handle_frame(sv_server *s, const sv_req *q, sv_resp *r) {
    char        why[700];
    long        f;
    const char *view = sv_query(q, "view");
    if (sv_req_only(q, "shot,frame,view", why, sizeof why)) return sv_error(r, 400, "%s", why);
    if (!view || (strcmp(view, "plate") && strcmp(view, "hint"))) return sv_error(r, 400, "view expects plate or hint");
    sv_shot *sh = sv_shot_of(s, q, &f, r);
    if (!sh) return r->status;
    pthread_mutex_lock(&s->keyer->mu);
    int       fresh;
    sv_frame *fr = frame_get(s->keyer, (int)(sh - s->shots), (int)f, &fresh, why, sizeof why);
    pthread_mutex_unlock(&s->keyer->mu);
    if (!fr) return sv_error(r, 422, "frame %ld: %s", f, why);
    send_view(s, fr, NULL, view, "none", r);
    pthread_mutex_lock(&s->keyer->mu);
    frame_release(fr);
    pthread_mutex_unlock(&s->keyer->mu);
    return r->status;
}

/* GET /api/pixel?id&x&y: the stored values at one pixel, as the files hold them */
int sv_handle_pixel(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[300];
    long id = 0, x = -1, y = -1;
    if (sv_req_only(q, "id,x,y", why, sizeof why) || sv_query_int(q, "id", 1, 1L << 30, &id, why, sizeof why) ||
        sv_query_int(q, "x", 0, 1L << 20, &x, why, sizeof why) || sv_query_int(q, "y", 0, 1L << 20, &y, why, sizeof why))
        return sv_error(r, 400, "%s", why);
    sv_keyed *kd = keyed_get(s->keyer, id);
    if (!kd) return sv_error(r, 404, "no keyed frame %ld", id);
    const ck_passes *pv = &kd->pv;
    if (x >= pv->width || y >= pv->height || x < 0 || y < 0) {
        keyed_put(s->keyer, kd);
        return sv_error(r, 400, "x, y outside the %dx%d frame", pv->width, pv->height);
    }
    const size_t i    = (size_t)y * pv->width + x;
    char        *text = NULL;
    size_t       len  = 0;
    FILE        *f    = open_memstream(&text, &len);
    const float *pl   = kd->fr->rgb.data + 3 * i;
    fprintf(f, "{\"x\": %ld, \"y\": %ld, \"plate\": [%.9g, %.9g, %.9g]", x, y, pl[0], pl[1], pl[2]);
    if (kd->fr->hint.width == pv->width && kd->fr->hint.height == pv->height)
        fprintf(f, ", \"hint\": %.9g", kd->fr->hint.data[i]);
    fprintf(f, ", \"matte\": %.9g, \"fg\": [", ck_half_to_float(pv->alpha[i]));
    for (int c = 0; c < 3; c++) fprintf(f, "%s%.9g", c ? ", " : "", ck_half_to_float(pv->fg[3 * i + c]));
    fprintf(f, "], \"processed\": [");
    for (int c = 0; c < 4; c++) fprintf(f, "%s%.9g", c ? ", " : "", ck_half_to_float(pv->processed[4 * i + c]));
    fprintf(f, "], \"comp\": [%d, %d, %d]}\n", pv->comp[3 * i], pv->comp[3 * i + 1], pv->comp[3 * i + 2]);
    fclose(f);
    keyed_put(s->keyer, kd);
    sv_json(r, text, len);
    return 200;
}

/* GET /api/pass?id&pass=matte|fg|processed|comp: the pass file, written by ckey key's own writer */
int sv_handle_pass(sv_server *s, const sv_req *q, sv_resp *r) {
    static const char *names[4] = {"matte", "fg", "processed", "comp"};
    char               why[300];
    long               id = 0;
    int                pi = -1;
    if (sv_req_only(q, "id,pass", why, sizeof why) || sv_query_int(q, "id", 1, 1L << 30, &id, why, sizeof why))
        return sv_error(r, 400, "%s", why);
    for (int i = 0; i < 4; i++)
        if (sv_query(q, "pass") && !strcmp(sv_query(q, "pass"), names[i])) pi = i;
    if (pi < 0) return sv_error(r, 400, "pass expects matte, fg, processed or comp");
    sv_keyed *kd = keyed_get(s->keyer, id);
    if (!kd) return sv_error(r, 404, "no keyed frame %ld", id);
    const char *stem = s->shots[kd->shot].frames.stems[kd->frame];
    ck_err      err  = {{0}};
    pthread_mutex_lock(&kd->files_mu);
    if (!kd->files) kd->files = ck_shot_write_passes(kd->dir, stem, 1, s->o.k.exr, &kd->pv, &err) == CK_OK;
    const int ok = kd->files;
    pthread_mutex_unlock(&kd->files_mu);
    char paths[4][CK_SHOT_PATH_MAX];
    ck_shot_pass_paths(kd->dir, stem, 1, paths);
    r->fd = ok ? open(paths[pi], O_RDONLY | O_CLOEXEC) : -1; /* open before the frame may be dropped */
    keyed_put(s->keyer, kd);
    if (!ok || r->fd < 0) return sv_error(r, 500, "could not write the passes of keyed frame %ld", id);
    r->status = 200, r->type = pi == 3 ? "image/png" : "image/x-exr";
    char safe[200]; /* the stem is a file name: only harmless characters go into the header */
    snprintf(safe, sizeof safe, "%s", stem);
    for (char *c = safe; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
            *c = '_';
    snprintf(r->hdr, sizeof r->hdr, "Content-Disposition: attachment; filename=\"%s_%s.%s\"\n", safe, names[pi],
             pi == 3 ? "png" : "exr");
    return 200;
}
