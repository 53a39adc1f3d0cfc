/* The option structs of ckey's commands other than `key` / `clip` (key.h's key_opts): the option table
 * (option_table.c) stores each command's values at offsets into these. */
#ifndef CK_CLI_CMD_OPTS_H
#define CK_CLI_CMD_OPTS_H

#include "ckey.h"
#include "ckey_qa.h"
#include "key.h"
#include "sweep.h"

#define BENCH_MAX_RES 16

typedef struct bench_opts {
    const char   *ckpt, *dump, *md, *json;
    const char   *input;      /* --input: the network input (S, S, 4) float32 .npy instead of the built-in one */
    const char   *dump_inter; /* --dump-intermediates: folder for f1..f4, logits, logits_up, delta_raw */
    ck_params     p;
    int           warmup, runs, profile, size_set;
    int           sweep_set;
    ck_sweep_kind sweep;
    int           res[BENCH_MAX_RES], n_res;
    int           tiled[BENCH_MAX_RES][2], n_tiled; /* [n_tiled] (tile, overlap) */
    ck_precision  half;
    int           half_set;
    unsigned      toggles;
    int           toggles_set;
    int           frame_w, frame_h; /* --frame: also time ck_key_passes on a frame of this size */
    int           batch;            /* --batch: images per forward (0: the context's choice) */
    const char   *devices;          /* --devices LIST|all: the scaling over 1..N devices (bench_devices.c) */
    const char   *clip, *clip_hint; /* --clip DIR [--clip-hint DIR]: with --devices, also end to end */
} bench_opts;

/* bench_devices.c: `ckey bench --devices`. The exit status. */
int bench_devices(const bench_opts *o);

/* The generated plates of `ckey plates` and `ckey quality`. */
typedef struct ck_plate_set {
    ck_plate_params pp;
    int             count;
} ck_plate_set;

typedef struct quality_opts {
    const char  *ckpt, *plates, *configs, *json, *md;
    ck_plate_set set;
    int          model_size, warmup; /* warmup -1: the device's default */
    ck_params    base;               /* of every configuration */
} quality_opts;

typedef struct plates_opts {
    const char  *out;
    ck_plate_set set;
    int          png; /* --format png */
} plates_opts;

typedef struct doctor_opts {
    int         json;
    const char *ckpt, *bench;
} doctor_opts;

typedef struct encode_opts {
    const char *list, *name, *timecode;
    double      fps;
} encode_opts;

#define FARM_MAX_SBATCH 32
/* `ckey farm slurm`: its own options; the `ckey key` options of the tasks are collected as given. */
typedef struct farm_opts {
    const char *shot, *out, *hint, *partition, *time, *job_name, *video_out, *ckey;
    double      fps; /* 0: not given */
    int         chunk, gpus;
    const char *sbatch_args[FARM_MAX_SBATCH];
    int         n_sbatch;
    int         dry_run, wait;
    char       *key_args[128]; /* the options passed to ckey key (pointers into argv, or paths) */
    int         n_key;
} farm_opts;

/* `ckey farm assemble` */
typedef struct assemble_opts {
    const char *video_out, *name;
    double      fps; /* 0: not given */
} assemble_opts;

/* `ckey serve`: the key options a review starts from (key_opts first, so that the table's key entries, offsets
 * into key_opts, serve it as they are), and where it listens. */
typedef struct serve_opts {
    key_opts    k;
    int         port;
    const char *bind;
} serve_opts;

#endif
