/* Render farms: which frames a task keys (--shard I/N, --shard auto from the scheduler's environment,
 * --frame-numbers), and `ckey farm slurm`, which writes and submits a Slurm array job over a shot plus the
 * assemble step that runs after it (farm_assemble.c). Layout of a farmed output folder OUT:
 *   OUT/.farm/job.conf        the shot (input, hint, key options, video settings): what assemble checks
 *   OUT/.farm/key.sh          one array task: chunk $SLURM_ARRAY_TASK_ID of the shot, --skip-existing
 *   OUT/.farm/assemble.sh     `ckey farm assemble OUT`
 *   OUT/.farm/logs/           Slurm's output of every task (key_<job>_<task>.log, assemble_<job>.log)
 *   OUT/.farm/tasks/          each task's record: a "task" line (node, job, frames, start), ckey key's
 *                             --json events, a "task_end" line (exit code, end): the manifest's source
 *   OUT/.farm/jobs.log        one line per submission (time, array job, assemble job, chunks) */
#include "farm.h"
#include "options.h"

#include "io/sequence.h"
#ifdef CK_HAVE_FFMPEG
#include "io/video.h"
#endif

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- which frames a task keys ---- */

static int parse_long(const char *s, long *v) {
    char *end;
    if (!s || !*s) return 0;
    errno = 0;
    *v    = strtol(s, &end, 10);
    return !errno && !*end;
}

static int env_long(const char *name, long *v) { return parse_long(getenv(name), v); }

static int shard_auto(int count_opt, int *index, int *count, char *msg, size_t n) {
    long id, mn, mx, cnt, step = 1;
    const long opt_count = count_opt; /* --shard-count, range-checked by the parser; 0: not given */
    if (env_long("SLURM_ARRAY_TASK_ID", &id)) {
        /* Slurm numbers array tasks MIN, MIN+STEP, ..., MAX (sbatch --array=1-10, 0-99:4); a list
         * (--array=1,2,5) has no such order, and its MIN/MAX/COUNT do not fit one */
        if (!env_long("SLURM_ARRAY_TASK_MIN", &mn) || !env_long("SLURM_ARRAY_TASK_MAX", &mx) ||
            !env_long("SLURM_ARRAY_TASK_COUNT", &cnt)) {
            snprintf(msg, n, "--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN, _MAX or _COUNT is not");
            return 0;
        }
        env_long("SLURM_ARRAY_TASK_STEP", &step);
        if (step < 1 || cnt < 1 || mx - mn != (cnt - 1) * step || id < mn || id > mx || (id - mn) % step) {
            snprintf(msg, n,
                     "--shard auto: this Slurm array is not a range (task %ld of MIN %ld, MAX %ld, STEP %ld, COUNT %ld): "
                     "submit --array=A-B or A-B:STEP, or give --shard I/N", id, mn, mx, step, cnt);
            return 0;
        }
        if (opt_count && opt_count != cnt) {
            snprintf(msg, n, "--shard-count %ld disagrees with the Slurm array's %ld tasks: drop --shard-count", opt_count,
                     cnt);
            return 0;
        }
        *index = (int)((id - mn) / step), *count = (int)cnt;
        snprintf(msg, n, "shard %d/%d (0-based) from Slurm array task %ld of %ld-%ld:%ld", *index, *count, id, mn, mx,
                 step);
        return 1;
    }
    if (env_long("JOB_COMPLETION_INDEX", &id)) { /* Kubernetes Indexed Job: 0 .. completions-1, no count */
        long env_count = 0;
        const char *ev = getenv("CKEY_SHARD_COUNT");
        if (!opt_count && ev && (!parse_long(ev, &env_count) || env_count < 1 || env_count > 1000000)) {
            snprintf(msg, n, "CKEY_SHARD_COUNT expects a count of shards (1 to 1000000), got '%s'", ev);
            return 0;
        }
        cnt = opt_count ? opt_count : env_count;
        if (!cnt) {
            snprintf(msg, n, "--shard auto: JOB_COMPLETION_INDEX=%ld (a Kubernetes Indexed Job) gives no count: set "
                             "--shard-count N or CKEY_SHARD_COUNT to the Job's completions", id);
            return 0;
        }
        if (id < 0 || id >= cnt) {
            snprintf(msg, n, "--shard auto: JOB_COMPLETION_INDEX=%ld is outside 0-%ld: the shard count (%ld) must be "
                             "the Job's completions, or frames stay unkeyed", id, cnt - 1, cnt);
            return 0;
        }
        *index = (int)id, *count = (int)cnt;
        snprintf(msg, n, "shard %d/%d (0-based) from JOB_COMPLETION_INDEX", *index, *count);
        return 1;
    }
    snprintf(msg, n, "--shard auto: no scheduler task index in the environment (SLURM_ARRAY_TASK_ID of an sbatch "
                     "--array task, JOB_COMPLETION_INDEX of a Kubernetes Indexed Job); give --shard I/N (0-based)");
    return 0;
}

