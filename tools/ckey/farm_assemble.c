/* `ckey farm assemble OUT`: after the key tasks of a farmed shot, checks that every frame has all its passes
 * and that they decode (frame_done, what --skip-existing trusts), encodes the videos from them (`ckey
 * encode`), and writes OUT/<shot>_manifest.json: every frame with its files' sizes and checksums and the
 * task that keyed it (node, job), every task's timings, the videos. The tasks' own records in
 * OUT/.farm/tasks/ (a "task" line from the job script, ckey key's --json events, a "task_end" line) say
 * which node keyed what; they are ckey's own one-line JSON objects, read field by field as doctor.c reads
 * bench.json. Checksums are SHA-256 through FFmpeg's libavutil (linked for the videos); a build without
 * FFmpeg writes CRC-32 through libdeflate instead, and says which in "checksum". */
#include "farm.h"
#include "cmd_opts.h"
#include "options.h"

#include "signals.h"

#ifdef CK_HAVE_FFMPEG
#include <libavutil/mem.h>
#include <libavutil/sha.h>
#elif defined(CK_HAVE_DEFLATE)
#include <libdeflate.h>
#endif

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef CK_HAVE_FFMPEG
#define CHECKSUM_NAME "sha256"
#elif defined(CK_HAVE_DEFLATE)
#define CHECKSUM_NAME "crc32"
#else
#define CHECKSUM_NAME "none"
#endif

/* The file's checksum as lower-case hex ("" when the build has none) and its size; 0 when unreadable. */
static int file_checksum(const char *path, char hex[65], long long *bytes) {
    FILE *f = fopen(path, "rb");
    hex[0]  = '\0';
    *bytes  = 0;
    if (!f) return 0;
    static unsigned char buf[1 << 20];
    size_t               r;
#ifdef CK_HAVE_FFMPEG
    struct AVSHA *sha = av_sha_alloc();
    if (!sha || av_sha_init(sha, 256) < 0) {
        av_free(sha), fclose(f);
        return 0;
    }
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) av_sha_update(sha, buf, r), *bytes += (long long)r;
    uint8_t digest[32];
    av_sha_final(sha, digest);
    av_free(sha);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
#elif defined(CK_HAVE_DEFLATE)
    uint32_t crc = 0;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) crc = libdeflate_crc32(crc, buf, r), *bytes += (long long)r;
    snprintf(hex, 65, "%08x", (unsigned)crc);
#else
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) *bytes += (long long)r;
#endif
    const int ok = !ferror(f);
    fclose(f);
    return ok;
}

/* ---- the tasks' records ---- */

typedef struct task_rec {
    char   record[256], scheduler[32], job[64], task[64], frames[64], node[128];
    double started, ended, seconds, fps;
    int    exit_code, frames_written, skipped, ended_seen, completed_seen;
} task_rec;

/* the string after `key` ("\"stem\": "), JSON escapes undone (ck_cli_json_str writes \" \\ and \u00XX) */
static int json_str(const char *line, const char *key, char *out, size_t n) {
    const char *s = strstr(line, key);
    out[0]        = '\0';
    if (!s || s[strlen(key)] != '"') return 0;
    s += strlen(key) + 1;
    size_t i = 0;
    for (; *s && *s != '"' && i + 1 < n; s++) {
        if (*s == '\\' && s[1] == 'u' && s[2] && s[3] && s[4] && s[5]) {
            char h[5] = {s[2], s[3], s[4], s[5], 0};
            out[i++]  = (char)strtol(h, NULL, 16);
            s += 5;
        } else if (*s == '\\' && s[1]) {
            out[i++] = *++s;
        } else {
            out[i++] = *s;
        }
    }
    out[i] = '\0';
    return 1;
}

static double json_num(const char *line, const char *key, double dflt) {
    const char *s = strstr(line, key);
    return s ? strtod(s + strlen(key), NULL) : dflt;
}

typedef struct stem_index {
    const char *stem;
    int         frame;
} stem_index;

static int cmp_stem(const void *a, const void *b) {
    return strcmp(((const stem_index *)a)->stem, ((const stem_index *)b)->stem);
}

