/* Synthetic green-screen plates with exact ground truth (include/ckey_qa.h: the scene and the rules).
 *
 * Generation runs in passes over the frame, each pixel independent except the strands, which are drawn
 * one after the other (their order is the compositing order) with rows in parallel:
 *   1. screen (linear) and the subject layer        -> screen, alpha = A, fg = P (premultiplied, linear)
 *   2. strands, in their bounding boxes              -> A, P
 *   3. stripes and disk, then truth fg and the plate -> alpha, fg (sRGB), rgb
 *   4. the hint from the truth alpha
 * Every random choice is drawn first, in a fixed order, from a splitmix64 stream seeded by (seed, index);
 * the noise is a counter-based hash, so the result does not depend on the thread count.
 */
#include "ckey_qa.h"

#include "frame/frame_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N_STRANDS = 90, N_STRIPES = 3, STRAND_SEGS = 16 };

static const double PI = 3.14159265358979323846;

/* ---- random numbers ---- */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state) { return mix64(*state += 0x9E3779B97F4A7C15ull); }

/* [0, 1) with 53 random bits */
static double uniform(uint64_t *s) { return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }
static double range(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * uniform(s); }

/* ---- the scene ---- */

typedef struct subject {
    double cx, cy, rx, ry;        /* centre and radii, px */
    double amp[3], freq[3], ph[3]; /* outline wobble: rho_b(theta) = 1 + sum amp sin(freq theta + ph) */
    double edge_lo, edge_hi, edge_ph; /* edge width (px) between lo and hi around the outline */
    double col[3];                /* linear albedo */
    double tex_fx, tex_fy, tex_ph; /* texture: col * (0.8 + 0.2 sin(fx x + fy y + ph + channel)) */
    double spill_falloff;         /* px */
} subject;

typedef struct strand {
    double p0[2], p1[2], p2[2]; /* quadratic Bézier control points, px */
    double width, opacity;      /* width at the root (tapers to 40 % at the tip), peak coverage */
    double col[3];
    double box[4];              /* x0, y0, x1, y1 (inclusive pixel range, clipped) */
} strand;

typedef struct stripe {
    double cx, cy, ca, sa; /* centre; cos/sin of the bar's long axis */
    double half_len;       /* along the long axis, px */
    double half_wid;       /* bar half width across, px */
    double blur;           /* box-blur length across the bar, px */
    double col[3];
} stripe;

typedef struct disk {
    double cx, cy, r, blur, opacity;
    double col[3];
} disk;

typedef struct scene {
    double  screen[3];         /* linear base colour */
    double  gx, gy, vig, wph;  /* lighting: gradient, vignette, a faint wave */
    subject sub;
    strand  strands[N_STRANDS];
    stripe  stripes[N_STRIPES];
    disk    dsk;
    uint64_t noise_key;
} scene;

static double srgb_to_lin_d(double v) { return ck_srgb_to_linear((float)v); }

static double outline(const subject *s, double theta) {
    double r = 1.0;
    for (int k = 0; k < 3; k++) r += s->amp[k] * sin(s->freq[k] * theta + s->ph[k]);
    return r;
}

