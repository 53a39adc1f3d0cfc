/* Shared by the libFuzzer harnesses (fuzz_*.c) and the replay driver (replay_main.c).
 *
 * A harness defines LLVMFuzzerTestOneInput: it hands the bytes to one loader through the loader's own
 * entry point (a path for loaders that only take paths: ck_fuzz_file), releases what the loader returned,
 * and stores the loader's status in ck_fuzz_status, which the replay driver reports (an allocation
 * failure under its memory limit fails the replay). Loaders must return a status for every input: a
 * crash, a sanitizer report, a hang or unbounded memory is a bug.
 */
#ifndef CK_FUZZ_COMMON_H
#define CK_FUZZ_COMMON_H

#include "core/check.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The loader's status for the last input (CK_OK when it succeeded). */
extern ck_status ck_fuzz_status;
/* Its message, for the replay driver's report. */
extern ck_err ck_fuzz_err;

/* The bytes as a file: one memfd per process (a tmp file where memfd_create is missing), rewritten for each
 * input; returns its path ("/proc/self/fd/N"). Aborts when no file can be made. */
const char *ck_fuzz_file(const uint8_t *data, size_t size);

/* Silences ckey's log (loaders log warnings for damaged files); called by every harness. */
void ck_fuzz_quiet(void);

/* Reads every byte of [p, p + n) so that a sanitizer sees any out-of-bounds range a loader returned. */
uint64_t ck_fuzz_touch(const void *p, size_t n);

#endif
