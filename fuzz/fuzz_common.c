/* Helpers of the fuzz harnesses (fuzz_common.h). */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

ck_status ck_fuzz_status;
ck_err    ck_fuzz_err;

static void quiet_log(ck_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

void ck_fuzz_quiet(void) { ck_set_log(quiet_log, NULL, CK_LOG_ERROR); }

const char *ck_fuzz_file(const uint8_t *data, size_t size) {
    static int  fd = -1;
    static char path[64];
    if (fd < 0) {
#ifdef MFD_CLOEXEC
        fd = memfd_create("ckey-fuzz-input", MFD_CLOEXEC);
#endif
        if (fd < 0) {
            char tmpl[] = "/tmp/ckey-fuzz-XXXXXX";
            fd          = mkstemp(tmpl);
            if (fd >= 0) unlink(tmpl);
        }
        if (fd < 0) {
            fprintf(stderr, "fuzz: cannot create an input file: %s\n", strerror(errno));
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) abort();
    for (size_t done = 0; done < size;) {
        ssize_t k = pwrite(fd, data + done, size - done, (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) abort();
        done += (size_t)k;
    }
    return path;
}

uint64_t ck_fuzz_touch(const void *p, size_t n) {
    const volatile uint8_t *b   = p;
    uint64_t                sum = 0;
    for (size_t i = 0; i < n; i++) sum += b[i];
    return sum;
}