static void build_scene(scene *sc, const ck_plate_params *pp) {
    const int    W = pp->width, H = pp->height;
    const double m = W < H ? W : H, sx = m / 2048.0;
    uint64_t     st = mix64(pp->seed ^ 0x6A09E667F3BCC909ull) ^ mix64((uint64_t)pp->index + 0x3C6EF372FE94F82Bull);
    sc->noise_key   = splitmix64(&st);

    /* screen: chroma green around sRGB (0.14, 0.62, 0.22) */
    sc->screen[0] = srgb_to_lin_d(range(&st, 0.08, 0.20));
    sc->screen[1] = srgb_to_lin_d(range(&st, 0.55, 0.70));
    sc->screen[2] = srgb_to_lin_d(range(&st, 0.15, 0.28));
    sc->gx = range(&st, -0.2, 0.2), sc->gy = range(&st, -0.2, 0.2);
    sc->vig = range(&st, 0.2, 0.4), sc->wph = range(&st, 0.0, 2 * PI);

    subject *s = &sc->sub;
    s->cx = W * (0.5 + range(&st, -0.06, 0.06));
    s->cy = H * (0.58 + range(&st, -0.04, 0.04));
    s->rx = m * range(&st, 0.17, 0.22);
    s->ry = m * range(&st, 0.25, 0.30);
    static const double freqs[3] = {2, 3, 5};
    for (int k = 0; k < 3; k++) {
        s->amp[k]  = range(&st, 0.0, 0.035);
        s->freq[k] = freqs[k];
        s->ph[k]   = range(&st, 0.0, 2 * PI);
    }
    s->edge_lo = fmax(0.75, 1.5 * sx), s->edge_hi = fmax(1.0, 14.0 * sx), s->edge_ph = range(&st, 0.0, 2 * PI);
    static const double palette[5][3] = {{0.60, 0.36, 0.25}, {0.10, 0.16, 0.35}, {0.40, 0.40, 0.42},
                                         {0.55, 0.08, 0.07}, {0.55, 0.40, 0.12}};
    const int           pick          = (int)(uniform(&st) * 5) % 5;
    const double        gain          = range(&st, 0.85, 1.1);
    for (int c = 0; c < 3; c++) s->col[c] = palette[pick][c] * gain;
    s->tex_fx = 2 * PI / (m * range(&st, 0.1, 0.2)), s->tex_fy = 2 * PI / (m * range(&st, 0.1, 0.2));
    s->tex_ph = range(&st, 0.0, 2 * PI);
    s->spill_falloff = fmax(1.0, 0.012 * m);

    /* strands from the upper outline (theta in (-pi, 0): y grows downwards) */
    static const double hair[3][3] = {{0.05, 0.03, 0.02}, {0.45, 0.33, 0.17}, {0.20, 0.09, 0.04}};
    const int           hp         = (int)(uniform(&st) * 3) % 3;
    for (int i = 0; i < N_STRANDS; i++) {
        strand      *t  = &sc->strands[i];
        const double th = range(&st, -0.95 * PI, -0.05 * PI), rho = 0.93 * outline(s, th);
        const double x0 = s->cx + s->rx * rho * cos(th), y0 = s->cy + s->ry * rho * sin(th);
        double       nx = cos(th) / s->rx, ny = sin(th) / s->ry; /* outward normal of the ellipse */
        const double nl = sqrt(nx * nx + ny * ny), turn = range(&st, -0.5, 0.5);
        nx /= nl, ny /= nl;
        const double dx = nx * cos(turn) - ny * sin(turn), dy = nx * sin(turn) + ny * cos(turn);
        const double len = m * range(&st, 0.04, 0.11), b1 = len * range(&st, -0.25, 0.25),
                     b2  = len * range(&st, -0.25, 0.25);
        t->p0[0] = x0, t->p0[1] = y0;
        t->p1[0] = x0 + dx * len * 0.5 - dy * b1, t->p1[1] = y0 + dy * len * 0.5 + dx * b1;
        t->p2[0] = x0 + dx * len - dy * b2, t->p2[1] = y0 + dy * len + dx * b2;
        t->width   = range(&st, 0.35, 1.3);
        t->opacity = range(&st, 0.7, 1.0);
        const double g = range(&st, 0.9, 1.1);
        for (int c = 0; c < 3; c++) t->col[c] = hair[hp][c] * g;
        /* the curve lies in the hull of its control points; widen by the half width and the 1-px filter */
        const double pad = t->width * 0.5 + 1.0;
        double       bx0 = fmin(fmin(t->p0[0], t->p1[0]), t->p2[0]) - pad, bx1 = fmax(fmax(t->p0[0], t->p1[0]), t->p2[0]) + pad;
        double       by0 = fmin(fmin(t->p0[1], t->p1[1]), t->p2[1]) - pad, by1 = fmax(fmax(t->p0[1], t->p1[1]), t->p2[1]) + pad;
        t->box[0] = fmax(0.0, floor(bx0)), t->box[1] = fmax(0.0, floor(by0));
        t->box[2] = fmin(W - 1.0, ceil(bx1)), t->box[3] = fmin(H - 1.0, ceil(by1));
    }

    /* motion-blur stripes on the left */
    static const double stripe_cols[4][3] = {{0.80, 0.30, 0.05}, {0.05, 0.10, 0.60}, {0.50, 0.05, 0.40}, {0.80, 0.80, 0.80}};
    for (int i = 0; i < N_STRIPES; i++) {
        stripe      *b = &sc->stripes[i];
        const double a = range(&st, -0.4, 0.4);
        b->cx = W * range(&st, 0.08, 0.2), b->cy = H * (0.2 + 0.3 * i + range(&st, -0.05, 0.05));
        b->ca = cos(a), b->sa = sin(a);
        b->half_len = 0.5 * m * range(&st, 0.12, 0.2);
        b->half_wid = 0.5 * m * range(&st, 0.02, 0.04);
        b->blur     = fmax(1.0, m * range(&st, 0.02, 0.08));
        const int k = (int)(uniform(&st) * 4) % 4;
        for (int c = 0; c < 3; c++) b->col[c] = stripe_cols[k][c];
    }

    /* defocus disk at the top right */
    disk *d = &sc->dsk;
    d->cx = W * range(&st, 0.75, 0.88), d->cy = H * range(&st, 0.15, 0.3);
    d->r = m * range(&st, 0.05, 0.08), d->blur = fmax(0.5, m * range(&st, 0.006, 0.02));
    d->opacity = range(&st, 0.45, 0.85);
    const double dg = range(&st, 0.7, 1.0);
    d->col[0] = 0.95 * dg, d->col[1] = 0.75 * dg, d->col[2] = 0.45 * dg;
}

