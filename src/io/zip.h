/* Read-only index of a zip archive held in memory (the container of torch.save .pth files).
 *
 * Only what torch.save produces is needed: stored (uncompressed) records, addressed by name. The
 * index points into the caller's buffer; nothing is copied or decompressed. Compressed records are
 * indexed (so the caller can name them in an error) but have no usable data. Zip64 end records and
 * zip64 extra fields are honoured, since torch writes the former on every file and large archives
 * need the latter.
 *
 *     ck_zip z;
 *     if (ck_zip_open(&z, buf, size, "model.pth", &err) != CK_OK) ...;
 *     const ck_zip_entry *e = ck_zip_find(&z, "archive/data.pkl", 16);
 *     ck_zip_close(&z);
 */
#ifndef CK_ZIP_H
#define CK_ZIP_H

#include "core/check.h"
#include <stdint.h>

typedef struct ck_zip_entry {
    const char    *name;     /* into the central directory, not NUL-terminated */
    size_t         name_len;
    int            method;   /* 0 = stored; anything else is unusable here */
    const uint8_t *data;     /* record bytes inside the buffer (compressed bytes if method != 0) */
    size_t         size;     /* bytes at data (stored size) */
    size_t         offset;   /* data - buffer start */
    uint32_t       crc32;    /* from the central directory */
} ck_zip_entry;

typedef struct ck_zip {
    ck_zip_entry *entries;   /* central-directory order */
    int           n;
    int          *by_name;   /* entry indices sorted by name, for ck_zip_find */
} ck_zip;

/* Parses the end record(s), the central directory and every local header, checking all ranges
 * against `size`. `label` names the file in error messages. Duplicate names and encrypted or
 * multi-disk archives are rejected. */
ck_status           ck_zip_open(ck_zip *z, const uint8_t *buf, size_t size, const char *label, ck_err *err);
const ck_zip_entry *ck_zip_find(const ck_zip *z, const char *name, size_t name_len);
void                ck_zip_close(ck_zip *z);
/* CRC-32 (zip / IEEE 802.3 polynomial) of n bytes; bitwise, meant for small records such as data.pkl. */
uint32_t            ck_crc32(const uint8_t *p, size_t n);

#endif