int ck_cli_shard(const char *spec, int count_opt, int *index, int *count, char *msg, size_t n) {
    msg[0] = '\0';
    if (!strcmp(spec, "auto")) return shard_auto(count_opt, index, count, msg, n);
    if (count_opt) {
        snprintf(msg, n, "--shard-count goes with --shard auto (--shard %s names its count)", spec);
        return 0;
    }
    if (ck_parse_shard(spec, index, count)) return 1;
    long i, c;
    char tail;
    if (sscanf(spec, "%ld/%ld%c", &i, &c, &tail) == 2 && c >= 1 && (i == c || i < 0 || i > c)) {
        /* 1-based numbering (Slurm's usual --array=1-N): N/N would be past the end, 1..N-1 shift every share */
        snprintf(msg, n, "--shard %s: shards are 0-based, 0/%ld to %ld/%ld; a scheduler counting from 1 gives "
                         "$((TASK - 1))/%ld, or use --shard auto", spec, c, c - 1, c, c);
        return 0;
    }
    snprintf(msg, n, "--shard expects I/N with 0 <= I < N (0-based), or auto; got '%s'", spec);
    return 0;
}

int ck_frame_number(const char *stem, long *number) {
    const char *end = NULL;
    for (const char *p = stem; *p; p++)
        if (*p >= '0' && *p <= '9' && (p[1] < '0' || p[1] > '9')) end = p + 1; /* just past the last digit run */
    if (!end) return 0;
    const char *start = end;
    while (start > stem && start[-1] >= '0' && start[-1] <= '9') start--;
    while (start < end - 1 && *start == '0') start++;
    if (end - start > 9) return 0; /* more than a frame number */
    long v = 0;
    for (const char *p = start; p < end; p++) v = 10 * v + (*p - '0');
    *number = v;
    return 1;
}

int ck_cli_frame_numbers(const char *range, char *const *stems, int n, int is_video, int *first, int *last, char *msg,
                         size_t msg_n) {
    int a, b;
    if (!ck_parse_frames(range, &a, &b)) {
        snprintf(msg, msg_n, "--frame-numbers expects A-B or A (frame numbers, A <= B), got '%s'", range);
        return 0;
    }
    if (is_video) { /* a video's frames are numbered by their 0-based index */
        if (b >= n) {
            snprintf(msg, msg_n, "--frame-numbers %s: the video's frames are numbered 0-%d", range, n - 1);
            return 0;
        }
        *first = a, *last = b;
        return 1;
    }
    long lo = 0, hi = 0;
    int  pmin = -1, pmax = -1;
    for (int i = 0; i < n; i++) {
        long v;
        if (!ck_frame_number(stems[i], &v)) {
            snprintf(msg, msg_n, "--frame-numbers: '%s' has no frame number in its name; select positions with --frames "
                                 "A-B instead", stems[i]);
            return 0;
        }
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
        if (v >= a && v <= b) {
            if (pmin < 0) pmin = i;
            pmax = i;
        }
    }
    if (a < lo || b > hi || pmin < 0) {
        snprintf(msg, msg_n, "--frame-numbers %s reaches outside the shot, whose frames are numbered %ld-%ld", range, lo,
                 hi);
        return 0;
    }
    for (int i = pmin; i <= pmax; i++) {
        long v;
        ck_frame_number(stems[i], &v);
        if (v < a || v > b) {
            snprintf(msg, msg_n, "--frame-numbers %s: those frames are not consecutive in the shot's order ('%s' lies "
                                 "between them); select positions with --frames A-B", range, stems[i]);
            return 0;
        }
    }
    *first = pmin, *last = pmax;
    return 1;
}