/* ---- coverage helpers ---- */

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
static double smoothstep01(double t) { return t * t * (3.0 - 2.0 * t); }

/* Coverage of a 1-px box filter centred at distance d (>= 0) from the axis of a band of width w: the
 * length of [d - 0.5, d + 0.5] ∩ [-w/2, w/2]. Integrates to w, so sub-pixel strands keep their area. */
static double band_coverage(double d, double w) {
    const double lo = fmax(d - 0.5, -0.5 * w), hi = fmin(d + 0.5, 0.5 * w);
    return hi > lo ? hi - lo : 0.0;
}

/* "over" of a layer (coverage a, linear colour c) onto the premultiplied accumulators A, P[3] */
static void over(float *A, float *P, double a, const double *c) {
    if (a <= 0.0) return;
    const double k = 1.0 - a;
    *A             = (float)(a + k * *A);
    for (int ch = 0; ch < 3; ch++) P[ch] = (float)(a * c[ch] + k * P[ch]);
}

static void spilled(double *out, const double *col, const float *screen, double w) {
    for (int c = 0; c < 3; c++) out[c] = col[c] * (1.0 - w) + screen[c] * w;
}

/* ---- pass 1: screen and subject ---- */

static void screen_and_subject(const scene *sc, ck_plate *pl, double spill) {
    const int      W = pl->width, H = pl->height;
    const subject *s = &sc->sub;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * W + x;
            const double u = (2.0 * x + 1.0) / W - 1.0, v = (2.0 * y + 1.0) / H - 1.0;
            const double light = (1.0 + sc->gx * u + sc->gy * v) * (1.0 - sc->vig * 0.5 * (u * u + v * v)) *
                                 (1.0 + 0.03 * sin(2.3 * u + 1.7 * v + sc->wph));
            float *scr = pl->screen + 3 * i;
            for (int c = 0; c < 3; c++) scr[c] = (float)clamp01(sc->screen[c] * light);

            /* signed distance to the outline along the ray from the centre: (rho_b - rho) · px per unit rho */
            const double dx = x + 0.5 - s->cx, dy = y + 0.5 - s->cy;
            const double ex = dx / s->rx, ey = dy / s->ry, rho = sqrt(ex * ex + ey * ey);
            const double th = atan2(ey, ex), rb = outline(s, th);
            const double px_per_rho = rho > 1e-9 ? sqrt(dx * dx + dy * dy) / rho : fmin(s->rx, s->ry);
            const double sd = (rb - rho) * px_per_rho;
            const double ew = s->edge_lo + (s->edge_hi - s->edge_lo) * (0.5 + 0.5 * sin(2.0 * th + s->edge_ph));
            const double a  = smoothstep01(clamp01(sd / ew + 0.5));
            float       *A = pl->alpha + i, *P = pl->fg + 3 * i;
            *A = 0.0f, P[0] = P[1] = P[2] = 0.0f;
            if (a > 0.0) {
                double col[3], sp[3];
                for (int c = 0; c < 3; c++)
                    col[c] = s->col[c] * (0.8 + 0.2 * sin(s->tex_fx * x + s->tex_fy * y + s->tex_ph + c));
                spilled(sp, col, scr, spill * exp(-fmax(sd, 0.0) / s->spill_falloff));
                over(A, P, a, sp);
            }
        }
    }
}

