/* .npy v1/v2 files holding little-endian float arrays in C order. */
#include "ckey_io.h"
#include "core/check.h"
#include "core/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_shape(const char *hdr, int64_t *shape, int *ndim) {
    const char *p = strstr(hdr, "'shape'");
    if (!p) return 0;
    p = strchr(p, '(');
    if (!p) return 0;
    p++;
    *ndim = 0;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || *ndim >= 8) return 0;
        shape[(*ndim)++] = v;
        p = end;
    }
    return *p == ')';
}

ck_status ck_npy_read(const char *path, ck_npy *out, ck_err *err) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open", path);
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: not a .npy file", path);
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = pre[8] | (pre[9] << 8);
    } else {
        if (fread(pre + 10, 1, 2, f) != 2) {
            fclose(f);
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated header", path);
        }
        hlen = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
    }
    if (hlen > 1 << 20) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: header too large", path);
    }
    char *hdr = calloc(hlen + 1, 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated header", path);
    }
    int      esize = 0;
    ck_dtype dt    = CK_DTYPE_F32;
    if (strstr(hdr, "'<f4'")) esize = 4, dt = CK_DTYPE_F32;
    else if (strstr(hdr, "'<f8'")) esize = 8, dt = CK_DTYPE_F64;
    else if (strstr(hdr, "'<f2'")) esize = 2, dt = CK_DTYPE_F16;
    int fortran = strstr(hdr, "'fortran_order': True") != NULL;
    int ok      = parse_shape(hdr, out->shape, &out->ndim);
    free(hdr);
    if (!esize || fortran || !ok) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: unsupported dtype/order/shape", path);
    }
    size_t n = 1;
    for (int i = 0; i < out->ndim; i++)
        if (!ck_mul_size(n, (size_t)out->shape[i], &n)) {
            fclose(f);
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: shape overflow", path);
        }
    size_t bytes;
    if (!ck_mul_size(n, (size_t)esize, &bytes)) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: shape overflow", path);
    }
    /* the data must be in the file before anything is allocated for it (a 100-byte header may claim
     * terabytes) */
    const long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot seek", path);
    }
    const long end = ftell(f);
    if (end < here || (unsigned long)(end - here) < bytes || fseek(f, here, SEEK_SET) != 0) {
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated data (%zu bytes expected, %ld in the file)", path, bytes,
                        end > here ? end - here : 0L);
    }
    void  *raw  = malloc(bytes ? bytes : 1);
    float *data = malloc((n ? n : 1) * sizeof(float));
    if (!raw || !data || fread(raw, 1, bytes, f) != bytes) {
        free(raw);
        free(data);
        fclose(f);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: truncated data", path);
    }
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (dt == CK_DTYPE_F32) data[i] = ((const float *)raw)[i];
        else if (dt == CK_DTYPE_F64) data[i] = (float)((const double *)raw)[i];
        else data[i] = ck_f16_to_f32(((const uint16_t *)raw)[i]);
    }
    free(raw);
    out->data  = data;
    out->numel = n;
    return CK_OK;
}

ck_status ck_npy_write(const char *path, const float *data, int ndim, const int64_t *shape, ck_err *err) {
    char hdr[256], sh[160] = "";
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        char d[32];
        snprintf(d, sizeof d, "%lld,%s", (long long)shape[i], (ndim == 1 || i < ndim - 1) ? "" : "");
        strncat(sh, d, sizeof sh - strlen(sh) - 1);
        if (i < ndim - 1) strncat(sh, " ", sizeof sh - strlen(sh) - 1);
        n *= (size_t)shape[i];
    }
    /* tuple syntax: "(3,)" for 1-D, "(2, 3)" otherwise */
    if (ndim > 1 && sh[strlen(sh) - 1] == ',') sh[strlen(sh) - 1] = '\0';
    int len = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", sh);
    int total = 10 + len + 1;
    int pad   = (64 - total % 64) % 64;
    FILE *f   = fopen(path, "wb");
    if (!f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot write", path);
    unsigned short hl = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t w = fwrite(data, sizeof(float), n, f);
    int    c = fclose(f);
    if (w != n || c != 0) return ck__fail(err, CK_STATUS_EIO, "%s: write failed", path);
    return CK_OK;
}

void ck_npy_free(ck_npy *a) {
    free(a->data);
    memset(a, 0, sizeof *a);
}
