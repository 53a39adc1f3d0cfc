/* `ckey serve`'s command line (the option table does the options): its usage text and checks. The server
 * itself (tools/ckey/serve/) is built when libmicrohttpd is found (CK_HAVE_SERVE); without it the command
 * still parses its options and says what is missing. */
#include "cli.h"
#include "cmd_opts.h"
#include "key.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sv_run(serve_opts *o, const char *dir); /* serve/serve.c */

static void usage_serve(FILE *f) {
    fprintf(f, "usage: ckey serve SHOT|CLIPS [--port N] [--bind ADDR] [key options]\n"
               "\n"
               "A review page for a shot in the browser: the frames on a scrubber; plate, matte, foreground,\n"
               "processed and comp side by side or with a wipe, over a checkerboard or a colour, zoomed to the\n"
               "pixel; any frame keyed on demand with the settings of the page (model size, tiles, despill,\n"
               "despeckle, refiner scale, precision) and the time it took; the whole shot rendered through\n"
               "`ckey key` with its progress, and cancelled.\n"
               "\n"
               "SHOT is a CorridorKey clip folder (Input/ frames, AlphaHint/ hints, renders into Output/) or a\n"
               "folder of `ckey plates` (Plate/, AlphaHint/); CLIPS a folder of such shots. Without hints the\n"
               "automatic hint is used. The server prints its address with a random token: open that URL (the\n"
               "token is required on every request; the page keeps it in a cookie). It listens on 127.0.0.1\n"
               "unless --bind says otherwise; from another machine: ssh -L 8642:127.0.0.1:8642 HOST, then open\n"
               "the printed URL there. One render runs at a time. The key options below are the page's first\n"
               "settings and those of its renders. Ctrl-C stops the server (and a render it runs).\n"
               "\n");
    ck_opts_help(f, CK_CMD_SERVE);
    fprintf(f, "\n"
               "exit status: 0 stopped by SIGINT / SIGTERM, 1 failure (no shot, port in use), 2 invalid command line.\n");
}

int ck_cli_serve(int argc, char **argv) {
    serve_opts    o;
    ck_opt_result res;
    memset(&o, 0, sizeof o);
    o.k.p              = ck_params_default();
    o.k.p.tile_overlap = -1;
    o.k.exr            = CK_EXR_PXR24;
    o.port             = 8642;
    o.bind             = "127.0.0.1";
    const int st       = ck_opts_parse(CK_CMD_SERVE, argc, argv, &o, &res);
    if (st == CK_OPT_HELP) {
        usage_serve(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return EXIT_USAGE;
    if (res.npos != 1) {
        fprintf(stderr, "ckey: serve needs a shot or a folder of shots: ckey serve DIR (see 'ckey serve --help')\n");
        return EXIT_USAGE;
    }
    o.k.size_set = ck_opts_given(&res, CK_CMD_SERVE, "size");
    if (o.k.p.colorspace != CK_CS_DEFAULT) o.k.p.input_is_linear = 1; /* as ckey key: plates read as stored */
    if (o.k.p.tile_overlap < 0) o.k.p.tile_overlap = o.k.p.tile ? (o.k.p.tile > 128 ? 64 : o.k.p.tile / 4) : 0;
    if (o.k.p.tile && o.k.p.tile_overlap >= o.k.p.tile) {
        fprintf(stderr, "ckey: --overlap %d must be smaller than --tile %d\n", o.k.p.tile_overlap, o.k.p.tile);
        return EXIT_USAGE;
    }
#ifdef CK_HAVE_SERVE
    return sv_run(&o, res.pos[0]);
#else
    fprintf(stderr, "ckey: this ckey was built without `serve`: it needs libmicrohttpd (Debian: apt-get install "
                    "libmicrohttpd-dev) and libdeflate at configure time\n");
    return EXIT_RUNTIME;
#endif
}
