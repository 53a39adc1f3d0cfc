/* Checkpoint front end: reads the file into memory, sniffs the format and hands the bytes to the .pth or
 * .safetensors reader; holds the shared tensor-index helpers and the lookups.
 *
 * Why the file is read, not mapped: a mapped file that is truncated or rewritten while it is in use
 * (a checkpoint replaced in place during a run, a network disk) kills the process with SIGBUS at the
 * first access to a lost page, with no message, and the CPU backend keeps reading float32 weights in
 * place for the whole run, where no access can be guarded. So ck_checkpoint_open copies the file with
 * pread into an anonymous read-only block it owns (bounded by the file size, which the mapping would
 * also have held in memory once every tensor was read) and compares the file's size and times before
 * and after: a file that changed or shrank while being read is refused with a message, and once open
 * returns nothing the file does afterwards can reach the tensors. Cost: ~0.1 s more per 400 MB from
 * the page cache (docs/benchmarks/2026-12-01-cpu.md).
 *
 * Rules kept here: the bytes are never written after the read and tensor data is never copied again;
 * a failed open leaves the struct zeroed; names are unique after "_orig_mod." stripping (torch.compile's
 * wrapper prefix, model_spec.md §6.1), so a lookup can never be ambiguous.
 */
#define _POSIX_C_SOURCE 200809L
#include "io/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ORIG_MOD CK_CKPT_ORIG_MOD

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const ck_ckpt_tensor *const *)a)->name, (*(const ck_ckpt_tensor *const *)b)->name);
}

static ck_status check_unique(const ck_checkpoint *ck, const char *label, ck_err *err) {
    if (ck->n_tensors < 2) return CK_OK;
    const ck_ckpt_tensor **v = malloc((size_t)ck->n_tensors * sizeof *v);
    if (!v) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", label);
    for (int i = 0; i < ck->n_tensors; i++) v[i] = &ck->tensors[i];
    qsort(v, (size_t)ck->n_tensors, sizeof *v, cmp_tensor_name);
    ck_status st = CK_OK;
    for (int i = 1; i < ck->n_tensors && st == CK_OK; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0)
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: duplicate tensor name '%s' (after stripping '" ORIG_MOD "')",
                          label, v[i]->name);
    free(v);
    return st;
}

static ck_status parse(ck_checkpoint *ck, const char *label, ck_err *err) {
    const uint8_t *m = ck->map;
    size_t         n = ck->map_size;
    ck_status      st;
    if (n == 0) return ck__fail(err, CK_STATUS_EFORMAT, "%s: empty file", label);
    if (n >= 4 && m[0] == 'P' && m[1] == 'K' && m[2] == 3 && m[3] == 4) {
        ck->format = CK_CKPT_PTH;
        st         = ck__pth_load(ck, label, err);
    } else if (n >= 4 && m[0] == 0x80 && m[1] == 0x02 && m[2] == 0x8a && m[3] == 0x0a) {
        /* protocol-2 pickle of torch's legacy magic number (a 10-byte LONG1) */
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: legacy (pre-1.6, non-zip) torch.save format is not supported; re-save it with "
                        "torch.save(torch.load(f), f2) from a current PyTorch",
                        label);
    } else if (n >= 4 && m[0] == 'P' && m[1] == 'K') {
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: zip archive does not start with a local file header (empty or split archive?)", label);
    } else {
        ck->format = CK_CKPT_SAFETENSORS;
        st         = ck__safetensors_load(ck, label, err);
    }
    if (st == CK_OK) st = check_unique(ck, label, err);
    return st;
}

static void release(ck_checkpoint *ck) {
    free(ck->tensors);
    free(ck->meta);
    if (ck->owns_map && ck->map) munmap((void *)ck->map, ck->map_size);
    memset(ck, 0, sizeof *ck);
}

void (*ck__checkpoint_read_hook)(const char *path, size_t done, size_t total);

#define READ_BLOCK ((size_t)8 << 20) /* bytes per pread: large enough that system calls cost nothing */

/* The same file, unchanged: a truncation, an in-place rewrite or an append between the two fstat calls
 * changes the size or the modification / status-change times. */
