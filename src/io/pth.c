/* torch.save (.pth) reader: zip archive -> data.pkl -> state dict of tensors pointing into the mapping.
 *
 * Reference: torch/serialization.py (_save, _load: records "<folder>/data.pkl", "<folder>/data/<key>",
 * "<folder>/byteorder"; the folder is "archive" for file objects and the file's stem otherwise) and
 * torch/_utils.py (_rebuild_tensor_v2). torch 2.x writes protocol-2 pickles whose tensors are
 * _rebuild_tensor_v2(('storage', torch.<T>Storage, key, location, numel), offset, size, stride, ...).
 *
 * Rules kept here: only stored records are used (tensor data is addressed in place); data.pkl must
 * match its CRC-32, since it decides every shape and offset; each tensor must be contiguous and its
 * byte range must lie inside its storage record, which lies inside the file.
 */
#include "io/ckpt_index.h"
#include "io/pickle.h"
#include "io/zip.h"

#include <string.h>

#define REC_MAX 512

static int shown(size_t n) { return n > 120 ? 120 : (int)n; }

static ck_status require_stored(const ck_zip_entry *e, const char *label, ck_err *err) {
    if (e->method == 0) return CK_OK;
    return ck__fail(err, CK_STATUS_EFORMAT,
                    "%s: zip entry '%.*s' is compressed (method %d); torch.save stores records uncompressed, "
                    "so the archive was re-packed: re-save it with torch.save",
                    label, shown(e->name_len), e->name, e->method);
}

/* The archive's data.pkl: "<folder>/data.pkl" with a single-level folder of any name. */
static ck_status find_pickle(const ck_zip *z, const ck_zip_entry **out, const char *label, ck_err *err) {
    static const char tail[] = "/data.pkl";
    const size_t      tl     = sizeof tail - 1;
    *out                     = NULL;
    for (int i = 0; i < z->n; i++) {
        const ck_zip_entry *e = &z->entries[i];
        if (e->name_len <= tl || memcmp(e->name + e->name_len - tl, tail, tl) != 0) continue;
        if (memchr(e->name, '/', e->name_len - tl)) continue; /* nested: not the archive's own pickle */
        if (*out)
            return ck__fail(err, CK_STATUS_EFORMAT, "%s: archive holds more than one data.pkl ('%.*s' and '%.*s')",
                            label, shown((*out)->name_len), (*out)->name, shown(e->name_len), e->name);
        *out = e;
    }
    if (!*out)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: zip archive has no <folder>/data.pkl record: not a torch.save file",
                        label);
    return CK_OK;
}

static ck_status check_byteorder(const ck_zip *z, const char *prefix, size_t plen, const char *label, ck_err *err) {
    char rec[REC_MAX];
    snprintf(rec, sizeof rec, "%.*sbyteorder", (int)plen, prefix);
    const ck_zip_entry *e = ck_zip_find(z, rec, strlen(rec));
    if (!e) return CK_OK; /* written since torch 1.10; older archives are little-endian */
    ck_status st = require_stored(e, label, err);
    if (st != CK_OK) return st;
    if (e->size == 6 && memcmp(e->data, "little", 6) == 0) return CK_OK;
    if (e->size == 3 && memcmp(e->data, "big", 3) == 0)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: big-endian checkpoint (byteorder record says \"big\") is not supported; re-save it on a "
                        "little-endian machine",
                        label);
    return ck__fail(err, CK_STATUS_EFORMAT, "%s: unknown byteorder record '%.*s'", label,
                    shown(e->size > 16 ? 16 : e->size), (const char *)e->data);
}

