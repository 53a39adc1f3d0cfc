/* The parser over ckey's option table and the option lists of the help texts (options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A table entry the parser cannot serve is a bug in ckey: say where, and stop. */
#define CLI_ASSERT(cond)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            fprintf(stderr, "ckey: internal error: %s:%d: %s: assertion `%s' failed\n", __FILE__, __LINE__,     \
                    __func__, #cond);                                                                          \
            abort();                                                                                           \
        }                                                                                                      \
    } while (0)

FILE *ck_opts_errors;

enum { HELP_WIDTH = 106, HELP_COLUMN = 24 }; /* the help's line width and where the option texts start */

static void say(const char *fmt, ...) {
    FILE   *f = ck_opts_errors ? ck_opts_errors : stderr;
    va_list ap;
    va_start(ap, fmt);
    fputs("ckey: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
}

static int in_cmd(const ck_opt *e, ck_cmd cmd) { return e->kind != CK_OPT_NOTE && (e->cmds & CK_IN(cmd)); }

static int named(const ck_opt *e, const char *name, size_t len) {
    return strlen(e->name) == len && !strncmp(e->name, name, len);
}

const ck_opt *ck_opts_find(ck_cmd cmd, const char *name, size_t len, int *no_form) {
    if (no_form) *no_form = 0;
    for (int i = 0; i < ck_options_count; i++)
        if (in_cmd(&ck_options[i], cmd) && named(&ck_options[i], name, len)) return &ck_options[i];
    if (no_form && len > 3 && !strncmp(name, "no-", 3))
        for (int i = 0; i < ck_options_count; i++)
            if (in_cmd(&ck_options[i], cmd) && ck_options[i].kind == CK_OPT_TOGGLE && named(&ck_options[i], name + 3, len - 3)) {
                *no_form = 1;
                return &ck_options[i];
            }
    return NULL;
}

int ck_opts_given(const ck_opt_result *res, ck_cmd cmd, const char *name) {
    const ck_opt *e = ck_opts_find(cmd, name, strlen(name), NULL);
    return e && res->given[e - ck_options];
}

/* "cpu, cuda or auto" */
static void names_phrase(const ck_opt *e, char *buf, size_t n) {
    int count = 0;
    while (e->names[count].name) count++;
    buf[0] = '\0';
    for (int k = 0; k < count; k++) {
        const size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", k == 0 ? "" : k == count - 1 ? " or " : ", ", e->names[k].name);
    }
}

void ck_opts_range(const ck_opt *e, char *buf, size_t n) {
    if (e->kind == CK_OPT_INT && e->step > 1)
        snprintf(buf, n, "a multiple of %d from %.0f to %.0f", e->step, e->min, e->max);
    else if (e->kind == CK_OPT_INT)
        snprintf(buf, n, "an integer from %.0f to %.0f", e->min, e->max);
    else if (e->min_open)
        snprintf(buf, n, "a number above %g, at most %g", e->min, e->max);
    else
        snprintf(buf, n, "a number from %g to %g", e->min, e->max);
}

/* The struct an entry's offset counts from, for the command being parsed. */
static char *dest_base(const ck_opt *e, ck_cmd cmd, void *own) {
    const ck_cmd_info *ci = &ck_commands[cmd];
    if (e->dest == CK_DEST_OWN) return own;
    const long off = e->dest == CK_DEST_PARAMS ? ci->params_off : ci->plates_off;
    CLI_ASSERT(off >= 0); /* the table gives this entry to a command without that struct */
    return (char *)own + off;
}

static size_t elem_size(const ck_opt *e) {
    return e->kind == CK_OPT_INT ? sizeof(int) : e->kind == CK_OPT_STRING ? sizeof(const char *) : e->elem_size;
}

/* One value of a value-taking entry into its place; 0 after a message. */
static int store(const ck_opt *e, ck_cmd cmd, void *own, const char *v) {
    char *base = dest_base(e, cmd, own), *dst = base + e->off;
    int  *count = e->max_n ? (int *)(base + e->count_off) : NULL;
    char  phrase[160], *end;
    if (count) {
        if (*count >= e->max_n) {
            say("at most %d --%s values", e->max_n, e->name);
            return 0;
        }
        dst += (size_t)*count * elem_size(e);
    }
    switch (e->kind) {
    case CK_OPT_INT: {
        errno        = 0;
        const long x = strtol(v, &end, 10);
        if (!*v || *end || errno || x < e->min || x > e->max || (e->step > 1 && x % e->step)) {
            ck_opts_range(e, phrase, sizeof phrase);
            say("--%s expects %s, got '%s'", e->name, phrase, v);
            return 0;
        }
        *(int *)dst = (int)x;
        break;
    }
    case CK_OPT_REAL: {
        errno          = 0;
        const double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x) || x > e->max || x < e->min || (e->min_open && x == e->min)) {
            ck_opts_range(e, phrase, sizeof phrase);
            say("--%s expects %s, got '%s'", e->name, phrase, v);
            return 0;
        }
        if (e->is_float) *(float *)dst = (float)x;
        else *(double *)dst = x;
        break;
    }
    case CK_OPT_STRING: *(const char **)dst = v; break;
    case CK_OPT_ENUM: {
        const ck_opt_name *k = e->names;
        while (k->name && strcmp(k->name, v)) k++;
        if (!k->name) {
            names_phrase(e, phrase, sizeof phrase);
            say("--%s expects %s, got '%s'", e->name, phrase, v);
            return 0;
        }
        *(int *)dst = k->value;
        break;
    }
    case CK_OPT_CUSTOM: {
        char why[400] = "";
        if (!e->parse(v, dst, why, sizeof why)) {
            if (why[0]) say("--%s: %s", e->name, why);
            else say("--%s expects %s, got '%s'", e->name, e->accepts, v);
            return 0;
        }
        break;
    }
    default: CLI_ASSERT(0);
    }
    if (count) (*count)++;
    return 1;
}

