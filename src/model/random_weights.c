/* Random GreenFormer weights in memory (see random_weights.h).
 *
 * The tensor list follows the PyTorch module order (state_dict order): encoder (pos_embed, patch embed,
 * blocks), alpha and fg decoder heads, refiner. Values follow greenformer_ref.init_weights:
 *   - weights: truncated normal (±2 std), std = gain / sqrt(fan_in): gain 1, 0.5 for attn.proj and
 *     mlp.fc2 (residual outputs), 2.5 for the classifiers; refiner.final std 0.1 / sqrt(hidden);
 *   - biases: 0.02·N(0,1); classifiers 0.1·N, refiner.final 0.01·N;
 *   - LayerNorm / GroupNorm / BatchNorm affine: 1 + 0.1·N and 0.1·N;
 *   - BatchNorm running_mean 0.1·N, running_var U(0.5, 1.5), num_batches_tracked 0 (int64);
 *   - pos_embed: three random plane waves per channel (rms 0.25) plus truncated normal std 0.02, so that
 *     resizing the table to the model grid has a visible effect downstream.
 * Scales that keep activations O(1) through the network and the outputs off saturation, so timings
 * and memory see realistic data.
 *
 * Determinism: each tensor is cut into chunks and every chunk draws from its own splitmix64 stream,
 * seeded from (seed, tensor name, chunk index). The chunks fill in parallel, and the result does not
 * depend on the thread count. */
#include "model/random_weights.h"
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RW_SEED 0u
#define RW_CHUNK ((size_t)1 << 18) /* elements per random stream: enough jobs to keep every core busy */
#define RW_ALIGN 64
#define RW_PI 3.14159265358979323846

typedef struct rw_arch {
    const char *name;
    int         embed_dim;
    int         stages[4];  /* blocks per stage */
    int         dec_dim;    /* decoder embedding width */
    int         ref_hidden; /* refiner width */
    int         head_dim;
    int         train_size; /* the pos_embed grid is train_size / 4 */
} rw_arch;

/* tools/reference/greenformer_ref.py CONFIGS */
static const rw_arch ARCHS[] = {
    {"base_plus", 112, {2, 3, 16, 3}, 256, 64, 56, 2048},
    {"tiny", 16, {1, 2, 2, 1}, 32, 16, 8, 128},
};

typedef enum rw_kind {
    RW_TNORM,   /* a·truncated N(0, 1) at ±2 */
    RW_NORMAL,  /* b + a·N(0, 1) */
    RW_UNIFORM, /* b + a·U[0, 1) */
    RW_POS,     /* smooth field + 0.02·truncated N */
    RW_COUNTER  /* int64 zero */
} rw_kind;

typedef struct rw_tensor {
    char     name[CK_CKPT_NAME_MAX];
    int      ndim;
    int64_t  shape[4];
    size_t   numel, offset;
    rw_kind  kind;
    double   a, b;
} rw_tensor;

typedef struct rw_list {
    rw_tensor *t;
    int        n, cap;
    int        hidden; /* refiner width, for refiner.final's std */
    int        failed;
} rw_list;

/* ---- generator ---- */

typedef struct rw_rng {
    uint64_t s;
    int      has_spare;
    double   spare;
} rw_rng;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(rw_rng *r) { return mix64(r->s += 0x9E3779B97F4A7C15ull); }