/* Reads every record of OUT/.farm/tasks; by_frame[f] becomes the task that last wrote frame f (-1: none
 * recorded, e.g. keyed outside the farm). Returns the tasks (*n of them), ordered by their start. */
static task_rec *read_records(const char *out, const farm_shot *shot, int *by_frame, int *n) {
    char dir[CK_PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/.farm/tasks", out);
    *n = 0;
    for (int i = 0; i < shot->n; i++) by_frame[i] = -1;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    int    nn    = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 7 || strcmp(e->d_name + l - 7, ".ndjson")) continue;
        char **t = realloc(names, sizeof *names * (size_t)(nn + 1));
        if (!t) break;
        names       = t;
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    task_rec *tasks = calloc((size_t)(nn ? nn : 1), sizeof *tasks); /* [nn] records, *n of them read */
    for (int i = 0; tasks && i < nn; i++) {
        task_rec *t = &tasks[*n];
        char      path[CK_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = names[i] ? fopen(path, "r") : NULL;
        if (!f) continue;
        memset(t, 0, sizeof *t);
        snprintf(t->record, sizeof t->record, "%s", names[i]);
        t->exit_code = -1;
        char  *line  = NULL;
        size_t cap   = 0;
        int    task_seen = 0;
        while (getline(&line, &cap, f) > 0) {
            char ev[32];
            json_str(line, "\"event\": ", ev, sizeof ev);
            if (!strcmp(ev, "task")) {
                json_str(line, "\"scheduler\": ", t->scheduler, sizeof t->scheduler);
                json_str(line, "\"job\": ", t->job, sizeof t->job);
                json_str(line, "\"task\": ", t->task, sizeof t->task);
                json_str(line, "\"frames\": ", t->frames, sizeof t->frames);
                json_str(line, "\"node\": ", t->node, sizeof t->node);
                t->started = json_num(line, "\"started_unix\": ", 0);
                task_seen  = 1;
            } else if (!strcmp(ev, "completed")) {
                t->frames_written = (int)json_num(line, "\"frames_written\": ", 0);
                t->skipped        = (int)json_num(line, "\"skipped\": ", 0);
                t->seconds        = json_num(line, "\"seconds\": ", 0);
                t->fps            = json_num(line, "\"fps\": ", 0);
                t->completed_seen = 1;
            } else if (!strcmp(ev, "task_end")) {
                t->exit_code  = (int)json_num(line, "\"exit_code\": ", -1);
                t->ended      = json_num(line, "\"ended_unix\": ", 0);
                t->ended_seen = 1;
            }
        }
        free(line);
        fclose(f);
        if (task_seen) (*n)++;
    }
    for (int i = 0; i < *n; i++) /* by start time: a later task's frames replace an earlier one's */
        for (int j = i + 1; j < *n; j++)
            if (tasks[j].started < tasks[i].started) {
                task_rec x = tasks[i];
                tasks[i] = tasks[j], tasks[j] = x;
            }
    stem_index *idx = malloc(sizeof *idx * (size_t)(shot->n ? shot->n : 1)); /* [shot->n], sorted by stem */
    for (int i = 0; idx && i < shot->n; i++) idx[i] = (stem_index){shot->stems[i], i};
    if (idx) qsort(idx, (size_t)shot->n, sizeof *idx, cmp_stem);
    for (int k = 0; idx && k < *n; k++) { /* second pass: which frames each task wrote */
        char path[CK_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, tasks[k].record);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char  *line = NULL, stem[1024];
        size_t cap  = 0;
        while (getline(&line, &cap, f) > 0) {
            if (!strstr(line, "\"event\": \"frame_written\"") || !json_str(line, "\"stem\": ", stem, sizeof stem))
                continue;
            stem_index        key = {stem, 0};
            const stem_index *hit = bsearch(&key, idx, (size_t)shot->n, sizeof *idx, cmp_stem);
            if (hit) by_frame[hit->frame] = k;
        }
        free(line);
        fclose(f);
    }
    free(idx);
    for (int i = 0; i < nn; i++) free(names[i]);
    free(names);
    return tasks;
}

/* ---- the manifest ---- */

static void jstr(FILE *f, const char *s) { ck_cli_json_str(f, s); }

static int write_manifest(const char *path, const key_opts *o, const farm_shot *shot, const char *image,
                          const task_rec *tasks, int ntask, const int *by_frame, const char *videos[3]) {
    static const char *pass_names[4] = {"matte", "fg", "processed", "comp"};
    char               tmp[CK_PATH_MAX + 400], host[256] = "";
    snprintf(tmp, sizeof tmp, "%s.tmp.%d.0", path, (int)getpid());
    gethostname(host, sizeof host - 1);
    FILE *f = fopen(tmp, "w");
    if (!f) return 0;
    const size_t outlen = strlen(o->out);
    int          ok     = 1;
    fprintf(f, "{\n  \"shot\": ");
    jstr(f, shot->name);
    fprintf(f, ",\n  \"input\": ");
    jstr(f, image);
    fprintf(f, ",\n  \"out\": ");
    jstr(f, o->out);
    fprintf(f, ",\n  \"frames_total\": %d,\n  \"checksum\": \"%s\",\n  \"assembled_unix\": %ld,\n  \"assembled_on\": ",
            shot->n, CHECKSUM_NAME, (long)time(NULL));
    jstr(f, host);
    fprintf(f, ",\n  \"frames\": [\n");
    for (int i = 0; i < shot->n && ok; i++) {
        long       number;
        const int  has_number = shot->is_video ? (number = i, 1) : ck_frame_number(shot->stems[i], &number);
        const task_rec *t     = by_frame[i] >= 0 ? &tasks[by_frame[i]] : NULL;
        fprintf(f, "    {\"index\": %d, \"stem\": ", i);
        jstr(f, shot->stems[i]);
        if (has_number) fprintf(f, ", \"number\": %ld", number);
        else fprintf(f, ", \"number\": null");
        fprintf(f, ", \"node\": ");
        if (t) jstr(f, t->node), fprintf(f, ", \"job\": "), jstr(f, t->job), fprintf(f, ", \"task\": "), jstr(f, t->task);
        else fprintf(f, "null, \"job\": null, \"task\": null");
        fprintf(f, ", \"files\": [");
        char      paths[4][CK_SHOT_PATH_MAX];
        const int np = ck_shot_pass_paths(o->out, shot->stems[i], o->p.comp, paths);
        for (int p = 0; p < np; p++) {
            char      hex[65];
            long long bytes;
            if (!file_checksum(paths[p], hex, &bytes)) {
                fprintf(stderr, "ckey: farm: cannot read %s: %s\n", paths[p], strerror(errno));
                ok = 0;
            }
            const char *rel = !strncmp(paths[p], o->out, outlen) && paths[p][outlen] == '/' ? paths[p] + outlen + 1 : paths[p];
            fprintf(f, "%s\n      {\"pass\": \"%s\", \"path\": ", p ? "," : "", pass_names[p]);
            jstr(f, rel);
            fprintf(f, ", \"bytes\": %lld, \"%s\": \"%s\"}", bytes, CHECKSUM_NAME, hex);
        }
        fprintf(f, "]}%s\n", i + 1 < shot->n ? "," : "");
    }
    fprintf(f, "  ],\n  \"tasks\": [\n");
    for (int k = 0; k < ntask; k++) {
        const task_rec *t = &tasks[k];
        fprintf(f, "    {\"record\": ");
        jstr(f, t->record);
        fprintf(f, ", \"scheduler\": ");
        jstr(f, t->scheduler);
        fprintf(f, ", \"job\": ");
        jstr(f, t->job);
        fprintf(f, ", \"task\": ");
        jstr(f, t->task);
        fprintf(f, ", \"frames\": ");
        jstr(f, t->frames);
        fprintf(f, ", \"node\": ");
        jstr(f, t->node);
        fprintf(f, ", \"started_unix\": %.3f, \"ended_unix\": ", t->started);
        if (t->ended_seen) fprintf(f, "%.3f, \"wall_s\": %.3f, \"exit_code\": %d", t->ended, t->ended - t->started, t->exit_code);
        else fprintf(f, "null, \"wall_s\": null, \"exit_code\": null");
        if (t->completed_seen)
            fprintf(f, ", \"frames_written\": %d, \"skipped\": %d, \"key_s\": %.3f, \"fps\": %.3f}", t->frames_written,
                    t->skipped, t->seconds, t->fps);
        else fprintf(f, ", \"frames_written\": null}");
        fprintf(f, "%s\n", k + 1 < ntask ? "," : "");
    }
    fprintf(f, "  ],\n  \"nodes\": {");
    for (int k = 0, first = 1; k < ntask; k++) { /* frames per node, each node once */
        int seen = 0, frames = 0;
        for (int j = 0; j < k; j++) seen |= !strcmp(tasks[j].node, tasks[k].node);
        if (seen) continue;
        for (int i = 0; i < shot->n; i++) frames += by_frame[i] >= 0 && !strcmp(tasks[by_frame[i]].node, tasks[k].node);
        fprintf(f, "%s", first ? "" : ", ");
        jstr(f, tasks[k].node);
        fprintf(f, ": %d", frames);
        first = 0;
    }
    fprintf(f, "},\n  \"videos\": [");
    for (int v = 0, first = 1; v < 3; v++) {
        if (!videos[v]) continue;
        char      hex[65];
        long long bytes;
        if (!file_checksum(videos[v], hex, &bytes)) ok = 0;
        const char *slash = strrchr(videos[v], '/');
        fprintf(f, "%s\n    {\"path\": ", first ? "" : ",");
        jstr(f, slash ? slash + 1 : videos[v]);
        fprintf(f, ", \"bytes\": %lld, \"%s\": \"%s\"}", bytes, CHECKSUM_NAME, hex);
        first = 0;
    }
    fprintf(f, "]\n}\n");
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        remove(tmp);
        return 0;
    }
    return 1;
}

