/* ckey command-line tool: command dispatch and the options of `ckey key` / `ckey clip` (key.c runs
 * them; bench.c, quality.c, plates.c and doctor.c hold the other commands).
 * Exit codes: 0 success, 1 runtime failure (I/O, model, device), 2 usage error. */
#include "ckey.h"
#include "cli.h"
#include "key.h"
#include "options.h"
#include "ckey_io.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void usage_main(FILE *f) {
    fprintf(f,
            "ckey %d.%d.%d - CorridorKey neural green-screen keyer\n"
            "\n"
            "usage: ckey <command> [options]\n"
            "\n"
            "commands:\n"
            "  key       key a frame, a folder of frames or a video: plate + rough alpha hint -> Matte, FG,\n"
            "            Processed, Comp passes (and ProRes 4444 / FFV1 / H.264 videos)\n"
            "  clip      key a CorridorKey clip folder (Input/, AlphaHint/ -> Output/), or a folder of clips\n"
            "  encode    a shot's videos (ProRes 4444, FFV1, H.264) from the passes in its output folder\n"
            "  farm      render farms: `farm slurm` submits a shot as a Slurm array job, `farm assemble`\n"
            "            checks and finishes a farmed shot (manifest, videos)\n"
            "  bench     time the network alone at one size (JSON), or sweep the toggles (--sweep)\n"
            "  doctor    devices, checkpoint, and the configuration this machine should use\n"
            "  plates    write synthetic green-screen plates with exact ground truth (alpha, fg, hint)\n"
            "  quality   score configurations (full frame, tiled, precision, refiner) against plate truth\n"
            "  serve     a review page for a shot in the browser: views, wipe, zoom, keying on demand, render\n"
            "  version   print the version\n"
            "\n"
            "Run 'ckey <command> --help' for the options of a command. An option takes its value as the next\n"
            "argument or after '=' (--size 1024, --size=1024); a toggle is --x / --no-x (--sdpa, --no-sdpa).\n",
            CK_VERSION_MAJOR, CK_VERSION_MINOR, CK_VERSION_PATCH);
}

int run_key(key_opts o);

static int cmd_key(int argc, char **argv) {
    key_opts      o;
    ck_opt_result res;
    if (!ck_cli_parse_key_cmd(argc, argv, &o, CK_CMD_KEY, &res)) return EXIT_USAGE;
    return run_key(o);
}

static int cmd_clip(int argc, char **argv) {
    key_opts      base;
    ck_opt_result res;
    if (!ck_cli_parse_key_cmd(argc, argv, &base, CK_CMD_CLIP, &res)) return EXIT_USAGE;
    if (res.npos < 1) {
        fprintf(stderr, "ckey: clip needs a folder: ckey clip DIR [options] (see 'ckey clip --help')\n");
        return EXIT_USAGE;
    }
    const char *root = res.pos[0];
    static char input[4096], hint[4096], out[4096];
    if (ck_cli_is_clip(root, input, hint, out, sizeof input)) {
        key_opts o = base;
        o.image = input, o.hint = hint[0] ? hint : NULL, o.out = out;
        return run_key(o);
    }
    /* a folder of clips */
    int    n = 0, rc = 0;
    char **names = ck_cli_clip_names(root, &n);
    if (!names) return EXIT_RUNTIME;
    /* every clip is keyed; the ones that fail and the folders that are not clips are named at the end */
    int    clips = 0, failed = 0, usage = 0;
    char   failed_names[2048] = "", skipped_names[2048] = "";
    for (int i = 0; i < n && !usage; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        if (!is_dir(dir)) continue;
        if (!ck_cli_is_clip(dir, input, hint, out, sizeof input)) {
            const size_t l = strlen(skipped_names);
            snprintf(skipped_names + l, sizeof skipped_names - l, "%s%s", l ? ", " : "", names[i]);
            continue;
        }
        key_opts o = base;
        o.image = input, o.hint = hint[0] ? hint : NULL, o.out = out;
        if (!o.quiet && !o.json) fprintf(stderr, "ckey: clip %s\n", names[i]);
        const int r = run_key(o);
        clips++;
        if (r == EXIT_USAGE || r >= 128) usage = 1, rc = r; /* wrong options for every clip, or interrupted: stop */
        else if (r != 0) {
            const size_t l = strlen(failed_names);
            snprintf(failed_names + l, sizeof failed_names - l, "%s%s", l ? ", " : "", names[i]);
            failed++, rc = EXIT_RUNTIME;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (skipped_names[0])
        fprintf(stderr, "ckey: warning: %s: not clips (no Input/ folder or Input video), skipped: %s\n", root,
                skipped_names);
    if (failed)
        fprintf(stderr, "ckey: %d of %d clips failed: %s (the others were keyed)\n", failed, clips, failed_names);
    if (rc == 0 && clips == 0) {
        fprintf(stderr, "ckey: %s: neither a clip (no Input/ folder) nor a folder of clips\n", root);
        return EXIT_RUNTIME;
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("ckey %s\n", ck_version());
        return 0;
    }
    if (!strcmp(cmd, "key")) return cmd_key(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return ck_cli_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "doctor")) return ck_cli_doctor(argc - 2, argv + 2);
    if (!strcmp(cmd, "plates")) return ck_cli_plates(argc - 2, argv + 2);
    if (!strcmp(cmd, "quality")) return ck_cli_quality(argc - 2, argv + 2);
    if (!strcmp(cmd, "clip")) return cmd_clip(argc - 2, argv + 2);
    if (!strcmp(cmd, "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(cmd, "farm")) return cmd_farm(argc - 2, argv + 2);
    if (!strcmp(cmd, "serve")) return ck_cli_serve(argc - 2, argv + 2);
    fprintf(stderr, "ckey: unknown command '%s'\n", cmd);
    usage_main(stderr);
    return EXIT_USAGE;
}
