/* `ckey serve`: a local review page for shots (README "Reviewing a shot in the browser").
 *
 *   serve.c         the command: shots, the token, the daemon's life, signals
 *   serve_http.c    libmicrohttpd: the token check, routing, static page, responses, the event stream
 *   serve_req.c     request targets, query values and paths (no HTTP library; fuzzed)
 *   serve_key.c     keying one frame in the server (the library's ck_ctx), the cache of keyed frames, views
 *   serve_png.c     8-bit PNG encoding in memory (libdeflate)
 *   serve_render.c  the render button: `ckey key --json` as a child process, its events, cancel
 *   serve_page.c    the page (page/index.html, app.js, app.css), embedded at build time
 *
 * Threads: libmicrohttpd runs one thread per connection; keying is serialized by the keyer's lock (a context
 * is used by one thread at a time), keyed frames are shared by reference count, the render's state by its
 * own lock. */
#ifndef CK_SERVE_H
#define CK_SERVE_H

#include "cmd_opts.h"
#include "ckey_io.h"
#include "serve_req.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sv_shot {
    char   name[256];
    char   root[PATH_MAX];  /* realpath of the shot's folder: /files/ serves below it, nothing else */
    char   input[PATH_MAX + 16]; /* the frames: Input/ (CorridorKey's clips) or Plate/ (ckey plates) */
    char   hint[PATH_MAX + 16];  /* AlphaHint/, or "" for the automatic hint */
    char   out[PATH_MAX + 16];   /* Output/: where renders write */
    ck_seq frames, hints;
} sv_shot;

typedef struct sv_keyer sv_keyer;
typedef struct sv_render sv_render;

typedef struct sv_server {
    serve_opts   o;
    const char  *ckpt;        /* the checkpoint given to contexts (builtin:small without --checkpoint) */
    char         token[65];   /* 64 hex digits from the kernel's random source */
    char         cookie[32];  /* the token's cookie name, per port: browsers share cookies across ports */
    int          port;
    sv_shot     *shots;
    int          nshots;
    sv_settings  defaults;    /* from the command line */
    sv_keyer    *keyer;
    sv_render   *render;
    char         exe[PATH_MAX]; /* this ckey, which renders run */
    char         tmp[PATH_MAX]; /* a private folder for the pass files of keyed frames */
} sv_server;

/* A handler's answer (fd -1 unless a file is sent). The body is malloc'd (freed by the sender) or static; extra headers go in hdr as
 * "Name: value\n" lines. */
typedef struct sv_resp {
    int            status;
    const char    *type;
    unsigned char *body;
    size_t         len;
    int            is_static;
    char           hdr[512];
    int            fd;             /* instead of a body, when >= 0: send this open file (closed by the sender) */
    int            events;         /* instead of a body: the render's event stream */
} sv_resp;

/* Fills r with a JSON error {"error": msg} and status; returns status. */
int  sv_error(sv_resp *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Takes the text of a memstream as r's JSON body (status 200). */
void sv_json(sv_resp *r, char *text, size_t len);
void sv_json_str(FILE *f, const char *s);

/* serve_key.c */
sv_keyer *sv_keyer_new(sv_server *s);
void      sv_keyer_free(sv_keyer *k);
int       sv_handle_key(sv_server *s, const sv_req *q, sv_resp *r);   /* POST /api/key */
int       sv_handle_view(sv_server *s, const sv_req *q, sv_resp *r);  /* GET /api/view */
int       sv_handle_pixel(sv_server *s, const sv_req *q, sv_resp *r); /* GET /api/pixel */
int       sv_handle_pass(sv_server *s, const sv_req *q, sv_resp *r);  /* GET /api/pass */
int       sv_handle_frame(sv_server *s, const sv_req *q, sv_resp *r); /* GET /api/frame */
/* The device and precision of the current context, for /api/info ("" before the first key). */
void      sv_keyer_describe(sv_keyer *k, FILE *f);

/* serve_png.c: an 8-bit PNG (channels 1 or 3) of w x h pixels in memory; NULL when out of memory. */
unsigned char *sv_png_encode(const uint8_t *px, int w, int h, int channels, size_t *len);

/* serve_render.c */
sv_render *sv_render_new(void);
void       sv_render_free(sv_render *rd);                                /* cancels a running render */
int        sv_handle_render(sv_server *s, const sv_req *q, sv_resp *r);  /* POST /api/render */
int        sv_handle_cancel(sv_server *s, const sv_req *q, sv_resp *r);  /* POST /api/render/cancel */
void       sv_render_describe(sv_render *rd, FILE *f);                   /* JSON object of its state */
/* The event stream (text/event-stream) from byte `pos` of the render's events: blocks until there is
 * something to send, up to a keep-alive interval; returns bytes written to buf, or -1 at the end (the
 * render is over and everything was sent, or the server stops). */
long       sv_render_events(sv_render *rd, uint64_t *pos, char *buf, size_t max);
void       sv_render_stop_streams(sv_render *rd);

/* serve_page.c: the embedded page's files ("/", "/app.js", "/app.css"); NULL for other paths. */
const unsigned char *sv_page_file(const char *path, size_t *len, const char **type);

/* serve_http.c: starts the daemon on s->o.bind : s->o.port (s->port set to the port bound); 0 with a
 * message on stderr when it cannot. */
void *sv_http_start(sv_server *s);
void  sv_http_stop(void *daemon);

/* serve.c: a shot by index, NULL with a 404 in r when out of range; the frame count is checked too when
 * frame >= 0. */
sv_shot *sv_shot_of(sv_server *s, const sv_req *q, long *frame, sv_resp *r);

#endif
