/* Shared pieces of `ckey key` and `ckey clip`: options, events, the checkpoint search. key.c keys a shot
 * through the library (ckey_shot.h: frames in, passes and videos out, resume) and reports it (progress,
 * NDJSON, signals); key_args.c parses the command lines; cli_files.c holds the small helpers. */
#ifndef CK_CLI_KEY_H
#define CK_CLI_KEY_H

#include "ckey.h"
#include "ckey_pipe.h"
#include "ckey_shot.h"
#include "cli.h"
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
    const char        *devices;  /* --devices LIST|all: CUDA devices to share the frames among; NULL: one context */
    ck_params          p;
} key_opts;

/* devices.c: --devices. The device indices of LIST ("0,1", "0,0" = two streams of GPU 0, or "all"), at most
 * max; -1 with the message in msg when LIST is wrong or names a device that is not there. */
int key_parse_devices(const char *list, int *idx, int max, char *msg, size_t n);
/* A context per entry of idx (n of them, all with params p on CUDA device idx[i]), one model per distinct
 * device shared by that device's contexts. 1 on success; 0 with the message in msg (none left open). */
int key_open_contexts(const char *ckpt, const ck_params *p, const int *idx, int n, ck_ctx **ctxs, char *msg, size_t len);

/* cli_files.c: the checkpoint search, small file helpers, events */
int         file_exists(const char *p);
int         is_dir(const char *p);
double      now_s(void);
#define CK_PATH_MAX 1100
/* Where a checkpoint is looked for, in order: $CKEY_CHECKPOINT (when set; *from_env), ./CorridorKey.pth,
 * ~/.cache/ckey/CorridorKey.pth. Returns the count (≤ 3). */
int         checkpoint_candidates(char out[][CK_PATH_MAX], int *from_env);
/* The first candidate that exists ($CKEY_CHECKPOINT as given), copied into buf; NULL if none. */
const char *default_checkpoint(char *buf, size_t n);
/* Every pass of the frame is in o->out and decodes (ck_shot_frame_written); a pass that does not decode
 * is named in a warning. */
int         frame_done(const key_opts *o, const char *stem);
void        json_failed(const key_opts *o, const char *msg, int code);
void        progress_human(int done_idx, int count, const char *stem, double fps, double eta);

/* encode.c: `ckey encode` (the shot's videos from its passes: ck_shot_encode_videos). */
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
/* The entries of a folder of clips in natural order, without those CorridorKey passes over (names starting
 * with '.' or '_', Output, IgnoredClips): *n strings, each and the array malloc'd (ck_cli_free_names). NULL
 * with a message printed when the folder cannot be read. */
char **ck_cli_clip_names(const char *dir, int *n);
void   ck_cli_free_names(char **names, int n);

#endif