/* ---- pass 2: strands ---- */

static void bezier(const strand *t, double s, double *p) {
    const double a = (1 - s) * (1 - s), b = 2 * s * (1 - s), c = s * s;
    p[0] = a * t->p0[0] + b * t->p1[0] + c * t->p2[0];
    p[1] = a * t->p0[1] + b * t->p1[1] + c * t->p2[1];
}

static void draw_strand(const strand *t, ck_plate *pl, double spill) {
    const int W = pl->width;
    double    pts[STRAND_SEGS + 1][2]; /* the curve as a polyline, (x, y) px */
    for (int k = 0; k <= STRAND_SEGS; k++) bezier(t, (double)k / STRAND_SEGS, pts[k]);
    const int x0 = (int)t->box[0], y0 = (int)t->box[1], x1 = (int)t->box[2], y1 = (int)t->box[3];
    CK_ASSERT(x0 >= 0 && y0 >= 0 && x1 < W && y1 < pl->height);
#pragma omp parallel for schedule(static)
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            /* coverage: the best segment (a union, not a sum: joints are not counted twice) */
            double       cov = 0.0;
            const double px = x + 0.5, py = y + 0.5;
            for (int k = 0; k < STRAND_SEGS; k++) {
                const double ax = pts[k][0], ay = pts[k][1], bx = pts[k + 1][0] - ax, by = pts[k + 1][1] - ay;
                const double l2 = bx * bx + by * by;
                const double f  = l2 > 0 ? clamp01(((px - ax) * bx + (py - ay) * by) / l2) : 0.0;
                const double ddx = px - ax - f * bx, ddy = py - ay - f * by;
                const double along = (k + f) / STRAND_SEGS; /* 0 at the root, 1 at the tip */
                const double c     = band_coverage(sqrt(ddx * ddx + ddy * ddy), t->width * (1.0 - 0.6 * along));
                cov                = c > cov ? c : cov;
            }
            if (cov <= 0.0) continue;
            const size_t i = (size_t)y * W + x;
            double       sp[3];
            spilled(sp, t->col, pl->screen + 3 * i, 0.8 * spill); /* thin strands are all edge */
            over(pl->alpha + i, pl->fg + 3 * i, t->opacity * cov, sp);
        }
    }
}

/* ---- pass 3: stripes, disk, truth fg, the plate ---- */

static double stripe_alpha(const stripe *b, double px, double py) {
    const double dx = px - b->cx, dy = py - b->cy;
    const double along = dx * b->ca + dy * b->sa, across = -dx * b->sa + dy * b->ca;
    /* across: the bar [-hw, hw] convolved with a box of length `blur` (exact); along: 1-px anti-aliasing */
    const double lo = fmax(across - 0.5 * b->blur, -b->half_wid), hi = fmin(across + 0.5 * b->blur, b->half_wid);
    const double a_across = hi > lo ? (hi - lo) / b->blur : 0.0;
    return a_across * band_coverage(fabs(along), 2.0 * b->half_len);
}

static uint64_t noise_hash(uint64_t key, uint64_t n) { return mix64(key + n * 0x9E3779B97F4A7C15ull); }

