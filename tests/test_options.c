/* The CLI's option table (tools/ckey/option_table.c) against its parser and the built ckey, driven by the
 * table itself: for every command and every option of it,
 *   - the command's --help (the binary's) names it (a toggle both --x and --no-x, a deprecated --x 0|1 too)
 *     and contains the option list generated from the table,
 *   - the parser takes valid values (the range's ends, every enum name) and stores them where the entry
 *     says (read back at the entry's offset), sets a flag, sets and clears a toggle,
 *   - out-of-range and malformed values are refused with CK_OPT_USAGE and one message naming the option
 *     and the range, and the binary exits 2 on them;
 * plus the table's own consistency (one entry per name and command, offsets inside their structs, a
 * {range} in every numeric help), the --x=V and multi-value spellings, the farm's pass-through of key
 * options, and end to end: `ckey bench --size 100` exits 2, bench's JSON reports each toggle as set by
 * --x, --no-x and the deprecated --x 0|1, and `ckey key --no-comp` writes no Comp pass. */
#include "harness.h"
#include "cmd_opts.h"
#include "io/image.h"
#include "key.h"
#include "options.h"
#include "sweep.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_bin[1024], g_tmp[1024], g_fx[1024];
static char g_msg[4096]; /* the parser's messages of the last parse() */

/* In-process parse of argv as options of cmd into a zeroed option struct (own, calloc'd: the caller frees). */
static int parse(ck_cmd cmd, void **own, ck_opt_result *r, int argc, const char **argv) {
    char  *buf = NULL;
    size_t len = 0;
    *own       = calloc(1, ck_commands[cmd].own_size);
    ck_opts_errors = open_memstream(&buf, &len);
    const int st   = ck_opts_parse(cmd, argc, (char **)argv, *own, r);
    fclose(ck_opts_errors);
    ck_opts_errors = NULL;
    snprintf(g_msg, sizeof g_msg, "%s", buf ? buf : "");
    free(buf);
    return st;
}

/* Where the parser should have put e's value (the table's offset from the entry's struct). */
static char *where(const ck_opt *e, ck_cmd cmd, void *own) {
    const ck_cmd_info *ci = &ck_commands[cmd];
    const long base = e->dest == CK_DEST_OWN ? 0 : e->dest == CK_DEST_PARAMS ? ci->params_off : ci->plates_off;
    return (char *)own + base + e->off;
}

/* "--name" in text, not as part of a longer option name */
static int has_option(const char *text, const char *opt) {
    const size_t l = strlen(opt);
    for (const char *p = text; (p = strstr(p, opt)); p++) {
        const char before = p == text ? ' ' : p[-1], after = p[l];
        if (before != '-' && !isalnum((unsigned char)before) && after != '-' && !isalnum((unsigned char)after))
            return 1;
    }
    return 0;
}

static void read_file(const char *path, char *text, size_t n) {
    FILE  *f   = fopen(path, "r");
    size_t got = f ? fread(text, 1, n - 1, f) : 0;
    text[got]  = '\0';
    if (f) fclose(f);
}

