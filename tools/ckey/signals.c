/* Signals and the start-up sweep of partial files (signals.h). */
#define _POSIX_C_SOURCE 200809L
#include "signals.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_sig;

static void on_signal(int s) {
    if (g_sig) { /* the second one: no more waiting */
        signal(s, SIG_DFL);
        raise(s);
        return;
    }
    g_sig = s;
}

void ck_cli_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags   = SA_RESTART; /* reads and writes in progress continue */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int ck_cli_signal(void) { return g_sig; }

const char *ck_cli_signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

/* The pid in a temporary name of ours, else 0: ".STEM.partialPID.EXT", ".NAME.partialPIDEXT" (videos) and
 * "NAME.tmp.PID.N" (any file written through a temporary). */
static long temp_pid(const char *name) {
    const char *p = name[0] == '.' ? strstr(name, ".partial") : NULL;
    if (p) p += strlen(".partial");
    else {
        const char *t = strstr(name, ".tmp.");
        if (!t) return 0;
        p = t + strlen(".tmp.");
    }
    char *end;
    long  pid = strtol(p, &end, 10);
    return end > p && pid > 0 ? pid : 0;
}

int ck_cli_sweep_partials(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int            removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const long pid = temp_pid(e->d_name);
        if (!pid || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to judge) */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (remove(path) == 0) removed++;
    }
    closedir(d);
    return removed;
}
