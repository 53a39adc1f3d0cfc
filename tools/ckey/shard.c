/* The frames a task keys: --shard I/N (0-based), --shard auto (Slurm array tasks, Kubernetes Indexed
 * Jobs), --frame-numbers A-B (the numbers in the frames' names). Used by `ckey key` (key.c) and the farm
 * commands. */
#include "cli.h"
#include "ckey_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
