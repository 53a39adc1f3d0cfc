/* `ckey serve`: the HTTP side, on libmicrohttpd (serve.h). libmicrohttpd parses the protocol and refuses what
 * it cannot parse (400, or 431 for headers over CONN_MEMORY, 414 for a request line over it); this file checks
 * the token on every request, refuses other methods (405) and bodies (413: no route takes one), parses the raw
 * target itself (serve_req.c: the same code the fuzzer drives) and routes. One thread per connection: a key
 * waits for the keyer's lock, a render's event stream blocks in its reader, neither holds up other clients. */
#include "serve.h"

#include "ckey.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    CONN_MEMORY = 32 << 10, /* request line and headers of one request */
    BODY_MAX    = 4096,     /* no route reads a body; a form's few bytes are let through and ignored */
    CONN_MAX    = 64,
    IDLE_S      = 300,
};

typedef struct sv_conn {
    sv_server *s;
    char       target[SV_TARGET_MAX + 1]; /* as sent, before libmicrohttpd decodes it */
    int        too_long, started, over;
    size_t     body;
} sv_conn;

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *con) {
    (void)con;
    sv_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->s = cls;
    if (strlen(uri) > SV_TARGET_MAX) c->too_long = 1;
    else snprintf(c->target, sizeof c->target, "%s", uri);
    return c;
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)con, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

/* ---- responses ---- */

