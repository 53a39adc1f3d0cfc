/* Interruption of `ckey key` / `clip` (SIGINT from a terminal, SIGTERM from a farm's pre-emption): the first
 * signal asks the run to stop after the frames already keyed are written (key.c then removes the
 * unfinished videos, says "interrupted", emits a `cancelled` event and exits 128 + the signal); a second
 * one ends the process at once, as without a handler. Partial files a dead process left behind are removed
 * when the next run starts (ck_shot_sweep, ckey_shot.h). The run itself stops through the shot's cancel hook
 * (ck_shot_opts.cancelled), which key.c maps to ck_cli_signal. */
#ifndef CK_CLI_SIGNALS_H
#define CK_CLI_SIGNALS_H

void        ck_cli_signals_install(void);
int         ck_cli_signal(void);                /* the signal received, 0 = none */
const char *ck_cli_signal_name(int sig);        /* "SIGINT", "SIGTERM" */

#endif
