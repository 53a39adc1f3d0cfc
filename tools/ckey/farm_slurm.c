/* `ckey farm slurm SHOT_OR_INPUT`: a shot as a Slurm array job, one chunk of frames per task (every task
 * `ckey key --frames A-B --skip-existing --json`, its events into a task record), plus the assemble job that
 * runs after all of them succeeded (afterok). Submitting again keys only the chunks with frames whose passes
 * are missing or do not decode. farm.c describes the files under OUT/.farm/. */
#include "farm.h"
#include "cmd_opts.h"
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* a growing text (the scripts, job.conf, the array spec) */
typedef struct text {
    char  *s;
    size_t len, cap;
    int    oom;
} text;

static void add(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->oom || k < 0) return;
    if (t->len + (size_t)k + 1 > t->cap) {
        const size_t cap = 2 * (t->len + (size_t)k + 1);
        char        *s   = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)k;
}

/* s as one shell word: bare when it is only safe characters, else in single quotes ('\'' for a quote) */
static void add_word(text *t, const char *s) {
    int bare = *s != '\0';
    for (const char *p = s; *p && bare; p++)
        bare = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("_./:=@%+,-", *p);
    if (bare) {
        add(t, "%s", s);
        return;
    }
    add(t, "'");
    for (const char *p = s; *p; p++) add(t, *p == '\'' ? "'\\''" : "%c", *p);
    add(t, "'");
}

static void add_words(text *t, char *const *argv) {
    for (int i = 0; argv[i]; i++) {
        if (i) add(t, " ");
        add_word(t, argv[i]);
    }
}

/* An absolute form of p, for the nodes (they may start elsewhere): realpath when it exists. 0 (with a
 * message) when it does not fit n bytes. */
static int absolute(char *out, size_t n, const char *p) {
    char buf[PATH_MAX], cwd[PATH_MAX];
    int  k;
    if (realpath(p, buf)) k = snprintf(out, n, "%s", buf);
    else if (p[0] != '/' && getcwd(cwd, sizeof cwd)) k = snprintf(out, n, "%s/%s", cwd, p);
    else k = snprintf(out, n, "%s", p);
    if (k < 0 || (size_t)k >= n) {
        fprintf(stderr, "ckey: farm: the path %s is too long (over %zu bytes)\n", p, n - 1);
        return 0;
    }
    return 1;
}

/* farm_opts: cmd_opts.h */

/* key options the farm sets itself */
static const char *const FARM_OWNED[] = {"--image", "--frames", "--frame-numbers", "--shard", "--shard-count",
                                         "--skip-existing", "--json", NULL};

/* The name of an option as given ("--frames" of "--frames=0-3") is `name`. */
static int option_is(const char *arg, const char *name) {
    const size_t l = strlen(name);
    return !strncmp(arg, name, l) && (arg[l] == '\0' || arg[l] == '=');
}

static int parse_farm(int argc, char **argv, farm_opts *f) {
    static char ckpt[CK_PATH_MAX];
    memset(f, 0, sizeof *f);
    f->chunk = 10;
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_FARM_SLURM, argc, argv, f, &r);
    if (st == CK_OPT_HELP) {
        farm_usage(stdout);
        exit(0);
    }
    if (st != CK_OPT_OK) return 0;
    if (!r.npos) {
        fprintf(stderr, "ckey: farm slurm needs the shot: ckey farm slurm SHOT_OR_INPUT --out DIR [options]\n");
        return 0;
    }
    f->shot = r.pos[0];
    /* the key options of the tasks, as given; those the farm decides itself are refused */
    for (int i = 0; i < r.npass; i++) {
        const char *a = r.pass[i];
        for (int k = 0; FARM_OWNED[k]; k++)
            if (option_is(a, FARM_OWNED[k])) {
                fprintf(stderr, "ckey: farm slurm sets %s itself (the input, the tasks' frames, resuming, their "
                                "events)\n", FARM_OWNED[k]);
                return 0;
            }
        if (f->n_key >= FARM_MAX_ARGS - 2) {
            fprintf(stderr, "ckey: too many key options\n");
            return 0;
        }
        if (option_is(a, "--checkpoint")) { /* a checkpoint file by its absolute path, for the nodes */
            const char *v = a[12] == '=' ? a + 13 : i + 1 < r.npass ? r.pass[++i] : NULL;
            f->key_args[f->n_key++] = "--checkpoint";
            if (v && file_exists(v)) {
                if (!absolute(ckpt, sizeof ckpt, v)) return 0;
                v = ckpt;
            }
            if (v) f->key_args[f->n_key++] = (char *)v;
            continue;
        }
        f->key_args[f->n_key++] = r.pass[i];
    }
    if (f->video_out && strcmp(f->video_out, "none") && !strstr(f->video_out, "prores") &&
        !strstr(f->video_out, "ffv1") && !strstr(f->video_out, "h264")) {
        fprintf(stderr, "ckey: --video-out %s names no video (prores, ffv1, h264, or none)\n", f->video_out);
        return 0;
    }
    return 1;
}