static double rng_uniform(rw_rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* Marsaglia's polar method: two normals per accepted pair, no trigonometry */
static double rng_normal(rw_rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * rng_uniform(r) - 1.0;
        v = 2.0 * rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = sqrt(-2.0 * log(s) / s);
    r->spare       = v * f;
    r->has_spare   = 1;
    return u * f;
}

static double rng_tnormal(rw_rng *r) {
    double z;
    do z = rng_normal(r);
    while (z < -2.0 || z > 2.0);
    return z;
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
    return h;
}

static rw_rng stream_for(const char *name, uint64_t chunk) {
    rw_rng r = {mix64(mix64(RW_SEED ^ name_hash(name)) ^ mix64(chunk + 1)), 0, 0.0};
    return r;
}

/* ---- the state dict ---- */

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The init rule of greenformer_ref.init_weights for one tensor, by name and shape. */
static void set_rule(rw_tensor *t, int hidden) {
    char owner[CK_CKPT_NAME_MAX];
    snprintf(owner, sizeof owner, "%s", t->name);
    char       *dot  = strrchr(owner, '.');
    const char *leaf = dot ? dot + 1 : owner;
    if (dot) *dot = '\0';
    t->a = 0.0, t->b = 0.0;
    if (!strcmp(leaf, "num_batches_tracked")) t->kind = RW_COUNTER;
    else if (!strcmp(t->name, "encoder.model.pos_embed")) t->kind = RW_POS;
    else if (!strcmp(leaf, "running_mean")) t->kind = RW_NORMAL, t->a = 0.1;
    else if (!strcmp(leaf, "running_var")) t->kind = RW_UNIFORM, t->a = 1.0, t->b = 0.5;
    else if (t->ndim == 1 && (strstr(owner, "norm") || strstr(owner, ".bn") || strstr(owner, "gn") ||
                              strstr(owner, "stem.1"))) {
        t->kind = RW_NORMAL, t->a = 0.1, t->b = !strcmp(leaf, "weight") ? 1.0 : 0.0;
    } else if (!strcmp(leaf, "bias")) {
        t->kind = RW_NORMAL;
        t->a    = ends_with(owner, "classifier") ? 0.1 : !strcmp(owner, "refiner.final") ? 0.01 : 0.02;
    } else {
        CK_ASSERT(!strcmp(leaf, "weight"));
        const double fan_in = (double)t->numel / (double)t->shape[0];
        double       std    = 1.0 / sqrt(fan_in);
        if (!strcmp(owner, "refiner.final")) std = 0.1 / sqrt((double)hidden);
        else if (ends_with(owner, "classifier")) std = 2.5 / sqrt(fan_in);
        else if (ends_with(owner, "attn.proj") || ends_with(owner, "mlp.fc2")) std = 0.5 / sqrt(fan_in);
        t->kind = RW_TNORM, t->a = std;
    }
}

static void add(void *user, const char *name, int ndim, const int64_t shape[4], int is_counter) {
    rw_list *l = user;
    (void)is_counter; /* set_rule knows num_batches_tracked by name */
    if (l->failed) return;
    if (l->n == l->cap) {
        const int  cap = l->cap ? 2 * l->cap : 256;
        rw_tensor *t   = realloc(l->t, sizeof *t * (size_t)cap);
        if (!t) {
            l->failed = 1;
            return;
        }
        l->t = t, l->cap = cap;
    }
    rw_tensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim  = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i], t->numel *= (size_t)shape[i];
    set_rule(t, l->hidden);
}

/* The tensor list of architecture a: the layout the loader validates (ck_weights_layout), for the
 * configuration the checkpoint would yield (timm Hiera: the first block of each later stage doubles
 * the width and pools q; MLP ratio 4; GreenFormer heads and refiner). */
static void build(rw_list *l, const rw_arch *a) {
    ck_config c;
    memset(&c, 0, sizeof c);
    c.in_chans = 4, c.embed_dim = a->embed_dim, c.patch_kernel = 7, c.pos_grid = a->train_size / 4;
    int dim = a->embed_dim;
    for (int s = 0; s < 4; s++) {
        for (int j = 0; j < a->stages[s]; j++) {
            ck_block_cfg *b = &c.blocks[c.num_blocks++];
            b->dim_in       = dim;
            b->dim_out      = s > 0 && j == 0 ? 2 * dim : dim;
            b->q_pool       = b->dim_out != b->dim_in;
            b->mlp_hidden   = 4 * b->dim_out;
            dim             = b->dim_out;
        }
        c.stage_dim[s] = dim;
    }
    c.dec_dim = a->dec_dim, c.dec_out[0] = 1, c.dec_out[1] = 3;
    c.ref_hidden = a->ref_hidden, c.ref_blocks = 4;
    l->hidden    = a->ref_hidden;
    ck_weights_layout(&c, add, l);
}

/* ---- pos_embed: sum of three plane waves per channel, sin(A_y + B_x) = sin A cos B + cos A sin B,
 * so the tables are per row and per column instead of per element ---- */

