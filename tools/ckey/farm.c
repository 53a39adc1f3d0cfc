/* Render farms: the pieces `ckey farm slurm` (farm_slurm.c) and `ckey farm assemble` (farm_assemble.c)
 * share: the shot, job.conf, writing files, running commands, the usage text (the frames a task keys are
 * shard.c's; the `farm` command itself is farm_cmd.c). Layout of a farmed output folder OUT:
 *   OUT/.farm/job.conf        the shot (input, hint, key options, video settings): what assemble checks
 *   OUT/.farm/key.sh          one array task: chunk $SLURM_ARRAY_TASK_ID of the shot, --skip-existing
 *   OUT/.farm/assemble.sh     `ckey farm assemble OUT`
 *   OUT/.farm/logs/           Slurm's output of every task (key_<job>_<task>.log, assemble_<job>.log)
 *   OUT/.farm/tasks/          each task's record: a "task" line (node, job, frames, start), ckey key's
 *                             --json events, a "task_end" line (exit code, end): the manifest's source
 *   OUT/.farm/jobs.log        one line per submission (time, array job, assemble job, chunks) */
#include "farm.h"
#include "options.h"

#include "ckey_io.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int farm_shot_open(farm_shot *s, const char *image, char *msg, size_t n) {
    memset(s, 0, sizeof *s);
    s->fps = 24.0;
    char folder[CK_PATH_MAX];
    snprintf(folder, sizeof folder, "%s", image);
    for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
    ck_shot_file_stem(s->name, sizeof s->name, folder); /* as ckey key names a shot's videos */
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