/* ---- the shot a farm job covers ---- */

int farm_shot_open(farm_shot *s, const char *image, char *msg, size_t n) {
    memset(s, 0, sizeof *s);
    s->fps = 24.0;
    char folder[CK_PATH_MAX];
    snprintf(folder, sizeof folder, "%s", image);
    for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
    file_stem(s->name, sizeof s->name, folder); /* as ckey key names a shot's videos */
    if (is_dir(image)) {
        ck_err err = {{0}};
        ck_seq seq;
        if (ck_seq_list(&seq, image, &err) != CK_OK) {
            snprintf(msg, n, "%s", err.msg);
            return 0;
        }
        for (int i = 0; i < seq.n; i++) free(seq.paths[i]);
        free(seq.paths);
        s->stems = seq.stems, s->n = seq.n;
        if (!s->n) snprintf(msg, n, "%s: no frames in this folder", image);
        return s->n > 0;
    }
    if (!file_exists(image)) {
        snprintf(msg, n, "%s: no such file or folder", image);
        return 0;
    }
#ifdef CK_HAVE_FFMPEG
    if (ck_image_sniff(image) == CK_IMAGE_UNKNOWN && ck_video_probe(image)) {
        const int        frames = ck_video_count_frames(image);
        ck_video_reader *r      = NULL;
        ck_err           err    = {{0}};
        if (frames <= 0 || ck_video_open(&r, image, &err) != CK_OK) {
            snprintf(msg, n, "%s: no video frames can be read", image);
            return 0;
        }
        s->fps = ck_video_fps(r);
        ck_video_close(r);
        s->is_video = 1;
        s->stems    = calloc((size_t)frames, sizeof *s->stems);
        for (int i = 0; s->stems && i < frames; i++) {
            s->stems[i] = malloc(16);
            if (s->stems[i]) snprintf(s->stems[i], 16, "%05d", i); /* key.c's names for video frames */
        }
        s->n = s->stems ? frames : 0;
        return s->n > 0;
    }
#endif
    s->stems = calloc(1, sizeof *s->stems);
    if (!s->stems) return 0;
    s->stems[0] = strdup(s->name);
    s->n        = 1;
    return 1;
}

void farm_shot_free(farm_shot *s) {
    for (int i = 0; s->stems && i < s->n; i++) free(s->stems[i]);
    free(s->stems);
    memset(s, 0, sizeof *s);
}

/* ---- job.conf: one "key=value" per line, values to the end of the line ---- */

int farm_conf_read(farm_conf *c, const char *out) {
    char path[CK_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.farm/job.conf", out);
    FILE *f = fopen(path, "r");
    memset(c, 0, sizeof *c);
    if (!f) return 0;
    char line[2 * CK_PATH_MAX];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        if (!strcmp(k, "image")) snprintf(c->image, sizeof c->image, "%s", v);
        else if (!strcmp(k, "hint")) snprintf(c->hint, sizeof c->hint, "%s", v);
        else if (!strcmp(k, "name")) snprintf(c->name, sizeof c->name, "%s", v);
        else if (!strcmp(k, "video_out")) snprintf(c->video_out, sizeof c->video_out, "%s", v);
        else if (!strcmp(k, "fps")) c->fps = atof(v);
        else if (!strcmp(k, "arg") && c->nargs < FARM_MAX_ARGS) c->args[c->nargs++] = strdup(v);
    }
    fclose(f);
    return c->image[0] != '\0';
}