static int unchanged(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static ck_status changed_while_read(const char *path, const char *how, ck_err *err) {
    return ck__fail(err, CK_STATUS_EIO, "%s changed or was truncated while being read (%s)", path, how);
}

/* Reads the whole file (size bytes, as fstat'ed in *before) into a fresh anonymous block, made read-only. */
static ck_status read_whole(int fd, const char *path, const struct stat *before, uint8_t **out, ck_err *err) {
    const size_t size  = (size_t)before->st_size;
    const long   pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (uint64_t)size / (uint64_t)page > (uint64_t)pages)
        return ck__fail(err, CK_STATUS_EOOM, "%s: a %.1f GB file does not fit this machine's %.1f GB of memory", path,
                        (double)size / 1e9, (double)pages * (double)page / 1e9);
    uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return ck__fail(err, CK_STATUS_EOOM, "%s: cannot allocate %.1f MB to read it: %s", path, (double)size / 1e6,
                        strerror(errno));
#ifdef MADV_HUGEPAGE
    madvise(buf, size, MADV_HUGEPAGE); /* fewer page faults while the block fills; a hint only */
#endif
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ck_status st   = CK_OK;
    size_t    done = 0;
    while (done < size && st == CK_OK) {
        const size_t want = size - done < READ_BLOCK ? size - done : READ_BLOCK;
        const ssize_t k   = pread(fd, buf + done, want, (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) st = ck__fail(err, CK_STATUS_EIO, "%s: read error at byte %zu: %s", path, done, strerror(errno));
        else if (k == 0) st = changed_while_read(path, "it ended early", err);
        else done += (size_t)k;
        if (st == CK_OK && ck__checkpoint_read_hook) ck__checkpoint_read_hook(path, done, size);
    }
    struct stat after;
    if (st == CK_OK && fstat(fd, &after) != 0)
        st = ck__fail(err, CK_STATUS_EIO, "%s: cannot stat: %s", path, strerror(errno));
    if (st == CK_OK && !unchanged(before, &after))
        st = changed_while_read(path, after.st_size != before->st_size ? "its size changed" : "it was modified", err);
    if (st != CK_OK) {
        munmap(buf, size);
        return st;
    }
    mprotect(buf, size, PROT_READ); /* like the file: nothing writes the tensors */
    *out = buf;
    return CK_OK;
}

ck_status ck_checkpoint_open(ck_checkpoint *ck, const char *path, ck_err *err) {
    memset(ck, 0, sizeof *ck);
    if (!path) return ck__fail(err, CK_STATUS_EINVAL, "checkpoint path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ck__fail(err, CK_STATUS_EIO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: empty file", path);
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return ck__fail(err, CK_STATUS_EIO, "%s: file too large to read", path);
    }
    uint8_t  *bytes = NULL;
    ck_status st    = read_whole(fd, path, &sb, &bytes, err);
    close(fd);
    if (st != CK_OK) return st;
    ck->map      = bytes;
    ck->map_size = (size_t)sb.st_size;
    ck->owns_map = 1;
    snprintf(ck->path, sizeof ck->path, "%s", path);
    st = parse(ck, path, err);
    if (st != CK_OK) release(ck);
    return st;
}

ck_status ck_checkpoint_open_memory(ck_checkpoint *ck, const void *data, size_t size, const char *label,
                                    ck_err *err) {
    memset(ck, 0, sizeof *ck);
    if (!label) label = "<memory>";
    if (!data && size) return ck__fail(err, CK_STATUS_EINVAL, "%s: NULL buffer", label);
    ck->map      = data;
    ck->map_size = data ? size : 0;
    snprintf(ck->path, sizeof ck->path, "%s", label);
    ck_status st = parse(ck, label, err);
    if (st != CK_OK) release(ck);
    return st;
}

const ck_ckpt_tensor *ck_checkpoint_find(const ck_checkpoint *ck, const char *name) {
    if (!ck || !name) return NULL;
    if (strncmp(name, ORIG_MOD, sizeof ORIG_MOD - 1) == 0) name += sizeof ORIG_MOD - 1;
    for (int i = 0; i < ck->n_tensors; i++)
        if (strcmp(ck->tensors[i].name, name) == 0) return &ck->tensors[i];
    return NULL;
}

const char *ck_checkpoint_meta(const ck_checkpoint *ck, const char *key) {
    if (!ck || !key) return NULL;
    for (int i = 0; i < ck->n_meta; i++)
        if (strcmp(ck->meta[i].key, key) == 0) return ck->meta[i].value;
    return NULL;
}

void ck_checkpoint_close(ck_checkpoint *ck) {
    if (ck) release(ck);
}
