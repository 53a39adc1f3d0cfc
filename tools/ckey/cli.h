/* Shared helpers of the ckey command-line tool. */
#ifndef CK_CLI_H
#define CK_CLI_H

#include "ckey.h"

#include <stdio.h>

int         ck_cli_bench(int argc, char **argv);
int         ck_cli_doctor(int argc, char **argv);
/* Fills the device, precision, full frame vs tiles and toggles `ckey doctor` recommends (name "auto");
 * returns 0 with a message for an unknown preset name. */
int         ck_cli_apply_preset(const char *name, ck_params *p);
int         ck_cli_plates(int argc, char **argv);
/* An integer option in [lo, hi]; 0 after a message naming the option. */
int         ck_cli_arg_long(const char *opt, const char *v, long lo, long hi, long *out);
/* The plate options `ckey plates` and `ckey quality` share (--size, --count, --seed, --hint-erode,
 * --hint-dilate): 1 taken, 0 not one of them, -1 bad value (message printed). */
struct ck_plate_params;
int         ck_cli_plate_option(const char *opt, const char *val, struct ck_plate_params *pp, long *count);
int         ck_cli_quality(int argc, char **argv);
int         ck_cli_parse_device(const char *v, ck_device *out);
int         ck_cli_parse_precision(const char *v, ck_precision *out);
const char *ck_cli_device_name(const ck_ctx *ctx);
double      ck_cli_median(double *v, int n);
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