typedef struct rw_waves {
    int     g, C;
    double *sa, *ca, *sb, *cb; /* [3][g][C] */
} rw_waves;

static int waves_init(rw_waves *w, const rw_tensor *t) {
    const int g = (int)llround(sqrt((double)t->shape[1])), C = (int)t->shape[2];
    const size_t n = (size_t)3 * g * C;
    w->g = g, w->C = C;
    w->sa = malloc(sizeof(double) * n * 4);
    if (!w->sa) return 0;
    w->ca = w->sa + n, w->sb = w->ca + n, w->cb = w->sb + n;
    double *fy = malloc(sizeof(double) * (size_t)C * 3);
    if (!fy) {
        free(w->sa);
        return 0;
    }
    double *fx = fy + C, *ph = fx + C;
    rw_rng  r  = stream_for(t->name, UINT64_MAX); /* the wave parameters' own stream */
    for (int k = 0; k < 3; k++) {
        for (int c = 0; c < C; c++) fy[c] = (rng_uniform(&r) * 2 - 1) * 6.0;
        for (int c = 0; c < C; c++) fx[c] = (rng_uniform(&r) * 2 - 1) * 6.0;
        for (int c = 0; c < C; c++) ph[c] = rng_uniform(&r) * 2 * RW_PI;
        for (int i = 0; i < g; i++) {
            const double u = (i + 0.5) / g;
            for (int c = 0; c < C; c++) {
                const size_t o = ((size_t)k * g + i) * C + c;
                w->sa[o]       = sin(u * fy[c] * RW_PI + ph[c]), w->ca[o] = cos(u * fy[c] * RW_PI + ph[c]);
                w->sb[o]       = sin(u * fx[c] * RW_PI), w->cb[o] = cos(u * fx[c] * RW_PI);
            }
        }
    }
    free(fy);
    return 1;
}

/* Fills elements [i0, i1) of tensor t in `base`. */
static void fill_chunk(uint8_t *base, const rw_tensor *t, size_t i0, size_t i1, const rw_waves *w) {
    if (t->kind == RW_COUNTER) {
        memset(base + t->offset, 0, 8);
        return;
    }
    float *dst = (float *)(base + t->offset);
    rw_rng r   = stream_for(t->name, i0 / RW_CHUNK);
    for (size_t i = i0; i < i1; i++) {
        double v;
        switch (t->kind) {
        case RW_TNORM: v = t->a * rng_tnormal(&r); break;
        case RW_NORMAL: v = t->b + t->a * rng_normal(&r); break;
        case RW_UNIFORM: v = t->b + t->a * rng_uniform(&r); break;
        default: { /* RW_POS: element i is token (y, x) = divmod(i / C, g), channel i % C */
            const size_t c = i % (size_t)w->C, n = i / (size_t)w->C;
            const size_t y = n / (size_t)w->g, x = n % (size_t)w->g;
            double       s = 0;
            for (int k = 0; k < 3; k++) {
                const size_t oy = ((size_t)k * w->g + y) * w->C + c, ox = ((size_t)k * w->g + x) * w->C + c;
                s += w->sa[oy] * w->cb[ox] + w->ca[oy] * w->sb[ox];
            }
            v = s * (0.25 / sqrt(1.5)) + 0.02 * rng_tnormal(&r);
        }
        }
        dst[i] = (float)v;
    }
}

int ck_random_weights_is_spec(const char *path) {
    return path && !strncmp(path, CK_RANDOM_PREFIX, sizeof CK_RANDOM_PREFIX - 1);
}