static void finish(const scene *sc, ck_plate *pl, double spill, double noise) {
    const int W = pl->width, H = pl->height;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            const size_t i   = (size_t)y * W + x;
            const float *scr = pl->screen + 3 * i;
            float       *A = pl->alpha + i, *P = pl->fg + 3 * i;
            const double px = x + 0.5, py = y + 0.5;
            double       sp[3];
            for (int k = 0; k < N_STRIPES; k++) {
                const double a = stripe_alpha(&sc->stripes[k], px, py);
                if (a <= 0.0) continue;
                spilled(sp, sc->stripes[k].col, scr, 0.5 * spill);
                over(A, P, a, sp);
            }
            const disk  *d  = &sc->dsk;
            const double dd = sqrt((px - d->cx) * (px - d->cx) + (py - d->cy) * (py - d->cy));
            const double da = d->opacity * smoothstep01(clamp01((d->r - dd) / (2.0 * d->blur) + 0.5));
            if (da > 0.0) {
                spilled(sp, d->col, scr, 0.3 * spill);
                over(A, P, da, sp);
            }

            /* truth: straight fg in sRGB; the plate is made from it, so truth and plate agree exactly */
            const float a = *A < 0.0f ? 0.0f : *A > 1.0f ? 1.0f : *A;
            *A            = a;
            for (int c = 0; c < 3; c++) {
                float f = 0.0f;
                if (a > 0.0f) {
                    const float lin = P[c] / a;
                    f               = ck_linear_to_srgb(lin > 1.0f ? 1.0f : lin);
                }
                P[c] = f;
                const float plate_lin = ck_srgb_to_linear(f) * a + scr[c] * (1.0f - a);
                float       v         = ck_linear_to_srgb(plate_lin);
                if (noise > 0.0) {
                    const uint64_t h  = noise_hash(sc->noise_key, 3 * (uint64_t)i + (uint64_t)c);
                    const double   u1 = (double)(h >> 32) * (1.0 / 4294967296.0), u2 = (double)(h & 0xFFFFFFFFu) * (1.0 / 4294967296.0);
                    v += (float)(noise * (u1 + u2 - 1.0));
                }
                pl->rgb[3 * i + c] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            }
        }
    }
}

/* ---- pass 4: the hint ---- */

size_t ck_plate_hint_scratch_floats(int w, int h) {
    const size_t cw = (size_t)(w + CK_PLATE_HINT_CELL - 1) / CK_PLATE_HINT_CELL;
    const size_t ch = (size_t)(h + CK_PLATE_HINT_CELL - 1) / CK_PLATE_HINT_CELL;
    return (size_t)w * h + cw * ch;
}

/* Grey erosion (take_max = 0) or dilation over a (2r+1)² square, separably: rows of `src` into tmp, then
 * columns of tmp into dst. */
static void min_max_filter(float *dst, const float *src, float *tmp, int w, int h, int r, int take_max) {
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int x0 = x - r < 0 ? 0 : x - r, x1 = x + r >= w ? w - 1 : x + r;
            float     m  = src[(size_t)y * w + x0];
            for (int k = x0 + 1; k <= x1; k++) {
                const float v = src[(size_t)y * w + k];
                m             = take_max ? (v > m ? v : m) : (v < m ? v : m);
            }
            tmp[(size_t)y * w + x] = m;
        }
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const int y0 = y - r < 0 ? 0 : y - r, y1 = y + r >= h ? h - 1 : y + r;
        for (int x = 0; x < w; x++) {
            float m = tmp[(size_t)y0 * w + x];
            for (int k = y0 + 1; k <= y1; k++) {
                const float v = tmp[(size_t)k * w + x];
                m             = take_max ? (v > m ? v : m) : (v < m ? v : m);
            }
            dst[(size_t)y * w + x] = m;
        }
    }
}

void ck_plate_hint(float *hint, const float *alpha, int w, int h, int erode, int dilate, float *scratch) {
    CK_ASSERT(w > 0 && h > 0 && erode >= 0 && dilate >= 0 && hint != alpha);
    const int C = CK_PLATE_HINT_CELL, cw = (w + C - 1) / C, chh = (h + C - 1) / C;
    float    *tmp = scratch, *cells = scratch + (size_t)w * h; /* (h, w), (chh, cw) */

    /* area average per cell (double sums: 64 terms) */
    for (int cy = 0; cy < chh; cy++)
        for (int cx = 0; cx < cw; cx++) {
            const int y0 = cy * C, y1 = y0 + C < h ? y0 + C : h, x0 = cx * C, x1 = x0 + C < w ? x0 + C : w;
            double    sum = 0.0;
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++) sum += alpha[(size_t)y * w + x];
            cells[(size_t)cy * cw + cx] = (float)(sum / ((double)(y1 - y0) * (x1 - x0)));
        }
    /* bilinear back up: pixel x samples the cell grid at (x + 0.5) / C - 0.5, clamped to the grid */
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        double    v  = fmin(fmax((y + 0.5) / C - 0.5, 0.0), chh - 1.0);
        const int j0 = (int)v, j1 = j0 + 1 < chh ? j0 + 1 : j0;
        const double fy = v - j0;
        for (int x = 0; x < w; x++) {
            const double u  = fmin(fmax((x + 0.5) / C - 0.5, 0.0), cw - 1.0);
            const int    i0 = (int)u, i1 = i0 + 1 < cw ? i0 + 1 : i0;
            const double fx = u - i0;
            const double top = cells[(size_t)j0 * cw + i0] * (1 - fx) + cells[(size_t)j0 * cw + i1] * fx;
            const double bot = cells[(size_t)j1 * cw + i0] * (1 - fx) + cells[(size_t)j1 * cw + i1] * fx;
            hint[(size_t)y * w + x] = (float)(top * (1 - fy) + bot * fy);
        }
    }
    /* in place through tmp: the filter reads hint fully (rows) before writing it (columns) */
    if (erode > 0) min_max_filter(hint, hint, tmp, w, h, erode, 0);
    if (dilate > 0) min_max_filter(hint, hint, tmp, w, h, dilate, 1);
}

