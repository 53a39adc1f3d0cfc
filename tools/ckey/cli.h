/* Shared helpers of the ckey command-line tool. */
#ifndef CK_CLI_H
#define CK_CLI_H

#include "ckey.h"

#include <stdio.h>

/* What the CLI says, once, when it falls back to the built-in model (CK_BUILTIN_SPEC). */
#define CK_CLI_BUILTIN_NOTE "built-in small keyer (no checkpoint configured); for CorridorKey quality use CorridorKey.pth"

int         ck_cli_bench(int argc, char **argv);
int         ck_cli_doctor(int argc, char **argv);
/* Fills the device, precision, full frame vs tiles and toggles `ckey doctor` recommends (name "auto");
 * returns 0 with a message for an unknown preset name. */
int         ck_cli_apply_preset(const char *name, ck_params *p);
int         ck_cli_plates(int argc, char **argv);
int         ck_cli_quality(int argc, char **argv);
int         ck_cli_serve(int argc, char **argv); /* serve_cmd.c: `ckey serve` */
/* bench.c: median and p95 of n timings (sweep.c's rules; v is reordered) */
double      ck_cli_median(double *v, int n);
/* farm_cmd.c: `ckey farm` (slurm, assemble). shard.c: the frames a task keys. ck_cli_shard: --shard I/N (0-based) or auto (the index and count
 * of a Slurm array task or a Kubernetes Indexed Job, count_opt (--shard-count; 0: none) / CKEY_SHARD_COUNT
 * where the scheduler gives none); 0 with the error in msg, 1 with msg saying where an automatic shard came
 * from (else ""). */
int         cmd_farm(int argc, char **argv);
int         ck_cli_shard(const char *spec, int count_opt, int *index, int *count, char *msg, size_t n);
/* --frame-numbers A-B: the positions [*first, *last] of the frames whose number (the last run of digits in
 * the stem, plate.1001 -> 1001; a video's 0-based index) lies in A..B; 0 with a message when the range
 * reaches outside the shot's numbers, a stem has none, or the frames are not consecutive. */
int         ck_cli_frame_numbers(const char *range, char *const *stems, int n, int is_video, int *first, int *last,
                                 char *msg, size_t msg_n);
int         ck_frame_number(const char *stem, long *number); /* 0 when the stem has no digits */
double      ck_cli_p95(double *v, int n);

/* Writes s as a JSON string literal (quotes and backslashes escaped, control characters as \u escapes
 * of four hex digits); NULL writes "". For --json events and reports. */
static inline void ck_cli_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

#endif