static int takes_value(const ck_opt *e) { return e->kind != CK_OPT_FLAG && e->kind != CK_OPT_TOGGLE; }

static int is_01(const char *s) { return s && (!strcmp(s, "0") || !strcmp(s, "1")); }

int ck_opts_parse(ck_cmd cmd, int argc, char **argv, void *own, ck_opt_result *res) {
    const ck_cmd_info *ci = &ck_commands[cmd];
    CLI_ASSERT(ck_options_count <= CK_OPT_MAX);
    memset(res, 0, sizeof *res);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return CK_OPT_HELP;
        if (a[0] != '-' || !a[1]) { /* positional ("-" too: no option is a single dash) */
            if (res->npos >= ci->max_pos || res->npos >= (int)(sizeof res->pos / sizeof res->pos[0])) {
                say("unexpected argument '%s' (see 'ckey %s --help')", a, ci->name);
                return CK_OPT_USAGE;
            }
            res->pos[res->npos++] = a;
            continue;
        }
        const char  *name = a + 2, *eq = a[1] == '-' ? strchr(name, '=') : NULL;
        const size_t len  = eq ? (size_t)(eq - name) : strlen(name);
        int           no  = 0;
        const ck_opt *e   = a[1] == '-' ? ck_opts_find(cmd, name, len, &no) : NULL;
        const ck_opt *pe  = !e && a[1] == '-' && ci->passthrough >= 0 ? ck_opts_find(ci->passthrough, name, len, &no) : NULL;
        if (pe) { /* the other command's option, kept as given with its value for that command's parser */
            if (res->npass + 2 > CK_OPT_MAX_PASS) {
                say("too many options for `ckey %s`", ck_commands[ci->passthrough].name);
                return CK_OPT_USAGE;
            }
            res->pass[res->npass++] = argv[i];
            if (takes_value(pe) && !eq && i + 1 < argc) res->pass[res->npass++] = argv[++i];
            continue;
        }
        if (!e) {
            int elsewhere = 0;
            for (int c = 0; a[1] == '-' && c < CK_CMD_COUNT && !elsewhere; c++)
                elsewhere = ck_opts_find((ck_cmd)c, name, len, &no) != NULL;
            if (elsewhere) say("--%.*s is not an option of `ckey %s` (see 'ckey %s --help')", (int)len, name, ci->name, ci->name);
            else say("unknown option '%.*s' (see 'ckey %s --help')", (int)(a[1] == '-' ? len + 2 : strlen(a)), a, ci->name);
            return CK_OPT_USAGE;
        }
        res->given[e - ck_options] = 1;
        if (!takes_value(e)) {
            int on = !no;
            if (e->kind == CK_OPT_TOGGLE && !no && (e->legacy01 & CK_IN(cmd)) &&
                (eq || (i + 1 < argc && is_01(argv[i + 1])))) { /* the deprecated --x 0|1 */
                const char *v = eq ? eq + 1 : argv[++i];
                if (!is_01(v)) {
                    say("--%s expects 0 or 1 (the older spelling of --%s / --no-%s), got '%s'", e->name, e->name, e->name, v);
                    return CK_OPT_USAGE;
                }
                on = v[0] == '1';
            } else if (eq) {
                say("--%.*s takes no value, got '%s'", (int)len, name, eq + 1);
                return CK_OPT_USAGE;
            }
            *(int *)(dest_base(e, cmd, own) + e->off) = e->invert ? !on : on;
            continue;
        }
        const int missing = eq ? 0 : i + 1 >= argc || (e->multi && !strncmp(argv[i + 1], "--", 2));
        if (missing) {
            char what[160];
            if (e->arg) snprintf(what, sizeof what, "%s", e->arg);
            else if (e->kind == CK_OPT_ENUM) names_phrase(e, what, sizeof what);
            else snprintf(what, sizeof what, "a value");
            say("--%s needs a value (%s; see 'ckey %s --help')", e->name, what, ci->name);
            return CK_OPT_USAGE;
        }
        if (!store(e, cmd, own, eq ? eq + 1 : argv[++i])) return CK_OPT_USAGE;
        while (e->multi && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            if (!store(e, cmd, own, argv[++i])) return CK_OPT_USAGE;
    }
    return CK_OPT_OK;
}