/* Runs `ckey ARGS` with stdout and stderr into g_tmp/run.log (read into log); the exit status. */
static int run(char *log, size_t n, const char *fmt, ...) {
    char    args[4096], cmd[8192], path[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/run.log", g_tmp);
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>&1", g_bin, args, path);
    const int rc = system(cmd);
    if (log) read_file(path, log, n);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* ---- values of the custom kinds (what each must store, read back independently) ---- */

typedef struct sample {
    const char *name;
    const char *good;
    long        want[2]; /* the int(s) stored; seed: the value; toggles: the mask */
    const char *bad[3];
} sample;

static const sample SAMPLES[] = {
    {"colorspace", "logc3", {CK_CS_LOGC3}, {"logc9", "", NULL}},
    {"tile", "768/64", {768, 64}, {"100/8", "64/64", "768"}},
    {"tiled", "512/64", {512, 64}, {"512/600", "0/0", "x"}},
    {"frame", "3840x2160", {3840, 2160}, {"0x10", "3840x", "16385x2"}},
    {"toggles", "sdpa,compile", {(1 << CK_TOG_SDPA) | (1 << CK_TOG_COMPILE)}, {"warp", "sdpa,warp", ""}},
    {"size", "96x72", {96, 72}, {"8x8", "12x", "96x72x3"}},
    {"seed", "18446744073709551615", {-1}, {"-1", "x", "18446744073709551616"}},
};

static const sample *sample_of(const char *name) {
    for (size_t i = 0; i < sizeof SAMPLES / sizeof SAMPLES[0]; i++)
        if (!strcmp(SAMPLES[i].name, name)) return &SAMPLES[i];
    return NULL;
}

static int custom_stored(const ck_opt *e, const sample *s, const char *dst) {
    int i2[2];
    if (!strcmp(e->name, "seed")) {
        uint64_t v;
        memcpy(&v, dst, sizeof v);
        return v == UINT64_MAX;
    }
    if (!strcmp(e->name, "toggles")) {
        unsigned v;
        memcpy(&v, dst, sizeof v);
        return v == (unsigned)s->want[0];
    }
    memcpy(i2, dst, strcmp(e->name, "colorspace") ? 2 * sizeof(int) : sizeof(int));
    return i2[0] == s->want[0] && (!strcmp(e->name, "colorspace") || i2[1] == s->want[1]);
}

/* The size of one stored value of e (for the offset checks). */
static size_t value_size(const ck_opt *e) {
    switch (e->kind) {
    case CK_OPT_REAL: return e->is_float ? sizeof(float) : sizeof(double);
    case CK_OPT_STRING: return sizeof(const char *);
    case CK_OPT_CUSTOM:
        if (e->elem_size) return e->elem_size;
        if (!strcmp(e->name, "seed")) return sizeof(uint64_t);
        if (!strcmp(e->name, "colorspace") || !strcmp(e->name, "toggles")) return sizeof(int);
        return 2 * sizeof(int); /* WxH, T/O */
    default: return sizeof(int);
    }
}

/* ---- per entry ---- */

/* The values an INT / REAL entry must refuse, and two it must take. */
static int numeric_values(const ck_opt *e, char good[2][64], char bad[4][64]) {
    int nb = 0;
    if (e->kind == CK_OPT_INT) {
        snprintf(good[0], 64, "%.0f", e->min), snprintf(good[1], 64, "%.0f", e->max);
        snprintf(bad[nb++], 64, "%.0f", e->min - 1), snprintf(bad[nb++], 64, "%.0f", e->max + 1);
        if (e->step > 1) snprintf(bad[nb++], 64, "%.0f", e->min + e->step / 2);
        snprintf(bad[nb++], 64, "%.0fabc", e->min);
    } else {
        snprintf(good[0], 64, "%.17g", e->min_open ? (e->min + e->max) / 2 : e->min), snprintf(good[1], 64, "%.17g", e->max);
        snprintf(bad[nb++], 64, "%.17g", e->max + 1), snprintf(bad[nb++], 64, "%.17g", e->min_open ? e->min : e->min - 1);
        snprintf(bad[nb++], 64, "nan"), snprintf(bad[nb++], 64, "1e999");
    }
    return nb;
}

static void check_entry(const ck_opt *e, ck_cmd cmd, const char *help) {
    const char    *cname = ck_commands[cmd].name;
    char           opt[80], noopt[90], legacy[96];
    void          *own;
    ck_opt_result  r;
    snprintf(opt, sizeof opt, "--%s", e->name);
    snprintf(noopt, sizeof noopt, "--no-%s", e->name);
    snprintf(legacy, sizeof legacy, "--%s 0|1", e->name);
    CHECK_MSG(has_option(help, opt), "`ckey %s --help` does not name %s", cname, opt);
    if (e->kind == CK_OPT_TOGGLE) CHECK_MSG(has_option(help, noopt), "`ckey %s --help` does not name %s", cname, noopt);
    if (e->legacy01 & CK_IN(cmd)) CHECK_MSG(strstr(help, legacy) != NULL, "`ckey %s --help` lacks %s", cname, legacy);

    if (e->kind == CK_OPT_FLAG || e->kind == CK_OPT_TOGGLE) {
        const int on = e->invert ? 0 : 1;
        const char *a1[] = {opt}, *a2[] = {noopt}, *a3[] = {opt, "0"}, *a4[] = {opt, "1"}, *a5[2];
        char        eq[100];
        CHECK_MSG(parse(cmd, &own, &r, 1, a1) == CK_OPT_OK && *(int *)where(e, cmd, own) == on && r.given[e - ck_options],
                  "%s %s: not set (%s)", cname, opt, g_msg);
        free(own);
        if (e->kind == CK_OPT_TOGGLE) {
            CHECK_MSG(parse(cmd, &own, &r, 1, a2) == CK_OPT_OK && *(int *)where(e, cmd, own) == !on, "%s %s: not cleared (%s)",
                      cname, noopt, g_msg);
            free(own);
            /* the last one given wins */
            const char *a6[] = {noopt, opt};
            CHECK_MSG(parse(cmd, &own, &r, 2, a6) == CK_OPT_OK && *(int *)where(e, cmd, own) == on, "%s %s %s", cname, noopt, opt);
            free(own);
        }
        if (e->legacy01 & CK_IN(cmd)) {
            CHECK_MSG(parse(cmd, &own, &r, 2, a3) == CK_OPT_OK && *(int *)where(e, cmd, own) == !on, "%s %s 0 (%s)", cname, opt, g_msg);
            free(own);
            CHECK_MSG(parse(cmd, &own, &r, 2, a4) == CK_OPT_OK && *(int *)where(e, cmd, own) == on, "%s %s 1 (%s)", cname, opt, g_msg);
            free(own);
            snprintf(eq, sizeof eq, "%s=2", opt);
            a5[0] = eq;
            CHECK_MSG(parse(cmd, &own, &r, 1, a5) == CK_OPT_USAGE && strstr(g_msg, opt), "%s %s refused: %s", cname, eq, g_msg);
            free(own);
        } else {
            snprintf(eq, sizeof eq, "%s=1", opt);
            a5[0] = eq;
            CHECK_MSG(parse(cmd, &own, &r, 1, a5) == CK_OPT_USAGE && strstr(g_msg, opt), "%s %s refused: %s", cname, eq, g_msg);
            free(own);
        }
        return;
    }

    /* a value-taking option without its value */
    const char *bare[] = {opt};
    CHECK_MSG(parse(cmd, &own, &r, 1, bare) == CK_OPT_USAGE && strstr(g_msg, opt) && strstr(g_msg, "needs a value"),
              "%s %s without a value: %s", cname, opt, g_msg);
    free(own);

    char        good[3][64] = {{0}}, bad[4][64] = {{0}};
    int         ngood = 0, nbad = 0;
    const sample *s = NULL;
    if (e->kind == CK_OPT_INT || e->kind == CK_OPT_REAL) {
        nbad  = numeric_values(e, good, bad);
        ngood = 2;
    } else if (e->kind == CK_OPT_ENUM) {
        for (const ck_opt_name *k = e->names; k->name; k++) {
            const char *a[] = {opt, k->name};
            CHECK_MSG(parse(cmd, &own, &r, 2, a) == CK_OPT_OK && *(int *)where(e, cmd, own) == k->value, "%s %s %s: %s",
                      cname, opt, k->name, g_msg);
            free(own);
            CHECK_MSG(strstr(help, k->name) != NULL, "`ckey %s --help` does not name %s's value %s", cname, opt, k->name);
        }
        snprintf(bad[nbad++], 64, "no-such-%s", e->name);
    } else if (e->kind == CK_OPT_CUSTOM) {
        s = sample_of(e->name);
        CHECK_MSG(s != NULL, "no test values for the custom option %s: add them to SAMPLES", opt);
        if (!s) return;
        snprintf(good[ngood++], 64, "%s", s->good);
        for (int k = 0; k < 3 && s->bad[k]; k++) snprintf(bad[nbad++], 64, "%s", s->bad[k]);
    } else { /* a string: anything goes, stored as given */
        const char *a[] = {opt, "some/value"};
        CHECK_MSG(parse(cmd, &own, &r, 2, a) == CK_OPT_OK && !strcmp(*(const char **)where(e, cmd, own), "some/value"),
                  "%s %s: %s", cname, opt, g_msg);
        free(own);
        if (e->max_n) {
            const char *b[] = {opt, "one", opt, "two"};
            CHECK_MSG(parse(cmd, &own, &r, 4, b) == CK_OPT_OK && *(int *)((char *)where(e, cmd, own) - e->off + e->count_off) == 2 &&
                          !strcmp(((const char **)where(e, cmd, own))[1], "two"),
                      "%s %s repeated", cname, opt);
            free(own);
        }
        return;
    }
    for (int k = 0; k < ngood; k++) {
        char        eq[120];
        const char *a[] = {opt, good[k]}, *b[1] = {eq};
        snprintf(eq, sizeof eq, "%s=%s", opt, good[k]);
        for (int form = 0; form < 2; form++) { /* --x V and --x=V */
            const int st = form ? parse(cmd, &own, &r, 1, b) : parse(cmd, &own, &r, 2, a);
            const char *dst = where(e, cmd, own);
            int stored;
            if (e->kind == CK_OPT_INT) stored = *(const int *)dst == (int)strtol(good[k], NULL, 10);
            else if (e->kind == CK_OPT_REAL && e->is_float) stored = *(const float *)dst == (float)strtod(good[k], NULL);
            else if (e->kind == CK_OPT_REAL) stored = *(const double *)dst == strtod(good[k], NULL);
            else stored = custom_stored(e, s, dst);
            CHECK_MSG(st == CK_OPT_OK && stored, "%s %s %s: status %d, stored %d (%s)", cname, opt, good[k], st, stored, g_msg);
            free(own);
        }
    }
    char range[64] = "", lo[32] = "", hi[32] = "";
    if (e->kind == CK_OPT_INT) snprintf(lo, sizeof lo, "%.0f", e->min), snprintf(hi, sizeof hi, "%.0f", e->max);
    if (e->kind == CK_OPT_REAL) snprintf(lo, sizeof lo, "%g", e->min), snprintf(hi, sizeof hi, "%g", e->max);
    if (e->step > 1) snprintf(range, sizeof range, "multiple of %d", e->step);
    for (int k = 0; k < nbad; k++) {
        const char *a[] = {opt, bad[k]};
        const int   st  = parse(cmd, &own, &r, 2, a);
        free(own);
        /* one message, naming the option and (numbers) the accepted range */
        const int named = strstr(g_msg, opt) && strchr(g_msg, '\n') == g_msg + strlen(g_msg) - 1 && strstr(g_msg, lo) &&
                          strstr(g_msg, hi) && strstr(g_msg, range);
        CHECK_MSG(st == CK_OPT_USAGE && named, "%s %s '%s' not refused with a message naming it (%s)", cname, opt, bad[k],
                  g_msg);
        if (e->kind == CK_OPT_ENUM)
            for (const ck_opt_name *n = e->names; n->name; n++)
                CHECK_MSG(strstr(g_msg, n->name), "%s %s: the message does not list %s", cname, opt, n->name);
    }
    if (nbad) { /* the binary too: exit 2 with the message */
        char log[4096];
        const int rc = run(log, sizeof log, "%s %s '%s'", cname, opt, bad[0]);
        CHECK_MSG(rc == 2 && strstr(log, opt), "ckey %s %s '%s': exit %d, %s", cname, opt, bad[0], rc, log);
    }
}

/* ---- the table's consistency ---- */

static size_t dest_size(const ck_opt *e, ck_cmd cmd) {
    return e->dest == CK_DEST_PARAMS ? sizeof(ck_params) : e->dest == CK_DEST_PLATES ? sizeof(ck_plate_set)
                                                                                      : ck_commands[cmd].own_size;
}

static void check_table(void) {
    CHECK(ck_options_count <= CK_OPT_MAX);
    for (int i = 0; i < ck_options_count; i++) {
        const ck_opt *e = &ck_options[i];
        if (e->kind == CK_OPT_NOTE) continue;
        CHECK_MSG(e->help && e->help[0] && e->group, "--%s: no help text or group", e->name);
        if (e->kind == CK_OPT_INT || e->kind == CK_OPT_REAL)
            CHECK_MSG(strstr(e->help, "{range}") && e->min <= e->max, "--%s: the help does not give {range}", e->name);
        for (int c = 0; c < CK_CMD_COUNT; c++) {
            if (!(e->cmds & CK_IN(c))) continue;
            const ck_cmd_info *ci = &ck_commands[c];
            /* the entry's value lies inside its struct, and that struct inside the command's */
            const long base = e->dest == CK_DEST_OWN ? 0 : e->dest == CK_DEST_PARAMS ? ci->params_off : ci->plates_off;
            CHECK_MSG(base >= 0 && (size_t)base + dest_size(e, (ck_cmd)c) <= ci->own_size, "--%s: `ckey %s` has no %s struct",
                      e->name, ci->name, e->dest == CK_DEST_PARAMS ? "ck_params" : "ck_plate_set");
            const size_t n = e->max_n ? (size_t)e->max_n : 1;
            CHECK_MSG(e->off + n * value_size(e) <= dest_size(e, (ck_cmd)c), "--%s: offset outside its struct", e->name);
            if (e->max_n) CHECK(e->count_off + sizeof(int) <= dest_size(e, (ck_cmd)c));
            /* one entry per name and command, and no option named like another's --no- form */
            for (int j = i + 1; j < ck_options_count; j++) {
                const ck_opt *o = &ck_options[j];
                if (o->kind == CK_OPT_NOTE || !(o->cmds & CK_IN(c))) continue;
                char no[100];
                snprintf(no, sizeof no, "no-%s", o->name);
                CHECK_MSG(strcmp(o->name, e->name), "--%s twice for `ckey %s`", e->name, ci->name);
                CHECK_MSG(o->kind != CK_OPT_TOGGLE || strcmp(no, e->name), "--%s clashes with a toggle", e->name);
                snprintf(no, sizeof no, "no-%s", e->name);
                CHECK_MSG(e->kind != CK_OPT_TOGGLE || strcmp(no, o->name), "--%s clashes with a toggle", o->name);
            }
            /* printed in the help: its group is one of the command's */
            const char *g = strstr(ci->groups, e->group);
            const size_t gl = strlen(e->group);
            CHECK_MSG(g && (g == ci->groups || g[-1] == ',') && (g[gl] == ',' || !g[gl]),
                      "--%s: group '%s' is not among `ckey %s`'s", e->name, e->group, ci->name);
        }
    }
    for (const ck_opt_name *k = ck_opts_find(CK_CMD_BENCH, "sweep", 5, NULL)->names; k->name; k++)
        CHECK_MSG(!strcmp(ck_sweep_name((ck_sweep_kind)k->value), k->name), "--sweep %s is not sweep.c's", k->name);
}

/* ---- spellings ---- */

static void check_spellings(void) {
    void         *own;
    ck_opt_result r;
    const char   *multi[] = {"--resolution", "512", "1024", "--tiled", "768/64", "512/128", "--sweep", "key"};
    CHECK(parse(CK_CMD_BENCH, &own, &r, 8, multi) == CK_OPT_OK);
    const bench_opts *b = own;
    CHECK_MSG(b->n_res == 2 && b->res[0] == 512 && b->res[1] == 1024 && b->n_tiled == 2 && b->tiled[1][0] == 512 &&
                  b->tiled[1][1] == 128 && b->sweep == CK_SWEEP_KEY,
              "bench --resolution 512 1024 --tiled 768/64 512/128");
    free(own);
    const char *novalue[] = {"--resolution", "--tiled", "768/64"};
    CHECK(parse(CK_CMD_BENCH, &own, &r, 3, novalue) == CK_OPT_USAGE && strstr(g_msg, "--resolution needs a value"));
    free(own);
    const char *many[BENCH_MAX_RES + 2] = {"--resolution"};
    for (int i = 1; i < BENCH_MAX_RES + 2; i++) many[i] = "64";
    CHECK(parse(CK_CMD_BENCH, &own, &r, BENCH_MAX_RES + 2, many) == CK_OPT_USAGE && strstr(g_msg, "at most 16"));
    free(own);
    /* -h anywhere before an error; an unknown option; another command's option */
    const char *help[] = {"--size", "64", "-h", "--size", "100"};
    CHECK(parse(CK_CMD_KEY, &own, &r, 5, help) == CK_OPT_HELP);
    free(own);
    const char *unknown[] = {"--bogus"};
    CHECK(parse(CK_CMD_KEY, &own, &r, 1, unknown) == CK_OPT_USAGE && strstr(g_msg, "unknown option '--bogus'"));
    free(own);
    const char *other[] = {"--warmup", "3"};
    CHECK(parse(CK_CMD_KEY, &own, &r, 2, other) == CK_OPT_USAGE && strstr(g_msg, "--warmup is not an option of `ckey key`"));
    free(own);
    const char *stray[] = {"stray"};
    CHECK(parse(CK_CMD_KEY, &own, &r, 1, stray) == CK_OPT_USAGE && strstr(g_msg, "unexpected argument 'stray'"));
    free(own);
    /* a value that starts with a dash is still the value (and then range-checked) */
    const char *dash[] = {"--refiner-scale", "-2.5"};
    CHECK(parse(CK_CMD_KEY, &own, &r, 2, dash) == CK_OPT_OK && ((key_opts *)own)->p.refiner_scale == -2.5f);
    free(own);
    /* farm slurm: its own options, the positional shot, and key's options collected as given */
    const char *farm[] = {"shot", "--size", "512", "--chunk", "2", "--no-sdpa", "--sbatch-arg=--account=vfx", "--tile=768"};
    CHECK(parse(CK_CMD_FARM_SLURM, &own, &r, 8, farm) == CK_OPT_OK);
    const farm_opts *f = own;
    CHECK_MSG(r.npos == 1 && !strcmp(r.pos[0], "shot") && f->chunk == 2 && f->n_sbatch == 1 &&
                  !strcmp(f->sbatch_args[0], "--account=vfx") && r.npass == 4 && !strcmp(r.pass[0], "--size") &&
                  !strcmp(r.pass[1], "512") && !strcmp(r.pass[2], "--no-sdpa") && !strcmp(r.pass[3], "--tile=768"),
              "farm slurm pass-through (%d passed)", r.npass);
    free(own);
    const char *farm_bad[] = {"shot", "--warmup", "3"};
    CHECK(parse(CK_CMD_FARM_SLURM, &own, &r, 3, farm_bad) == CK_OPT_USAGE);
    free(own);
}

static const char *argv_of(ck_cmd c) { return ck_commands[c].name; }

int main(void) {
    const char *bin = getenv("CK_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./ckey");
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "options");
    test_path(g_fx, sizeof g_fx, "CK_FIXTURES", "tiny/s128");
    mkdir(g_tmp, 0777);

    check_table();
    check_spellings();

    static char help[CK_CMD_COUNT][65536];
    int         entries = 0;
    for (int c = 0; c < CK_CMD_COUNT; c++) {
        const int rc = run(help[c], sizeof help[c], "%s --help", argv_of((ck_cmd)c));
        CHECK_MSG(rc == 0, "ckey %s --help: exit %d", argv_of((ck_cmd)c), rc);
        /* the binary prints the list generated from the table */
        char  *list = NULL;
        size_t len  = 0;
        FILE  *f    = open_memstream(&list, &len);
        ck_opts_help(f, (ck_cmd)c);
        fclose(f);
        CHECK_MSG(len > 0 && strstr(help[c], list) != NULL, "ckey %s --help does not contain the generated option list",
                  argv_of((ck_cmd)c));
        free(list);
    }
    for (int i = 0; i < ck_options_count; i++)
        for (int c = 0; c < CK_CMD_COUNT; c++)
            if (ck_options[i].kind != CK_OPT_NOTE && (ck_options[i].cmds & CK_IN(c))) {
                check_entry(&ck_options[i], (ck_cmd)c, help[c]);
                entries++;
            }
    printf("OK     %d options of %d commands: listed in --help, valid values stored, bad ones refused (exit 2)\n",
           entries, CK_CMD_COUNT);

    /* end to end */
    char log[8192];
    int  rc = run(log, sizeof log, "bench --size 100");
    CHECK_MSG(rc == 2 && strstr(log, "--size") && strstr(log, "multiple of 32"), "bench --size 100: exit %d, %s", rc, log);
    static const struct {
        const char *args, *want;
    } forms[] = {
        {"--no-sdpa --no-pad64 --no-compile --stage-gc --no-slim",
         "\"sdpa\": 0, \"pad64\": 0, \"compile\": 0, \"stage_gc\": 1, \"slim\": 0"},
        {"--sdpa 0 --pad64 0 --compile 0 --stage-gc 1 --slim 0",
         "\"sdpa\": 0, \"pad64\": 0, \"compile\": 0, \"stage_gc\": 1, \"slim\": 0"},
        {"--sdpa --pad64 --compile --no-stage-gc --slim",
         "\"sdpa\": 1, \"pad64\": 1, \"compile\": 1, \"stage_gc\": 0, \"slim\": 1"},
        {"--sdpa=1 --pad64=1 --compile=1 --stage-gc=0 --slim=1",
         "\"sdpa\": 1, \"pad64\": 1, \"compile\": 1, \"stage_gc\": 0, \"slim\": 1"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        rc = run(log, sizeof log, "bench --checkpoint random:tiny --size 64 --runs 1 --warmup 0 --device cpu %s", forms[i].args);
        CHECK_MSG(rc == 0 && strstr(log, forms[i].want), "bench %s: exit %d, want %s in %s", forms[i].args, rc, forms[i].want,
                  log);
    }
    printf("OK     bench --size 100 exits 2; bench's JSON follows --x, --no-x, --x 0|1 and --x=0|1\n");
    if (ck_image_format_supported(CK_IMAGE_EXR) && ck_image_format_supported(CK_IMAGE_PNG)) {
        char comp[1400];
        struct stat st;
        for (int no = 0; no < 2; no++) {
            char rm[1400];
            snprintf(rm, sizeof rm, "rm -rf %s/comp%d", g_tmp, no); /* a rerun starts from nothing */
            CHECK(system(rm) == 0);
            rc = run(log, sizeof log,
                     "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 "
                     "--device cpu --quiet %s --out %s/comp%d", g_fx, g_fx, g_fx, no ? "--no-comp" : "--comp", g_tmp, no);
            snprintf(comp, sizeof comp, "%s/comp%d/Comp/frame_rgb.png", g_tmp, no);
            CHECK_MSG(rc == 0 && (stat(comp, &st) == 0) == !no, "key %s: exit %d, Comp pass %s", no ? "--no-comp" : "--comp",
                      rc, stat(comp, &st) == 0 ? "written" : "missing");
        }
        printf("OK     key --comp writes the Comp pass, --no-comp does not\n");
    }
    return test_summary();
}