void farm_conf_free(farm_conf *c) {
    for (int i = 0; i < c->nargs; i++) free(c->args[i]);
    c->nargs = 0;
}

/* Writes `text` to path through a temporary file (the scripts and job.conf are replaced as a whole). */
int farm_write_file(const char *path, const char *text, int executable) {
    char      tmp[CK_PATH_MAX + 128];
    const int k = snprintf(tmp, sizeof tmp, "%s.tmp.%d.0", path, (int)getpid()); /* signals.c's temporary name */
    if (k < 0 || (size_t)k >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return 0;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) return 0;
    const int ok = fputs(text, f) >= 0;
    if (fclose(f) != 0 || !ok || (executable && chmod(tmp, 0755) != 0) || rename(tmp, path) != 0) {
        remove(tmp);
        return 0;
    }
    return 1;
}

int farm_run(char *const argv[], char *out, size_t n) {
    int fds[2];
    if (out && pipe(fds) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out) {
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        posix_spawn_file_actions_addclose(&fa, fds[1]);
    }
    pid_t     pid;
    const int st = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out) close(fds[1]);
    if (st != 0) {
        if (out) close(fds[0]);
        return -1;
    }
    size_t used = 0;
    if (out) {
        char    buf[4096];
        ssize_t r;
        while ((r = read(fds[0], buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
            for (ssize_t i = 0; i < r; i++)
                if (used + 1 < n) out[used++] = buf[i];
        out[used] = '\0';
        close(fds[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void farm_usage(FILE *f) {
    fprintf(f, "usage: ckey farm slurm SHOT_OR_INPUT [--out DIR] [farm options] [key options]\n"
               "       ckey farm assemble DIR [--image INPUT [key options]] [--video-out LIST|none] [--fps F] [--name N]\n"
               "\n"
               "slurm: keys a shot as a Slurm array job, one chunk of frames per task, then assembles it.\n"
               "SHOT_OR_INPUT is a CorridorKey clip folder (Input/, AlphaHint/; DIR defaults to its Output/) or\n"
               "what `ckey key --image` takes (then --out DIR, and --hint as for ckey key). Writes DIR/.farm/\n"
               "(job scripts, logs, task records) and submits `sbatch --array` (tasks run `ckey key --frames\n"
               "A-B --skip-existing --json` on their chunk) plus a `ckey farm assemble DIR` job that runs\n"
               "after every task succeeded (--dependency=afterok). Submitting again keys only the frames whose\n"
               "passes are missing or do not decode: the array holds just their chunks.\n");
    ck_opts_help(f, CK_CMD_FARM_SLURM);
    fprintf(f, "Every other option goes to `ckey key` (--checkpoint, --size, --device, --threads, --tile, ...).\n"
               "\n"
               "assemble: checks that every frame of the shot has all its passes and that they decode (as\n"
               "--skip-existing does), encodes the videos from them (ckey encode) and writes\n"
               "DIR/<shot>_manifest.json: every frame with its files' sizes and SHA-256, the node and task that\n"
               "keyed it, the tasks' timings. Reads the shot from DIR/.farm/job.conf when `ckey farm slurm` wrote\n"
               "one; otherwise (OpenJD, other schedulers) give --image INPUT and the key options of the run\n"
               "(--no-comp matters). Frames missing: exit 1, naming them; resubmit to key them.\n");
    ck_opts_help(f, CK_CMD_FARM_ASSEMBLE);
}

int cmd_farm(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "slurm")) return farm_slurm(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "assemble")) return farm_assemble(argc - 1, argv + 1);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        farm_usage(stdout);
        return 0;
    }
    farm_usage(stderr);
    return EXIT_USAGE;
}
