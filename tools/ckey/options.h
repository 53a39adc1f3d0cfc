/* ckey's command-line options: one declarative table (option_table.c) of every option of every command,
 * one parser over it (options.c) and the option lists of the --help texts generated from it.
 *
 * An entry names the option ("size" is --size; a toggle "sdpa" is --sdpa and --no-sdpa), its kind, the
 * commands it belongs to, its help text and where its value goes: an offset into the command's option
 * struct (CK_DEST_OWN), into that struct's ck_params (CK_DEST_PARAMS) or into its ck_plate_set
 * (CK_DEST_PLATES); ck_commands[] gives those offsets per command. One name may have several entries for
 * different commands (--json is a flag of `key`, a FILE of `bench`), never two for the same command.
 *
 * Spellings the parser takes: --name VALUE, --name=VALUE; a toggle --x / --no-x (and, on the commands in
 * its legacy01 mask, the older --x 0|1); -h / --help anywhere. Arguments not starting with '-' are
 * positional (ck_cmd_info.max_pos). A value is the next argument whatever it starts with (--overlap -1
 * reaches the range check), except for a multi-valued option, which takes the following arguments up to
 * the next one starting with "--". */
#ifndef CK_CLI_OPTIONS_H
#define CK_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum ck_cmd {
    CK_CMD_KEY,
    CK_CMD_CLIP,
    CK_CMD_BENCH,
    CK_CMD_QUALITY,
    CK_CMD_PLATES,
    CK_CMD_DOCTOR,
    CK_CMD_ENCODE,
    CK_CMD_FARM_SLURM,
    CK_CMD_FARM_ASSEMBLE,
    CK_CMD_SERVE,
    CK_CMD_COUNT
} ck_cmd;
#define CK_IN(cmd) (1u << (cmd))

typedef enum ck_opt_kind {
    CK_OPT_FLAG,   /* --x: an int set to 1 */
    CK_OPT_TOGGLE, /* --x / --no-x: an int set to 1 / 0 (0 / 1 when invert) */
    CK_OPT_INT,    /* --x N: an int in [min, max], a multiple of step when step > 1 */
    CK_OPT_REAL,   /* --x X: a float (is_float) or double in [min, max], min excluded when min_open */
    CK_OPT_STRING, /* --x S: a const char * (the argument itself, not copied) */
    CK_OPT_ENUM,   /* --x NAME: one of names[], its value into an int */
    CK_OPT_CUSTOM, /* --x V: parse() decides (WxH sizes, TILE/OVERLAP, a colour space, a seed ...) */
    CK_OPT_NOTE    /* no option: a row of the help text (arg is its left column), e.g. "--image DIR --hint DIR" */
} ck_opt_kind;

typedef enum ck_opt_dest { CK_DEST_OWN, CK_DEST_PARAMS, CK_DEST_PLATES } ck_opt_dest;

typedef struct ck_opt_name {
    const char *name;
    int         value;
} ck_opt_name;

typedef struct ck_opt {
    const char  *name; /* without the leading "--" */
    ck_opt_kind  kind;
    unsigned     cmds;  /* CK_IN() bits of the commands that take it */
    const char  *group; /* its heading in the help of commands with groups */
    const char  *arg;   /* the value's name in the help ("N", "FILE"); ENUM: defaults to the names, a|b|c */
    /* One paragraph, wrapped to the help's width; "\n" starts a new line (leading spaces kept, for
     * sub-tables); "{range}" becomes the accepted range (every INT and REAL entry says it). */
    const char  *help;
    ck_opt_dest  dest;
    size_t       off;
    double       min, max;  /* INT, REAL */
    int          step;      /* INT: the value is a multiple of step (0 or 1: any) */
    int          min_open;  /* REAL: min itself is refused: (min, max] */
    int          is_float;  /* REAL: stored as float, else double */
    int          invert;    /* TOGGLE: --x stores 0, --no-x 1 (--slim is keep_intermediates = 0) */
    unsigned     legacy01;  /* TOGGLE: commands that still take the deprecated --x 0|1 */
    const ck_opt_name *names; /* ENUM: ends with {NULL, 0} */
    /* CUSTOM: parses v into dst (the element for repeatable entries); 0 when refused, with why[] the
     * reason or "" for the generic "expects <accepts>" message */
    int        (*parse)(const char *v, void *dst, char *why, size_t n);
    const char  *accepts;   /* CUSTOM: what the value must be, for messages ("WxH, each side 16 to 32768") */
    int          max_n;     /* > 0: repeatable, the values into an array at off, their count (an int) at count_off */
    size_t       count_off;
    size_t       elem_size; /* repeatable CUSTOM: the size of one element */
    int          multi;     /* repeatable: one occurrence takes several values (--resolution 512 1024) */
} ck_opt;

typedef struct ck_cmd_info {
    const char *name;        /* as typed after ckey: "key", "farm slurm" */
    size_t      own_size;    /* sizeof the command's option struct */
    long        params_off;  /* offset of its ck_params; -1: none */
    long        plates_off;  /* offset of its ck_plate_set; -1: none */
    int         max_pos;     /* positional arguments it takes */
    int         passthrough; /* -1, or a command whose options it collects unparsed (farm: key's) */
    const char *groups;      /* the help's groups in order, comma-separated */
    int         headings;    /* print the group names as headings ("model:"), else one list */
} ck_cmd_info;

extern const ck_cmd_info ck_commands[CK_CMD_COUNT];
extern const ck_opt      ck_options[];
extern const int         ck_options_count;

#define CK_OPT_MAX 256 /* table entries at most (ck_opt_result.given) */
#define CK_OPT_MAX_PASS 128

enum { CK_OPT_OK = 0, CK_OPT_HELP = 1, CK_OPT_USAGE = 2 };

typedef struct ck_opt_result {
    unsigned char given[CK_OPT_MAX]; /* per table entry: on the command line */
    const char   *pos[4];            /* positional arguments, in order */
    int           npos;
    char         *pass[CK_OPT_MAX_PASS]; /* the passthrough command's options, with their values, as given */
    int           npass;
} ck_opt_result;

/* Parses argv[0..argc) as options of cmd into own (the command's option struct, defaults already in
 * it). CK_OPT_OK; CK_OPT_HELP when -h/--help comes before any error; CK_OPT_USAGE after one
 * message naming the option and what it accepts. */
int  ck_opts_parse(ck_cmd cmd, int argc, char **argv, void *own, ck_opt_result *res);
/* Whether the option `name` of cmd was given (0 for a name cmd does not have). */
int  ck_opts_given(const ck_opt_result *res, ck_cmd cmd, const char *name);
/* The option list of cmd's help, grouped as ck_commands[cmd] says, then its deprecated spellings. */
void ck_opts_help(FILE *f, ck_cmd cmd);
/* The entry of cmd named name[0..len) (without "--"); with no_form, a toggle also by its "no-" name, *no_form
 * then 1. NULL if cmd has none. */
const ck_opt *ck_opts_find(ck_cmd cmd, const char *name, size_t len, int *no_form);
/* What an INT or REAL entry accepts, as a noun phrase: "an integer from 1 to 32", "a multiple of 32 from
 * 32 to 16384", "a number from 0 to 1", "a number above 0, at most 1000". */
void ck_opts_range(const ck_opt *e, char *buf, size_t n);
/* Where messages go (NULL: stderr); tests point it at a file. */
extern FILE *ck_opts_errors;

#endif