static enum MHD_Result send_resp(struct MHD_Connection *con, sv_resp *r, int page) {
    struct MHD_Response *resp;
    if (r->fd >= 0) {
        struct stat st;
        if (fstat(r->fd, &st) != 0) {
            close(r->fd), r->fd = -1;
            sv_error(r, 500, "cannot read the file");
            return send_resp(con, r, 0);
        }
        resp = MHD_create_response_from_fd((size_t)st.st_size, r->fd); /* closes it when done */
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body,
                                               r->is_static || !r->body ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE);
    }
    if (!resp) {
        if (!r->is_static) free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", r->type ? r->type : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    if (page) /* the page loads nothing from elsewhere and runs no inline script */
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    for (char *line = r->hdr; *line;) { /* "Name: value\n" lines */
        char *nl = strchr(line, '\n'), *colon = strchr(line, ':');
        if (!nl || !colon || colon > nl) break;
        *nl = *colon = '\0';
        MHD_add_response_header(resp, line, colon + 1 + (colon[1] == ' '));
        line = nl + 1;
    }
    const enum MHD_Result ok = MHD_queue_response(con, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result answer(struct MHD_Connection *con, int status, const char *fmt, const char *detail) {
    sv_resp r = {.fd = -1};
    sv_error(&r, status, fmt, detail ? detail : "");
    return send_resp(con, &r, 0);
}

/* ---- the render's event stream ---- */

typedef struct sv_stream {
    sv_server *s;
    uint64_t   pos;
} sv_stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sv_stream *st = cls;
    const long n  = sv_render_events(st->s->render, &st->pos, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static enum MHD_Result send_events(struct MHD_Connection *con, sv_server *s) {
    sv_stream *st = calloc(1, sizeof *st);
    if (!st) return answer(con, 500, "out of memory%s", NULL);
    st->s                     = s;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, free);
    if (!resp) return free(st), MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    const enum MHD_Result ok = MHD_queue_response(con, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* ---- small routes ---- */

static int handle_info(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[200];
    if (sv_req_only(q, "", why, sizeof why)) return sv_error(r, 400, "%s", why);
    char  *text = NULL;
    size_t len  = 0;
    FILE  *f    = open_memstream(&text, &len);
    if (!f) return sv_error(r, 500, "out of memory");
    static const char *prec[] = {"fp32", "bf16", "fp16", "auto"};
    static const char *dev[]  = {"auto", "cpu", "cuda"};
    const sv_settings *d      = &s->defaults;
    fprintf(f, "{\"version\": \"%s\", \"checkpoint\": ", ck_version());
    sv_json_str(f, s->ckpt);
    fprintf(f, ", \"device\": \"%s\", \"defaults\": {\"size\": %d, \"tile\": %d, \"overlap\": %d, \"precision\": \"%s\", "
               "\"despill\": %.9g, \"despeckle\": %d, \"despeckle_size\": %d, \"refiner_scale\": %.9g}, \"keyer\": ",
            dev[s->o.k.p.device % 3], d->size, d->tile, d->overlap, prec[d->precision & 3], d->despill, d->despeckle,
            d->despeckle_size, d->refiner_scale);
    sv_keyer_describe(s->keyer, f);
    fprintf(f, ", \"render\": ");
    sv_render_describe(s->render, f);
    fprintf(f, ", \"shots\": [");
    for (int i = 0; i < s->nshots; i++) {
        const sv_shot *sh = &s->shots[i];
        fprintf(f, "%s{\"index\": %d, \"name\": ", i ? ", " : "", i);
        sv_json_str(f, sh->name);
        fprintf(f, ", \"root\": ");
        sv_json_str(f, sh->root);
        fprintf(f, ", \"out\": ");
        sv_json_str(f, sh->out);
        fprintf(f, ", \"hints\": %s, \"frames\": [", sh->hint[0] ? "true" : "false");
        for (int k = 0; k < sh->frames.n; k++) {
            fprintf(f, "%s", k ? ", " : "");
            sv_json_str(f, sh->frames.stems[k]);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
    fclose(f);
    sv_json(r, text, len);
    return 200;
}

static int handle_render_state(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[200];
    if (sv_req_only(q, "", why, sizeof why)) return sv_error(r, 400, "%s", why);
    char  *text = NULL;
    size_t len  = 0;
    FILE  *f    = open_memstream(&text, &len);
    if (!f) return sv_error(r, 500, "out of memory");
    sv_render_describe(s->render, f);
    fputc('\n', f);
    fclose(f);
    sv_json(r, text, len);
    return 200;
}

/* /files/<shot>/<path>: a file of the shot (outputs to download), never outside its folder */
static int handle_file(sv_server *s, const char *rest, sv_resp *r) {
    char *end;
    errno      = 0;
    long  shot = strtol(rest, &end, 10);
    if (end == rest || *end != '/' || errno || shot < 0 || shot >= s->nshots || rest[0] < '0' || rest[0] > '9')
        return sv_error(r, 404, "no such shot");
    char      path[PATH_MAX], why[200];
    const int st = sv_resolve(s->shots[shot].root, end + 1, path, sizeof path, why, sizeof why);
    if (st) return sv_error(r, st, "%s", why);
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (r->fd < 0) return sv_error(r, 404, "cannot open the file");
    const char *dot = strrchr(path, '.');
    r->status = 200, r->type = "application/octet-stream";
    if (dot && (!strcmp(dot, ".png") || !strcmp(dot, ".PNG"))) r->type = "image/png";
    else if (dot && (!strcmp(dot, ".jpg") || !strcmp(dot, ".jpeg"))) r->type = "image/jpeg";
    else snprintf(r->hdr, sizeof r->hdr, "Content-Disposition: attachment\n");
    return 200;
}

typedef int (*sv_route_fn)(sv_server *, const sv_req *, sv_resp *);
static const struct {
    const char *method, *path;
    sv_route_fn fn;
} ROUTES[] = {
    {"GET", "/api/info", handle_info},           {"GET", "/api/frame", sv_handle_frame},
    {"POST", "/api/key", sv_handle_key},         {"GET", "/api/view", sv_handle_view},
    {"GET", "/api/pixel", sv_handle_pixel},      {"GET", "/api/pass", sv_handle_pass},
    {"POST", "/api/render", sv_handle_render},   {"POST", "/api/render/cancel", sv_handle_cancel},
    {"GET", "/api/render", handle_render_state}, {"GET", "/api/render/events", NULL}, /* the stream */
};

/* ---- the token ---- */

static int authorized(sv_server *s, struct MHD_Connection *con, const sv_req *q, int *from_query) {
    const char *v;
    *from_query = 0;
    if ((v = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "X-Ckey-Token")) && sv_token_equal(v, s->token)) return 1;
    if ((v = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization")) && !strncmp(v, "Bearer ", 7) &&
        sv_token_equal(v + 7, s->token))
        return 1;
    if ((v = MHD_lookup_connection_value(con, MHD_COOKIE_KIND, s->cookie)) && sv_token_equal(v, s->token)) return 1;
    if ((v = sv_query(q, "token")) && sv_token_equal(v, s->token)) return *from_query = 1;
    return 0;
}

/* The token leaves the query before a handler sees it (handlers refuse keys they do not know). */
static void drop_token(sv_req *q) {
    for (int i = 0; i < q->nq; i++)
        if (!strcmp(q->q[i].key, "token")) {
            memmove(&q->q[i], &q->q[i + 1], sizeof q->q[0] * (size_t)(q->nq - i - 1));
            q->nq--;
            return;
        }
}

static enum MHD_Result dispatch(sv_server *s, struct MHD_Connection *con, sv_conn *c, const char *method) {
    sv_req *req = calloc(1, sizeof *req); /* 14 KB: off the connection thread's stack */
    if (!req) return answer(con, 500, "out of memory%s", NULL);
    char why[300];
    int  st = c->too_long ? 414 : sv_req_parse(c->target, req, why, sizeof why);
    if (st) {
        free(req);
        return answer(con, st, "bad request: %s", c->too_long ? "request target too long" : why);
    }
    int from_query;
    if (!authorized(s, con, req, &from_query)) {
        free(req);
        return answer(con, 401, "%s", "open the address `ckey serve` printed: it carries the access token (?token=...)");
    }
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    sv_resp   r   = {.fd = -1};
    if (!strcmp(req->path, "/") && from_query && get) {
        /* the token into a cookie for the page's requests, and out of the address bar */
        snprintf(r.hdr, sizeof r.hdr, "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\nLocation: /\n", s->cookie,
                 s->token);
        r.status = 303, r.type = "text/plain", r.body = (unsigned char *)"see /\n", r.len = 6, r.is_static = 1;
        free(req);
        return send_resp(con, &r, 0);
    }
    drop_token(req);
    size_t      plen;
    const char *ptype;
    const unsigned char *page = sv_page_file(req->path, &plen, &ptype);
    if (page) {
        free(req);
        if (!get) return answer(con, 405, "%s", "the page is read with GET");
        r.status = 200, r.type = ptype, r.body = (unsigned char *)page, r.len = plen, r.is_static = 1;
        return send_resp(con, &r, 1);
    }
    if (!strncmp(req->path, "/files/", 7)) {
        if (!get) st = sv_error(&r, 405, "files are read with GET");
        else handle_file(s, req->path + 7, &r);
        free(req);
        return send_resp(con, &r, 0);
    }
    const char *allow = NULL; /* the path exists with another method */
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++) {
        if (strcmp(req->path, ROUTES[i].path)) continue;
        const int want_get = !strcmp(ROUTES[i].method, "GET");
        if (want_get != get) {
            allow = want_get ? "GET, HEAD" : "POST";
            continue;
        }
        if (!ROUTES[i].fn) { /* the render's events (an empty stream before any render) */
            free(req);
            return send_events(con, s);
        }
        ROUTES[i].fn(s, req, &r);
        free(req);
        return send_resp(con, &r, 0);
    }
    if (allow) {
        snprintf(r.hdr, sizeof r.hdr, "Allow: %s\n", allow);
        sv_error(&r, 405, "%s takes %s", req->path, allow);
        free(req);
        return send_resp(con, &r, 0);
    }
    free(req);
    return answer(con, 404, "no such page: %s", c->target[0] ? "see / for the review page" : NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)url, (void)version, (void)upload;
    sv_server *s = cls;
    sv_conn   *c = *con_cls;
    if (!c) return MHD_NO; /* out of memory when the request began: drop the connection */
    if (!c->started) {     /* headers complete, nothing of a body read yet */
        c->started = 1;
        if (strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "POST")) {
            sv_resp r = {.fd = -1};
            sv_error(&r, 405, "method %s is not served", method);
            snprintf(r.hdr, sizeof r.hdr, "Allow: GET, HEAD, POST\n");
            return send_resp(con, &r, 0);
        }
        const char *cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > BODY_MAX) /* answered before the body is read; the connection closes */
            return answer(con, 413, "request body over %s bytes", "4096");
        return MHD_YES;
    }
    if (*upload_size) { /* a body arrives in pieces (chunked ones have no Content-Length): counted, not kept */
        c->body += *upload_size;
        c->over |= c->body > BODY_MAX;
        *upload_size = 0;
        return MHD_YES;
    }
    if (c->over) return answer(con, 413, "request body over %s bytes", "4096");
    return dispatch(s, con, c, method);
}

void *sv_http_start(sv_server *s) {
    struct sockaddr_in  a4;
    struct sockaddr_in6 a6;
    struct sockaddr    *addr;
    unsigned            flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    memset(&a4, 0, sizeof a4), memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, s->o.bind, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET, a4.sin_port = htons((uint16_t)s->o.port), addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, s->o.bind, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6, a6.sin6_port = htons((uint16_t)s->o.port), addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "ckey: --bind expects an IPv4 or IPv6 address (127.0.0.1, ::1, 0.0.0.0), got '%s'\n", s->o.bind);
        return NULL;
    }
    errno = 0;
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)s->o.port, NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR, addr,
                         MHD_OPTION_URI_LOG_CALLBACK, uri_log, s, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)CONN_MAX, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_S,
                         MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "ckey: cannot listen on %s port %d%s%s\n", s->o.bind, s->o.port, errno ? ": " : "",
                errno ? strerror(errno) : "");
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    s->port                          = info && info->port ? info->port : s->o.port;
    snprintf(s->cookie, sizeof s->cookie, "ckey_token_%d", s->port);
    return d;
}

void sv_http_stop(void *daemon) { MHD_stop_daemon(daemon); }