int farm_assemble(int argc, char **argv) {
    assemble_opts ao = {0};
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_FARM_ASSEMBLE, argc, argv, &ao, &r);
    if (st == CK_OPT_HELP) {
        farm_usage(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return EXIT_USAGE;
    const char *out = r.npos ? r.pos[0] : NULL, *video_out = ao.video_out, *name_opt = ao.name;
    char      **kargv     = r.pass; /* the run's key options */
    const int   kc        = r.npass;
    int         has_image = 0;
    for (int i = 0; i < kc; i++) has_image |= !strncmp(kargv[i], "--image", 7) && (!kargv[i][7] || kargv[i][7] == '=');
    if (!out) {
        fprintf(stderr, "ckey: farm assemble needs the output folder: ckey farm assemble DIR (see --help)\n");
        return EXIT_USAGE;
    }
    farm_conf conf;
    const int have_conf = farm_conf_read(&conf, out);
    if (!has_image && !have_conf) {
        fprintf(stderr, "ckey: %s/.farm/job.conf not found (ckey farm slurm writes it): give the shot with --image "
                        "INPUT and the key options of the run\n", out);
        return EXIT_USAGE;
    }
    char *all[FARM_MAX_ARGS + CK_OPT_MAX_PASS + 8]; /* job.conf's options, then the command line's */
    int   n = 0;
    if (!has_image) { /* the shot as `ckey farm slurm` recorded it */
        all[n++] = "--image", all[n++] = conf.image;
        if (conf.hint[0]) all[n++] = "--hint", all[n++] = conf.hint;
        for (int i = 0; i < conf.nargs; i++) all[n++] = conf.args[i];
    }
    for (int i = 0; i < kc; i++) all[n++] = kargv[i];
    all[n++] = "--out", all[n++] = (char *)out;
    key_opts o;
    if (!ck_cli_parse_key(n, all, &o)) {
        farm_conf_free(&conf);
        return EXIT_USAGE;
    }
    farm_shot shot;
    char      msg[1200];
    if (!farm_shot_open(&shot, o.image, msg, sizeof msg)) {
        fprintf(stderr, "ckey: %s\n", msg);
        farm_conf_free(&conf);
        return EXIT_RUNTIME;
    }
    const char *name = name_opt ? name_opt : have_conf && !has_image && conf.name[0] ? conf.name : shot.name;
    if (!video_out) video_out = have_conf && conf.video_out[0] ? conf.video_out : "prores,h264";
    const double fps = ao.fps > 0 ? ao.fps : have_conf && conf.fps > 0 ? conf.fps : shot.fps;

    /* every task is over: what a killed one left half-written goes */
    static const char *dirs[5] = {"", "/Matte", "/FG", "/Processed", "/Comp"};
    for (int i = 0; i < 5; i++) {
        char d[CK_PATH_MAX + 16];
        snprintf(d, sizeof d, "%s%s", out, dirs[i]);
        ck_shot_sweep_dir(d);
    }
    char manifest[CK_PATH_MAX + 300];
    snprintf(manifest, sizeof manifest, "%s/%s_manifest.json", out, name);
    int  missing = 0, rc = 0;
    char names[1024] = "";
    for (int i = 0; i < shot.n; i++)
        if (!frame_done(&o, shot.stems[i])) {
            const size_t l = strlen(names);
            if (missing++ < 12) snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", shot.stems[i]);
        }
    int       *by_frame = calloc((size_t)(shot.n > 0 ? shot.n : 1), sizeof *by_frame); /* [shot.n]: the task that wrote it, -1 */
    int        ntask    = 0;
    task_rec  *tasks    = by_frame ? read_records(out, &shot, by_frame, &ntask) : NULL;
    if (missing) {
        remove(manifest); /* an older manifest would vouch for frames that are gone */
        fprintf(stderr, "ckey: farm: %s: %d of %d frames have missing or undecodable passes: %s%s\n", out, missing,
                shot.n, names, missing > 12 ? ", ..." : "");
        for (int k = 0; k < ntask; k++)
            if (tasks[k].ended_seen && tasks[k].exit_code != 0)
                fprintf(stderr, "ckey: farm: task %s (frames %s, job %s, node %s) exited with %d\n", tasks[k].task,
                        tasks[k].frames, tasks[k].job, tasks[k].node, tasks[k].exit_code);
        fprintf(stderr, "ckey: farm: the tasks do not cover the shot; submit again (ckey farm slurm ...) to key only "
                        "the missing frames\n");
        rc = EXIT_RUNTIME;
    }
    /* the videos, from the passes (ckey encode); h264 is the comp's, absent with --no-comp */
    const char *videos[3] = {NULL, NULL, NULL};
    char        vpaths[3][CK_PATH_MAX + 300];
    if (rc == 0 && strcmp(video_out, "none")) {
        static const char *vext[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};
        const int want[3] = {strstr(video_out, "prores") != NULL, strstr(video_out, "ffv1") != NULL,
                             strstr(video_out, "h264") != NULL && o.p.comp};
        char      list[64] = "", fps_s[32];
        for (int k = 0; k < 3; k++)
            if (want[k]) {
                const size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", l ? "," : "", k == 0 ? "prores" : k == 1 ? "ffv1" : "h264");
                snprintf(vpaths[k], sizeof vpaths[k], "%s/%s%s", out, name, vext[k]);
                videos[k] = vpaths[k];
            }
        snprintf(fps_s, sizeof fps_s, "%.10g", fps);
        char *eargv[] = {(char *)out, "--video-out", list, "--fps", fps_s, "--name", (char *)name, NULL};
        if (list[0] && cmd_encode(7, eargv) != 0) rc = EXIT_RUNTIME;
    }
    if (rc == 0) {
        if (!write_manifest(manifest, &o, &shot, o.image, tasks, ntask, by_frame, videos)) {
            fprintf(stderr, "ckey: farm: cannot write %s: %s\n", manifest, strerror(errno));
            rc = EXIT_RUNTIME;
        } else {
            fprintf(stderr, "ckey: farm: %s: all %d frames present and decoding, %d task records; %s\n", out, shot.n,
                    ntask, manifest);
        }
    }
    free(tasks), free(by_frame);
    farm_shot_free(&shot);
    farm_conf_free(&conf);
    return rc;
}
