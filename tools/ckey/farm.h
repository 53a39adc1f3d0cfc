/* `ckey farm`: shared pieces of farm.c (frame selection, the shot, job.conf, running a command),
 * farm_slurm.c (`ckey farm slurm`) and farm_assemble.c (`ckey farm assemble`). */
#ifndef CK_CLI_FARM_H
#define CK_CLI_FARM_H

#include "key.h"

#include <stdio.h>

/* The frames of the shot a farm job keys, in the order `ckey key` keys them. */
typedef struct farm_shot {
    char   name[256]; /* the videos' and the manifest's name: the folder's or the file's stem, as ckey key */
    char **stems;     /* [n] each frame's pass name (a video's frames: 00000, 00001, ...) */
    int    n;
    int    is_video;
    double fps; /* a video's rate, else 24 */
} farm_shot;

int  farm_shot_open(farm_shot *s, const char *image, char *msg, size_t n);
void farm_shot_free(farm_shot *s);

/* OUT/.farm/job.conf as `ckey farm slurm` writes it: "key=value" lines, a value running to the end of its
 * line (paths with a newline are refused when it is written). */
#define FARM_MAX_ARGS 128
typedef struct farm_conf {
    char  image[CK_PATH_MAX], hint[CK_PATH_MAX], name[256], video_out[64];
    double fps;                 /* 0: not given */
    char *args[FARM_MAX_ARGS];  /* the `ckey key` options of the shot (strdup'd) */
    int   nargs;
} farm_conf;

int  farm_conf_read(farm_conf *c, const char *out); /* 0 when there is none */
void farm_conf_free(farm_conf *c);

/* text into path through a temporary file and a rename; 0 on failure (errno set) */
int farm_write_file(const char *path, const char *text, int executable);
/* Runs argv (PATH search) and waits; stdout into out (n bytes, NUL-terminated) when out is given, stderr
 * passes through. Returns the exit status, 128 + signal, or -1 when it could not be started. */
int farm_run(char *const argv[], char *out, size_t n);

int  farm_slurm(int argc, char **argv);
int  farm_assemble(int argc, char **argv);
void farm_usage(FILE *f);


#endif