ck_status ck_random_checkpoint(ck_checkpoint *ck, const char *spec, ck_err *err) {
    memset(ck, 0, sizeof *ck);
    const char    *cfg = ck_random_weights_is_spec(spec) ? spec + sizeof CK_RANDOM_PREFIX - 1 : "";
    const rw_arch *a   = NULL;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (!strcmp(cfg, ARCHS[i].name)) a = &ARCHS[i];
    if (!a)
        return ck__fail(err, CK_STATUS_EINVAL, "%s: unknown random-weight model (expected random:base_plus or random:tiny)",
                        spec ? spec : "(null)");

    rw_list l = {0};
    build(&l, a);
    size_t total = 0;
    for (int i = 0; i < l.n && !l.failed; i++) {
        rw_tensor *t = &l.t[i];
        t->offset    = total;
        const size_t bytes = t->kind == RW_COUNTER ? 8 : t->numel * sizeof(float);
        total += (bytes + RW_ALIGN - 1) / RW_ALIGN * RW_ALIGN;
    }
    ck->tensors = l.failed ? NULL : calloc((size_t)l.n, sizeof *ck->tensors);
    ck->meta    = calloc(2, sizeof *ck->meta);
    rw_waves w  = {0};
    void    *map = MAP_FAILED;
    CK_ASSERT(l.failed || !strcmp(l.t[0].name, "encoder.model.pos_embed"));
    int      ok  = ck->tensors && ck->meta && waves_init(&w, &l.t[0]);
    if (ok) map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!ok || map == MAP_FAILED) {
        free(w.sa);
        free(l.t);
        free(ck->tensors), free(ck->meta);
        memset(ck, 0, sizeof *ck);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory for %.1f MiB of random weights", spec,
                        total / 1048576.0);
    }

    /* one job per (tensor, chunk) */
    size_t jobs = 0;
    for (int i = 0; i < l.n; i++) jobs += l.t[i].numel ? (l.t[i].numel + RW_CHUNK - 1) / RW_CHUNK : 1;
    size_t *job_t = malloc(sizeof(size_t) * jobs * 2);
    if (!job_t) {
        munmap(map, total);
        free(w.sa), free(l.t), free(ck->tensors), free(ck->meta);
        memset(ck, 0, sizeof *ck);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", spec);
    }
    size_t *job_c = job_t + jobs, j = 0;
    for (int i = 0; i < l.n; i++)
        for (size_t c = 0; c == 0 || c * RW_CHUNK < l.t[i].numel; c++) job_t[j] = (size_t)i, job_c[j++] = c;
    CK_ASSERT(j == jobs);
#pragma omp parallel for schedule(dynamic, 1)
    for (long k = 0; k < (long)jobs; k++) {
        const rw_tensor *t  = &l.t[job_t[k]];
        const size_t     i0 = job_c[k] * RW_CHUNK;
        const size_t     i1 = i0 + RW_CHUNK < t->numel ? i0 + RW_CHUNK : t->numel;
        fill_chunk(map, t, i0, i1, &w);
    }
    free(job_t);
    free(w.sa);
    mprotect(map, total, PROT_READ); /* read-only, like a mapped checkpoint file */

    for (int i = 0; i < l.n; i++) {
        const rw_tensor *t = &l.t[i];
        ck_ckpt_tensor  *o = &ck->tensors[i];
        snprintf(o->name, sizeof o->name, "%s", t->name);
        o->dtype = t->kind == RW_COUNTER ? CK_DTYPE_I64 : CK_DTYPE_F32;
        o->ndim  = t->ndim;
        for (int d = 0; d < t->ndim; d++) o->shape[d] = t->shape[d];
        o->data   = (const uint8_t *)map + t->offset;
        o->nbytes = t->kind == RW_COUNTER ? 8 : t->numel * sizeof(float);
    }
    ck->n_tensors = l.n;
    free(l.t);
    snprintf(ck->meta[0].key, sizeof ck->meta[0].key, "head_dim");
    snprintf(ck->meta[0].value, sizeof ck->meta[0].value, "%d", a->head_dim);
    snprintf(ck->meta[1].key, sizeof ck->meta[1].key, "format");
    snprintf(ck->meta[1].value, sizeof ck->meta[1].value, "pt");
    ck->n_meta   = 2;
    ck->map      = map;
    ck->map_size = total;
    ck->owns_map = 1; /* ck_checkpoint_close unmaps it */
    /* ck->format stays 0: no file; nothing downstream depends on the format */
    snprintf(ck->path, sizeof ck->path, "%s", spec);
    CK_LOG_INFO("%s: %d random tensors (%.1f MiB), fixed seed", spec, l.n, total / 1048576.0);
    return CK_OK;
}
