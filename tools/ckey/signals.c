/* Signals (signals.h). */
#define _POSIX_C_SOURCE 200809L
#include "signals.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

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