static ck_status add_tensor(ck_checkpoint *ck, int *cap, const ck_zip *z, const char *prefix, size_t plen,
                            const ck_pk_obj *key, const ck_pk_tensor *t, const char *label, ck_err *err) {
    const char *name = key->u.str.s;
    int         nl   = shown(key->u.str.len);
    size_t      nbytes, esize = ck_dtype_size(t->dtype);
    if (!ck__ckpt_nbytes(t->dtype, t->ndim, t->shape, &nbytes))
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has an invalid or overflowing shape", label, nl, name);
    /* Contiguous means row-major strides; dimensions of size 1 may carry any stride (torch agrees). */
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != expect)
            return ck__fail(err, CK_STATUS_EFORMAT,
                            "%s: tensor '%.*s' is not contiguous (stride %lld in dim %d, expected %lld); save "
                            "t.contiguous() instead",
                            label, nl, name, (long long)t->stride[d], d, (long long)expect);
        expect *= t->shape[d]; /* bounded: nbytes above did not overflow */
    }
    char rec[REC_MAX];
    int  rl = snprintf(rec, sizeof rec, "%.*sdata/%.*s", (int)plen, prefix, shown(t->key_len), t->key);
    if (t->key_len > 120 || rl < 0 || (size_t)rl >= sizeof rec)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has an overlong storage key", label, nl, name);
    const ck_zip_entry *e = ck_zip_find(z, rec, (size_t)rl);
    if (!e)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' refers to missing record '%s'", label, nl, name, rec);
    ck_status st = require_stored(e, label, err);
    if (st != CK_OK) return st;
    size_t sbytes, obytes, end;
    if ((uint64_t)t->storage_numel > SIZE_MAX || !ck_mul_size((size_t)t->storage_numel, esize, &sbytes) ||
        sbytes > e->size)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: storage '%s' holds %zu bytes but the pickle declares %lld elements of %zu bytes", label,
                        rec + plen, e->size, (long long)t->storage_numel, esize);
    if ((uint64_t)t->offset > SIZE_MAX || !ck_mul_size((size_t)t->offset, esize, &obytes) ||
        !ck_add_size(obytes, nbytes, &end))
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' storage offset %lld lies outside storage '%s' of %zu bytes",
                        label, nl, name, (long long)t->offset, rec + plen, sbytes);
    if (end > sbytes)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' data [%zu,%zu) outside storage '%s' of %zu bytes",
                        label, nl, name, obytes, end, rec + plen, sbytes);
    return ck__ckpt_add(ck, cap, name, key->u.str.len, t->dtype, t->ndim, t->shape, e->offset + obytes, nbytes, label,
                        err);
}

ck_status ck__pth_load(ck_checkpoint *ck, const char *label, ck_err *err) {
    ck_zip    z;
    ck_pickle pk = {0};
    ck_status st = ck_zip_open(&z, ck->map, ck->map_size, label, err);
    if (st != CK_OK) return st;
    const ck_zip_entry *pkl;
    if ((st = find_pickle(&z, &pkl, label, err)) != CK_OK || (st = require_stored(pkl, label, err)) != CK_OK) goto done;
    const char *prefix = pkl->name;
    size_t      plen   = pkl->name_len - (sizeof "data.pkl" - 1); /* keeps the trailing '/' */
    if ((st = check_byteorder(&z, prefix, plen, label, err)) != CK_OK) goto done;
    /* The pickle decides every shape and offset, so a damaged one is caught here rather than trusted;
     * tensor records are not checksummed (that would read the whole file at open). */
    if (ck_crc32(pkl->data, pkl->size) != pkl->crc32) {
        st = ck__fail(err, CK_STATUS_EFORMAT, "%s: zip entry '%.*s' fails its CRC-32 check (corrupt file)", label,
                      shown(pkl->name_len), pkl->name);
        goto done;
    }

    char plabel[640];
    snprintf(plabel, sizeof plabel, "%s: %.*s", label, shown(pkl->name_len), pkl->name);
    if ((st = ck_pickle_load(&pk, pkl->data, pkl->size, plabel, err)) != CK_OK) goto done;

    const ck_pk_obj *sd = pk.root, *inner = ck_pk_dict_get(pk.root, "state_dict");
    if (inner) {
        if (inner->type != CK_PK_DICT) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: 'state_dict' entry is a %s, not a dict", label,
                          ck_pk_type_name(inner->type));
            goto done;
        }
        sd = inner;
    }
    if (sd->type != CK_PK_DICT) {
        st = ck__fail(err, CK_STATUS_EFORMAT, "%s: top-level object is a %s, expected a state dict of tensors", label,
                      ck_pk_type_name(sd->type));
        goto done;
    }
    int cap = 0;
    for (size_t i = 0; i + 1 < sd->u.seq.n && st == CK_OK; i += 2) {
        const ck_pk_obj *k = sd->u.seq.items[i], *v = sd->u.seq.items[i + 1];
        if (k->type != CK_PK_STR) {
            st = ck__fail(err, CK_STATUS_EFORMAT, "%s: state dict key is a %s, not a string", label,
                          ck_pk_type_name(k->type));
        } else if (v->type != CK_PK_TENSOR) {
            st = ck__fail(err, CK_STATUS_EFORMAT,
                          "%s: state dict entry '%.*s' is a %s, not a tensor (expected a dict of tensors or a dict "
                          "with a 'state_dict' entry)",
                          label, shown(k->u.str.len), k->u.str.s, ck_pk_type_name(v->type));
        } else {
            st = add_tensor(ck, &cap, &z, prefix, plen, k, v->u.tensor, label, err);
        }
    }
done:
    ck_pickle_free(&pk);
    ck_zip_close(&z);
    return st;
}