/* "0-3,5,9-10": the chunks to submit, as sbatch --array takes them */
static void array_spec(text *t, const unsigned char *want, int nch) {
    int first = 1;
    for (int c = 0; c < nch; c++) {
        if (!want[c]) continue;
        int e = c;
        while (e + 1 < nch && want[e + 1]) e++;
        add(t, e > c ? "%s%d-%d" : "%s%d", first ? "" : ",", c, e);
        first = 0;
        c     = e;
    }
}

static int has_newline(const char *s) { return s && strchr(s, '\n') != NULL; }

/* " JobState=", " ExitCode=" ... of `scontrol -o show job` lines (the space: not ReqNodeList=, DerivedExitCode=);
 * for an array, one line per task */
static void field(const char *line, const char *key, char *out, size_t n) {
    const char *s = strstr(line, key);
    out[0]        = '\0';
    if (!s) return;
    s += strlen(key);
    size_t i = 0;
    for (; s[i] && s[i] != ' ' && s[i] != '\n' && i + 1 < n; i++) out[i] = s[i];
    out[i] = '\0';
}

/* After --wait: 0 when the assemble job completed; otherwise the failed tasks named, and the highest exit
 * code among them (at least 1). */
static int wait_outcome(long array_id, long asm_id, const char *farm_dir, long chunk, int nframes) {
    char  out[1 << 16], id[32], state[64], code[32], node[256], task[32];
    char *sc[] = {"scontrol", "-o", "show", "job", id, NULL};
    snprintf(id, sizeof id, "%ld", asm_id);
    if (farm_run(sc, out, sizeof out) == 0) {
        field(out, " JobState=", state, sizeof state);
        if (!strcmp(state, "COMPLETED")) return 0;
    } else {
        snprintf(state, sizeof state, "unknown (scontrol failed)");
    }
    int rc = 1;
    if (array_id > 0) {
        snprintf(id, sizeof id, "%ld", array_id);
        if (farm_run(sc, out, sizeof out) == 0)
            for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
                char tstate[64];
                field(line, " JobState=", tstate, sizeof tstate);
                if (!strcmp(tstate, "COMPLETED")) continue;
                field(line, " ArrayTaskId=", task, sizeof task);
                field(line, " ExitCode=", code, sizeof code);
                field(line, " NodeList=", node, sizeof node);
                const long t = atol(task), c = atol(code), last = t * chunk + chunk - 1;
                fprintf(stderr, "ckey: farm: task %s (frames %ld-%ld) %s on %s, exit code %ld: %s/logs/key_%ld_%s.log\n",
                        task, t * chunk, last < nframes ? last : nframes - 1, tstate, node, c, farm_dir, array_id, task);
                if (c > rc) rc = (int)c;
            }
    }
    fprintf(stderr, "ckey: farm: the assemble job %ld did not complete (%s)%s; fix the cause and submit the same "
                    "command again: only the missing frames are keyed\n", asm_id, state,
            array_id > 0 ? " because key tasks failed" : "");
    return rc;
}

/* Runs one sbatch --parsable; the job id, or -1 with a message when sbatch could not run or refused. */
static long submit(char *const argv[], const char *what) {
    char      out[4096];
    const int rc = farm_run(argv, out, sizeof out);
    if (rc == -1) {
        fprintf(stderr, "ckey: farm: cannot run sbatch (%s): is Slurm installed here? (--dry-run writes the job "
                        "without submitting it)\n", strerror(errno));
        return -1;
    }
    const long id = atol(out); /* --parsable: "ID" or "ID;cluster"; with --wait the exit status is the job's */
    if (id <= 0) {
        fprintf(stderr, "ckey: farm: sbatch refused the %s (exit %d)\n", what, rc);
        return -1;
    }
    return id;
}