/* ---- help ---- */

/* Writes s[0..n) from column *col on, breaking lines at spaces before a word that would pass the width
 * (continuation lines start at column `indent`); spaces between words are kept as written (sub-tables). */
static void wrap(FILE *f, const char *s, size_t n, int indent, int *col) {
    size_t i = 0;
    while (i < n && s[i] == ' ') i++;
    for (int first = 1; i < n; first = 0) {
        size_t gap = i;
        while (i < n && s[i] == ' ') i++;
        size_t w = i;
        while (w < n && s[w] != ' ') w++;
        const int spaces = first ? 0 : (int)(i - gap), word = (int)(w - i);
        if (!first && *col + spaces + word > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            *col = indent;
        } else {
            fprintf(f, "%*s", spaces, "");
            *col += spaces;
        }
        fwrite(s + i, 1, (size_t)word, f);
        *col += word;
        i = w;
    }
}

/* The help text of e with {range} replaced. */
static void expand(const ck_opt *e, char *out, size_t n) {
    char        range[160] = "";
    const char *s          = e->help ? e->help : "";
    if (e->kind == CK_OPT_INT || e->kind == CK_OPT_REAL) ck_opts_range(e, range, sizeof range);
    out[0] = '\0';
    for (const char *m; (m = strstr(s, "{range}"));) {
        const size_t l = strlen(out);
        snprintf(out + l, n - l, "%.*s%s", (int)(m - s), s, range);
        s = m + 7;
    }
    const size_t l = strlen(out);
    snprintf(out + l, n - l, "%s", s);
}

