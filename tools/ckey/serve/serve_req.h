/* `ckey serve`: what a request asks for, parsed from its raw target (path and query as the client sent them,
 * before any decoding) with no HTTP library involved, so that fuzz/fuzz_serve_request.c can drive it alone.
 *
 * Every function returns 0 when the request is acceptable, else the HTTP status to answer with (400 malformed,
 * 403 a path that leaves its root, 404 nothing there, 414 a target too long) and a reason in why[].
 *
 *     sv_req r;
 *     int st = sv_req_parse("/api/key?shot=0&frame=3&despill=0.2", &r, why, sizeof why);   // 0
 *     st = sv_req_only(&r, "shot,frame,despill", why, sizeof why);                          // unknown keys: 400
 *     sv_settings s = defaults;
 *     st = sv_settings_from_query(&r, &s, why, sizeof why);                                  // ranges as --despill
 */
#ifndef CK_SERVE_REQ_H
#define CK_SERVE_REQ_H

#include <stddef.h>

#define SV_TARGET_MAX 4096 /* bytes of a request target: path and query */
#define SV_PATH_MAX 1024   /* of the decoded path */
#define SV_PARAMS_MAX 24
#define SV_KEY_MAX 32
#define SV_VAL_MAX 512

typedef struct sv_param {
    char key[SV_KEY_MAX];
    char val[SV_VAL_MAX];
} sv_param;

typedef struct sv_req {
    char     path[SV_PATH_MAX]; /* percent-decoded, starts with '/', no NUL inside */
    sv_param q[SV_PARAMS_MAX];  /* the query's pairs, decoded ('+' is a space); a key given twice is refused */
    int      nq;
} sv_req;

int         sv_req_parse(const char *target, sv_req *r, char *why, size_t n);
/* The decoded value of key, NULL when absent. */
const char *sv_query(const sv_req *r, const char *key);
/* 400 naming the first query key not in the comma list `allowed`. */
int         sv_req_only(const sv_req *r, const char *allowed, char *why, size_t n);
/* An integer in [lo, hi] (decimal, nothing else); *out unchanged when absent. */
int         sv_query_int(const sv_req *r, const char *key, long lo, long hi, long *out, char *why, size_t n);

/* The settings a frame is keyed with: those of `ckey key` that a review changes (same names, same ranges). */
typedef struct sv_settings {
    int   size;           /* model resolution: a multiple of 32 in [32, 16384] */
    int   tile, overlap;  /* tile 0 = full frame, else a multiple of 32 in [32, 16384]; 0 <= overlap < tile */
    int   precision;      /* ck_precision */
    float despill;        /* [0, 1] */
    int   despeckle;      /* 0 / 1 */
    int   despeckle_size; /* [1, 2^30] */
    float refiner_scale;  /* [-100, 100] */
} sv_settings;

/* The query keys sv_settings_from_query reads. */
#define SV_SETTINGS_KEYS "size,tile,overlap,precision,despill,despeckle,despeckle_size,refiner_scale"
/* Overrides the fields of *s that the query gives (overlap defaults to 64 when tile is given alone, as
 * `ckey key --tile` does); *s is unchanged when a value is refused. */
int sv_settings_from_query(const sv_req *r, sv_settings *s, char *why, size_t n);

/* A file under root (its realpath) named by rel, a relative path as decoded from a URL: empty components,
 * ".", "..", names starting with '.' (hidden or partial files) and absolute paths are refused (400 / 403),
 * so is anything whose realpath (symbolic links resolved) is not inside root (403); a missing file or
 * anything that is not a regular file (folders are never listed) is 404. The realpath into out. */
int sv_resolve(const char *root, const char *rel, char *out, size_t n, char *why, size_t wn);

/* 1 when a equals the secret b; the time taken does not depend on where they differ (every byte of b is
 * compared). */
int sv_token_equal(const char *a, const char *b);

#endif