int farm_slurm(int argc, char **argv) {
    farm_opts f;
    if (!parse_farm(argc, argv, &f)) return EXIT_USAGE;
    static char image[CK_PATH_MAX], hint[CK_PATH_MAX], out[CK_PATH_MAX], self[CK_PATH_MAX];
    char        c_in[CK_PATH_MAX], c_hint[CK_PATH_MAX], c_out[CK_PATH_MAX];
    if (ck_cli_is_clip(f.shot, c_in, c_hint, c_out, sizeof c_in)) {
        if (f.hint) {
            fprintf(stderr, "ckey: %s is a clip folder: its hints are its AlphaHint; drop --hint\n", f.shot);
            return EXIT_USAGE;
        }
        if (!absolute(image, sizeof image, c_in) || (c_hint[0] && !absolute(hint, sizeof hint, c_hint)))
            return EXIT_USAGE;
        if (!f.out) f.out = c_out;
    } else if (!absolute(image, sizeof image, f.shot) || (f.hint && !absolute(hint, sizeof hint, f.hint))) {
        return EXIT_USAGE;
    }
    if (!f.out) {
        fprintf(stderr, "ckey: farm slurm needs --out DIR (%s is not a clip folder)\n", f.shot);
        return EXIT_USAGE;
    }
    if (!f.ckey && !absolute(self, sizeof self, "/proc/self/exe")) return EXIT_USAGE; /* this executable */
    if (f.ckey && !absolute(self, sizeof self, f.ckey)) return EXIT_USAGE;
    /* the key options, checked here once rather than failing on every node (o.out points at `out`, made
     * absolute once the folder exists) */
    snprintf(out, sizeof out, "%s", f.out);
    char *kargv[FARM_MAX_ARGS + 8];
    int   kc          = 0;
    kargv[kc++]       = "--image", kargv[kc++] = image;
    if (hint[0]) kargv[kc++] = "--hint", kargv[kc++] = hint;
    kargv[kc++] = "--out", kargv[kc++] = out;
    for (int i = 0; i < f.n_key; i++) kargv[kc++] = f.key_args[i];
    kargv[kc] = NULL;
    key_opts o;
    if (!ck_cli_parse_key(kc, kargv, &o)) return EXIT_USAGE;
    for (int i = 0; i < kc; i++)
        if (has_newline(kargv[i])) {
            fprintf(stderr, "ckey: farm: '%s' holds a line break; job.conf cannot carry it\n", kargv[i]);
            return EXIT_USAGE;
        }
    if (!ck_shot_mkdirs(f.out)) {
        fprintf(stderr, "ckey: cannot create the output folder %s: %s\n", f.out, strerror(errno));
        return EXIT_RUNTIME;
    }
    if (!absolute(out, sizeof out, f.out)) return EXIT_USAGE;

    farm_shot shot;
    char      msg[1200];
    if (!farm_shot_open(&shot, image, msg, sizeof msg)) {
        fprintf(stderr, "ckey: %s\n", msg);
        return EXIT_RUNTIME;
    }
    /* which chunks have frames to key: passes missing or not decoding (what --skip-existing redoes) */
    const int      nch  = (int)((shot.n + f.chunk - 1) / f.chunk);
    unsigned char *want = calloc((size_t)nch, 1); /* [nch]: 1 where a chunk has a frame to key */
    int            missing = 0;
    for (int i = 0; want && i < shot.n; i++)
        if (!frame_done(&o, shot.stems[i])) want[i / f.chunk] = 1, missing++;
    int chunks = 0;
    for (int c = 0; want && c < nch; c++) chunks += want[c];
    text spec = {0};
    array_spec(&spec, want, nch);

    /* OUT/.farm: job.conf, key.sh, assemble.sh */
    char farm_dir[CK_PATH_MAX + 16], path[CK_PATH_MAX + 64];
    snprintf(farm_dir, sizeof farm_dir, "%s/.farm", out);
    snprintf(path, sizeof path, "%s/logs", farm_dir);
    const int dirs_ok = ck_shot_mkdirs(path);
    snprintf(path, sizeof path, "%s/tasks", farm_dir);
    const double fps = f.fps > 0 ? f.fps : shot.fps;
    text         conf = {0}, key_sh = {0}, asm_sh = {0};
    add(&conf, "# ckey farm: the shot keyed into %s (read by ckey farm assemble)\nimage=%s\nhint=%s\nname=%s\n"
               "video_out=%s\nfps=%.10g\nchunk=%d\n", out, image, hint, shot.name,
        f.video_out ? f.video_out : "prores,h264", fps, f.chunk);
    for (int i = 0; i < f.n_key; i++) add(&conf, "arg=%s\n", f.key_args[i]);
    add(&key_sh, "#!/bin/bash\n# One task of the Slurm array `ckey farm slurm` submits for %s: chunk $SLURM_ARRAY_TASK_ID,\n"
                 "# frames chunk*%d .. chunk*%d+%d (0-based positions in the shot). --skip-existing: a rerun keys only what\n"
                 "# is missing. Its record (node, job, frames, ckey's --json events, exit code) goes to .farm/tasks/.\n"
                 "set -u\nchunk=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}\nfirst=$((chunk * %d))\n"
                 "last=$((first + %d))\nif [ \"$first\" -gt %d ]; then echo \"ckey farm: chunk $chunk is past the shot's "
                 "last frame (%d)\" >&2; exit 2; fi\nif [ \"$last\" -gt %d ]; then last=%d; fi\n"
                 "job=${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-0}}\n"
                 "node=$(printf %%s \"${SLURMD_NODENAME:-$(hostname -s)}\" | tr -cd 'A-Za-z0-9._-')\nrecord=",
        image, f.chunk, f.chunk, f.chunk - 1, f.chunk, f.chunk - 1, shot.n - 1, shot.n - 1, shot.n - 1, shot.n - 1);
    add_word(&key_sh, path);
    add(&key_sh, "/chunk$(printf %%05d \"$chunk\")_$job.ndjson\n"
                 "printf '{\"event\": \"task\", \"scheduler\": \"slurm\", \"job\": \"%%s\", \"task\": \"%%s\", \"frames\": "
                 "\"%%d-%%d\", \"node\": \"%%s\", \"started_unix\": %%s}\\n' \\\n    \"$job\" \"$chunk\" \"$first\" \"$last\" "
                 "\"$node\" \"$(date +%%s.%%N)\" > \"$record\"\n");
    add_word(&key_sh, self);
    add(&key_sh, " key ");
    add_words(&key_sh, kargv);
    add(&key_sh, " --frames \"$first-$last\" --skip-existing --json >> \"$record\"\nrc=$?\n"
                 "printf '{\"event\": \"task_end\", \"exit_code\": %%d, \"ended_unix\": %%s}\\n' \"$rc\" \"$(date +%%s.%%N)\" "
                 ">> \"$record\"\nexit $rc\n");
    add(&asm_sh, "#!/bin/bash\n# The assemble step of `ckey farm slurm` for %s: runs once every key task succeeded.\nexec ",
        image);
    add_word(&asm_sh, self);
    add(&asm_sh, " farm assemble ");
    add_word(&asm_sh, out);
    add(&asm_sh, "\n");
    int ok = want && dirs_ok && ck_shot_mkdirs(path) && !conf.oom && !key_sh.oom && !asm_sh.oom && !spec.oom;
    snprintf(path, sizeof path, "%s/job.conf", farm_dir);
    ok = ok && farm_write_file(path, conf.s, 0);
    snprintf(path, sizeof path, "%s/key.sh", farm_dir);
    ok = ok && farm_write_file(path, key_sh.s, 1);
    snprintf(path, sizeof path, "%s/assemble.sh", farm_dir);
    ok = ok && farm_write_file(path, asm_sh.s, 1);
    if (!ok) fprintf(stderr, "ckey: farm: cannot write the job into %s: %s\n", farm_dir, strerror(errno));

    /* the two sbatch commands */
    char  name[300], asm_name[320], gpus[32], part[256], tlim[128], logk[CK_PATH_MAX + 64],
        loga[CK_PATH_MAX + 64], dep[64], key_path[CK_PATH_MAX + 64], asm_path[CK_PATH_MAX + 64];
    char *kj[64], *aj[64];
    int   nk = 0, na = 0;
    snprintf(name, sizeof name, "--job-name=%s%s", f.job_name ? "" : "ckey-", f.job_name ? f.job_name : shot.name);
    snprintf(asm_name, sizeof asm_name, "%s-assemble", name);
    snprintf(logk, sizeof logk, "--output=%s/logs/key_%%A_%%a.log", farm_dir);
    snprintf(loga, sizeof loga, "--output=%s/logs/assemble_%%j.log", farm_dir);
    snprintf(key_path, sizeof key_path, "%s/key.sh", farm_dir);
    snprintf(asm_path, sizeof asm_path, "%s/assemble.sh", farm_dir);
    snprintf(part, sizeof part, "--partition=%s", f.partition ? f.partition : "");
    snprintf(tlim, sizeof tlim, "--time=%s", f.time ? f.time : "");
    snprintf(gpus, sizeof gpus, "--gpus-per-task=%d", f.gpus);
    char *array_arg = NULL;
    if (ok && chunks) {
        const size_t l = strlen(spec.s) + 16;
        array_arg      = malloc(l);
        if (array_arg) snprintf(array_arg, l, "--array=%s", spec.s);
    }
    kj[nk++] = "sbatch", kj[nk++] = "--parsable", kj[nk++] = name, kj[nk++] = array_arg, kj[nk++] = logk;
    aj[na++] = "sbatch", aj[na++] = "--parsable", aj[na++] = asm_name, aj[na++] = loga;
    if (f.partition) kj[nk++] = part, aj[na++] = part;
    if (f.time) kj[nk++] = tlim;
    if (f.gpus) kj[nk++] = "--ntasks=1", kj[nk++] = gpus;
    for (int i = 0; i < f.n_sbatch; i++) kj[nk++] = (char *)f.sbatch_args[i], aj[na++] = (char *)f.sbatch_args[i];
    kj[nk++] = key_path, kj[nk] = NULL;
    if (chunks) aj[na++] = dep, aj[na++] = "--kill-on-invalid-dep=yes";
    if (f.wait) aj[na++] = "--wait";
    aj[na++] = asm_path, aj[na] = NULL;

    int rc = ok && (!chunks || array_arg) ? 0 : EXIT_RUNTIME;
    if (rc == 0)
        fprintf(stderr, "ckey: farm: %s: %d of %d frames to key (%d of %d chunks of %d)%s\n", out, missing, shot.n,
                chunks, nch, f.chunk, missing ? "" : "; only the assemble step runs");
    if (rc == 0 && f.dry_run) {
        text t = {0};
        snprintf(dep, sizeof dep, "--dependency=afterok:ARRAY_JOB_ID");
        if (chunks) add_words(&t, kj), add(&t, "\n");
        add_words(&t, aj), add(&t, "\n");
        printf("%s", t.s ? t.s : "");
        free(t.s);
        fprintf(stderr, "ckey: farm: --dry-run: the job is in %s; nothing submitted\n", farm_dir);
    } else if (rc == 0) {
        long array_id = 0;
        if (chunks && (array_id = submit(kj, "array job")) < 0) rc = EXIT_RUNTIME;
        snprintf(dep, sizeof dep, "--dependency=afterok:%ld", array_id);
        const long a = rc == 0 ? submit(aj, "assemble job") : -1;
        if (a < 0) rc = EXIT_RUNTIME;
        if (rc == 0) {
            char       line[512];
            snprintf(line, sizeof line, "%ld array=%ld assemble=%ld chunks=%s frames=%d\n", (long)time(NULL), array_id,
                     a, chunks ? spec.s : "-", missing);
            snprintf(path, sizeof path, "%s/jobs.log", farm_dir);
            FILE *jl = fopen(path, "a");
            if (jl) fputs(line, jl), fclose(jl);
            if (chunks)
                fprintf(stderr, "ckey: farm: submitted array job %ld (%s) and assemble job %ld (after the array "
                                "succeeds); logs in %s/logs\n", array_id, array_arg, a, farm_dir);
            else
                fprintf(stderr, "ckey: farm: submitted assemble job %ld; logs in %s/logs\n", a, farm_dir);
            printf("%ld\n", chunks ? array_id : a); /* for scripts: the job to watch */
            fflush(stdout);
            if (f.wait) {
                rc = wait_outcome(array_id, a, farm_dir, f.chunk, shot.n);
                if (rc == 0) fprintf(stderr, "ckey: farm: the shot is complete: %s/%s_manifest.json\n", out, shot.name);
            }
        }
    }
    free(array_arg), free(spec.s), free(conf.s), free(key_sh.s), free(asm_sh.s), free(want);
    farm_shot_free(&shot);
    return rc;
}