/* "  LABEL               text ...": the text at HELP_COLUMN, or two spaces after a longer label; each
 * "\n"-separated line of it wrapped on its own, indented by its own leading spaces. */
static void row(FILE *f, const char *label, const char *text) {
    fprintf(f, "  %s", label);
    int col = 2 + (int)strlen(label);
    const int pad = col + 2 <= HELP_COLUMN ? HELP_COLUMN - col : 2;
    fprintf(f, "%*s", pad, "");
    col += pad;
    for (const char *line = text; *line;) {
        const char  *nl   = strchr(line, '\n');
        const size_t len  = nl ? (size_t)(nl - line) : strlen(line);
        size_t       lead = 0;
        while (lead < len && line[lead] == ' ') lead++;
        if (line != text) {
            fprintf(f, "\n%*s", HELP_COLUMN + (int)lead, "");
            col = HELP_COLUMN + (int)lead;
        }
        wrap(f, line + lead, len - lead, HELP_COLUMN + (int)lead, &col);
        line += len + (nl != NULL);
    }
    fputc('\n', f);
}

static void label_of(const ck_opt *e, char *buf, size_t n) {
    if (e->kind == CK_OPT_NOTE) snprintf(buf, n, "%s", e->arg);
    else if (e->kind == CK_OPT_TOGGLE) snprintf(buf, n, "--%s / --no-%s", e->name, e->name);
    else if (e->kind == CK_OPT_FLAG) snprintf(buf, n, "--%s", e->name);
    else if (e->kind == CK_OPT_ENUM && !e->arg) {
        snprintf(buf, n, "--%s ", e->name);
        for (const ck_opt_name *k = e->names; k->name; k++) {
            const size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%s", k == e->names ? "" : "|", k->name);
        }
    } else snprintf(buf, n, "--%s %s%s", e->name, e->arg ? e->arg : "V", e->multi ? " ..." : "");
}

static void print_entry(FILE *f, const ck_opt *e) {
    char label[200], text[4096];
    label_of(e, label, sizeof label);
    expand(e, text, sizeof text);
    if (e->max_n) {
        const size_t l = strlen(text);
        snprintf(text + l, sizeof text - l, e->multi ? " (at most %d values)" : " (repeatable, at most %d)", e->max_n);
    }
    row(f, label, text);
}

static int in_help(const ck_opt *e, ck_cmd cmd) { return e->cmds & CK_IN(cmd); }

void ck_opts_help(FILE *f, ck_cmd cmd) {
    const ck_cmd_info *ci = &ck_commands[cmd];
    for (const char *g = ci->groups; g && *g;) {
        const char  *comma = strchr(g, ',');
        const size_t len   = comma ? (size_t)(comma - g) : strlen(g);
        if (ci->headings) fprintf(f, "%.*s:\n", (int)len, g);
        for (int i = 0; i < ck_options_count; i++) {
            const ck_opt *e = &ck_options[i];
            if (in_help(e, cmd) && e->group && strlen(e->group) == len && !strncmp(e->group, g, len)) print_entry(f, e);
        }
        g += len + (comma != NULL);
    }
    char legacy[600] = "";
    for (int i = 0; i < ck_options_count; i++) {
        const ck_opt *e = &ck_options[i];
        if (in_cmd(e, cmd) && (e->legacy01 & CK_IN(cmd))) {
            const size_t l = strlen(legacy);
            snprintf(legacy + l, sizeof legacy - l, "%s--%s 0|1", l ? ", " : "", e->name);
        }
    }
    if (legacy[0]) {
        fprintf(f, "deprecated spellings (still accepted):\n");
        row(f, legacy, "the older form of these toggles: --X 1 is --X, --X 0 is --no-X");
    }
}
