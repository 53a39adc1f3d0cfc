/* Shared pieces of `ckey key` and `ckey clip`: options, frame files and passes, events.
 * frame_io.c reads plates and hints and writes CorridorKey's passes atomically; key.c runs a shot
 * through the library's frame pipeline (ckey_pipe.h); key_args.c parses the command lines. */
#ifndef CK_CLI_KEY_H
#define CK_CLI_KEY_H

#include "ckey.h"
#include "cli.h"
#include "core/check.h"
#include "io/image.h"
#include "options.h"

#include <stdio.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef struct key_opts {
    const char        *image, *hint, *checkpoint, *out, *frames, *shard;
    const char        *frame_numbers; /* --frame-numbers A-B: by the number in the file names */
    int                shard_count;   /* --shard-count N: with --shard auto where the scheduler gives no count; 0: none */
    int                preset;        /* --preset auto: 1 (applied while parsing) */
    int                skip_existing;
    int                json; /* NDJSON events on stdout */
    const char        *video_out; /* comma list: prores, ffv1, h264 */
    ck_exr_compression exr;
    int                quiet;
    int                workers; /* post-processing and writing threads; 0 = ck_pipe_default_workers() */
    int                readers; /* decoding threads of a sequence; 0 = ck_pipe_default_readers() */
    int                size_set; /* --size given (else the built-in model runs at its training size) */
    ck_params          p;
} key_opts;

/* frame_io.c */
int         file_exists(const char *p);
#define CK_PATH_MAX 1100
/* Where a checkpoint is looked for, in order: $CKEY_CHECKPOINT (when set; *from_env), ./CorridorKey.pth,
 * ~/.cache/ckey/CorridorKey.pth. Returns the count (≤ 3). */
int         checkpoint_candidates(char out[][CK_PATH_MAX], int *from_env);
/* The first candidate that exists ($CKEY_CHECKPOINT as given), copied into buf; NULL if none. */
const char *default_checkpoint(char *buf, size_t n);
int         mkdir_p(const char *path);
void        file_stem(char *out, size_t n, const char *path);
int         is_dir(const char *p);
double      now_s(void);
/* The plate as 3-channel sRGB-or-linear floats (CorridorKey's CLI conventions); the hint's first channel.
 * Decoded into buf (cap floats; NULL for none) when it fits, then ->data may be buf (the caller's);
 * otherwise malloc'd. */
ck_status   read_plate(const char *path, int input_is_linear, float *buf, size_t cap, ck_image *rgb, ck_err *err);
ck_status   read_hint(const char *path, float *buf, size_t cap, ck_image *hint, ck_err *err);
/* Every pass of one frame into o->out, atomically as a set; 0 on success, else EXIT_RUNTIME. */
int         write_passes(const key_opts *o, const char *stem, const ck_passes *passes);
int         frame_done(const key_opts *o, const char *stem); /* every pass already there, decoding */
/* The files of a frame's passes (Matte, FG, Processed, Comp when written); returns how many. */
int         pass_final_paths(const key_opts *o, const char *stem, char paths[4][CK_PATH_MAX]);
void        json_failed(const key_opts *o, const char *msg, int code);
void        progress_human(int done_idx, int count, const char *stem, double fps, double eta);

/* encode.c: the videos (want: prores, ffv1, h264) of the shot in `out` from its passes, named
 * <stem>_prores4444.mov etc., at fps with the start timecode (NULL or "" for none); 0 with a message on
 * failure. cmd_encode: `ckey encode`. */
int encode_videos(const char *out, const char *stem, const int want[3], double fps, const char *timecode, int quiet,
                  char *emsg, size_t n);
/* What the videos of a shot carry (FFmpeg builds): a video source's start timecode video_tc counted on to
 * `first`, the first frame keyed; else the frame rate (into *fps, when stated) and timecode of frame_file,
 * the first keyed frame's file (EXR timeCode / framesPerSecond, DPX header). timecode[16] is "" when there
 * is none, or (with a warning) when it is not a timecode at *fps. */
void shot_video_meta(const char *frame_file, const char *video_tc, int first, double *fps, char timecode[16]);
int cmd_encode(int argc, char **argv);

/* key.c: keys o.image (a file, a folder of frames or a video) into o.out; returns the exit status. */
int run_key(key_opts o);

/* key_args.c: the command line of `ckey key` (cmd CK_CMD_KEY) or `ckey clip` (CK_CMD_CLIP: the folder in
 * res->pos[0]) into o; 0 after a message for a bad command line (--help prints the usage and exits 0).
 * ck_cli_parse_key: `ckey key`'s. ck_cli_is_clip: CorridorKey's clip folder layout (Input/ or
 * Input.<video>, AlphaHint/ or AlphaHint.<video>, Output/) at dir, its paths into input, hint, out. */
int ck_cli_parse_key_cmd(int argc, char **argv, key_opts *o, ck_cmd cmd, ck_opt_result *res);
int ck_cli_parse_key(int argc, char **argv, key_opts *o);
int ck_cli_is_clip(const char *dir, char *input, char *hint, char *out, size_t n);

#endif
