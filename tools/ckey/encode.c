/* `ckey encode OUT`: the shot's videos from the passes already written in OUT (the library's
 * ck_shot_encode_videos: ProRes 4444 / FFV1 from FG + Matte, H.264 from Comp, in frame order, the samples
 * `ckey key` writes while keying), with the rate and start timecode given as --fps and --timecode (the
 * passes do not record them). `ckey key --skip-existing` encodes by itself once every frame of the shot is
 * there (ck_shot_encode_pending). */
#include "key.h"
#include "cmd_opts.h"
#include "options.h"

#ifdef CK_HAVE_FFMPEG
#include "ckey_io.h"
#endif

#include <stdlib.h>
#include <string.h>

static void usage_encode(FILE *f) {
    fprintf(f, "usage: ckey encode OUT [--video-out prores,ffv1,h264] [--fps F] [--timecode HH:MM:SS:FF] [--name STEM]\n"
               "Encodes the videos of a shot from the passes in OUT (OUT/FG + OUT/Matte: ProRes 4444 or FFV1 with\n"
               "the matte as alpha; OUT/Comp: H.264), frames in natural order, as `ckey key` would have written\n"
               "them while keying (the same samples): after --shard runs, or to redo a deliverable. `ckey key\n"
               "--skip-existing` encodes by itself once every frame of the shot is there, with the source's rate\n"
               "and timecode.\n"
               "\n"
               "options:\n");
    ck_opts_help(f, CK_CMD_ENCODE);
}

int cmd_encode(int argc, char **argv) {
    encode_opts eo = {"prores,h264", NULL, NULL, 24.0};
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_ENCODE, argc, argv, &eo, &r);
    if (st == CK_OPT_HELP) {
        usage_encode(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return EXIT_USAGE;
    const char  *out = r.npos ? r.pos[0] : NULL, *list = eo.list, *name = eo.name, *timecode = eo.timecode;
    const double fps = eo.fps;
    if (!out) {
        fprintf(stderr, "ckey: encode needs an output folder: ckey encode OUT [options] (see 'ckey encode --help')\n");
        return EXIT_USAGE;
    }
#ifdef CK_HAVE_FFMPEG
    char tc[16];
    if (timecode && !ck_video_timecode_at(timecode, fps, 0, tc)) {
        fprintf(stderr, "ckey: --timecode %s is not a start timecode at %.3f fps (HH:MM:SS:FF, frames below the rate; "
                        "';' before FF for drop-frame at 29.97/59.94)\n", timecode, fps);
        return EXIT_USAGE;
    }
#endif
    const int want[3] = {strstr(list, "prores") != NULL, strstr(list, "ffv1") != NULL, strstr(list, "h264") != NULL};
    if (!want[0] && !want[1] && !want[2]) {
        fprintf(stderr, "ckey: --video-out %s names no video (prores, ffv1, h264)\n", list);
        return EXIT_USAGE;
    }
    char stem[1024], folder[1024];
    snprintf(folder, sizeof folder, "%s", out);
    for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
    if (name) snprintf(stem, sizeof stem, "%s", name);
    else ck_shot_file_stem(stem, sizeof stem, folder);
    char emsg[1400];
    int  frames = 0;
    if (ck_shot_encode_videos(out, stem, list, fps, timecode, &frames, emsg, sizeof emsg) != CK_OK) {
        fprintf(stderr, "ckey: %s\n", emsg);
        return EXIT_RUNTIME;
    }
    fprintf(stderr, "ckey: encoded %d frames of %s into its videos\n", frames, out);
    return 0;
}