/* ---- public ---- */

int ck_plate_parse_size(const char *s, int *w, int *h) {
    char *end;
    if (!s || *s < '0' || *s > '9') return 0;
    const long a = strtol(s, &end, 10);
    if (*end != 'x' && *end != 'X') return 0;
    const char *t = end + 1;
    if (*t < '0' || *t > '9') return 0;
    const long b = strtol(t, &end, 10);
    if (*end || a < CK_PLATE_MIN_DIM || b < CK_PLATE_MIN_DIM || a > 32768 || b > 32768) return 0;
    *w = (int)a, *h = (int)b;
    return 1;
}

ck_plate_params ck_plate_params_default(void) {
    ck_plate_params p;
    memset(&p, 0, sizeof p);
    p.width = p.height = 2048;
    p.seed  = 1;
    p.noise = 2.0f / 255.0f;
    p.spill = 0.35f;
    return p;
}

ck_status ck_plate_alloc(ck_plate *pl, int w, int h) {
    memset(pl, 0, sizeof *pl);
    size_t n;
    if (w < CK_PLATE_MIN_DIM || h < CK_PLATE_MIN_DIM || !ck_mul_size((size_t)w, (size_t)h, &n)) return CK_STATUS_EINVAL;
    pl->width = w, pl->height = h;
    pl->rgb     = malloc(sizeof(float) * n * 3);
    pl->alpha   = malloc(sizeof(float) * n);
    pl->fg      = malloc(sizeof(float) * n * 3);
    pl->screen  = malloc(sizeof(float) * n * 3);
    pl->hint    = malloc(sizeof(float) * n);
    pl->scratch = malloc(sizeof(float) * ck_plate_hint_scratch_floats(w, h));
    if (!pl->rgb || !pl->alpha || !pl->fg || !pl->screen || !pl->hint || !pl->scratch) {
        ck_plate_free(pl);
        return CK_STATUS_EOOM;
    }
    return CK_OK;
}

void ck_plate_free(ck_plate *pl) {
    if (!pl) return;
    free(pl->rgb), free(pl->alpha), free(pl->fg), free(pl->screen), free(pl->hint), free(pl->scratch);
    memset(pl, 0, sizeof *pl);
}

ck_status ck_plate_generate(ck_plate *pl, const ck_plate_params *pp) {
    if (!pl || !pp || !pl->rgb || pl->width != pp->width || pl->height != pp->height || pp->hint_erode < 0 ||
        pp->hint_dilate < 0 || !(pp->noise >= 0.0f && pp->noise <= 1.0f) || !(pp->spill >= 0.0f && pp->spill <= 1.0f))
        return CK_STATUS_EINVAL;
    scene sc; /* ~12 KB of scene parameters */
    build_scene(&sc, pp);
    screen_and_subject(&sc, pl, pp->spill);
    for (int k = 0; k < N_STRANDS; k++) {
        const strand *t = &sc.strands[k];
        if (t->box[0] <= t->box[2] && t->box[1] <= t->box[3]) draw_strand(t, pl, pp->spill); /* else off-frame */
    }
    finish(&sc, pl, pp->spill, pp->noise);
    ck_plate_hint(pl->hint, pl->alpha, pl->width, pl->height, pp->hint_erode, pp->hint_dilate, pl->scratch);
    return CK_OK;
}
