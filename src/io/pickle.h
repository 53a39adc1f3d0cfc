/* A small, safe pickle reader for the data.pkl record of torch.save checkpoints.
 *
 * It interprets the opcodes torch.save emits (protocols 2 to 5) into an object tree of plain values:
 * None, bool, int, float, str, tuple, list, dict, storage references and tensor descriptors. It never
 * imports or calls anything: a GLOBAL resolves only against a fixed table (collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 / _rebuild_parameter[_with_state] and the typed storage classes)
 * and every other name is an error. Stack depth, memo size, string length and object count are
 * bounded, and every read is checked against the buffer.
 *
 *     ck_pickle pk;
 *     if (ck_pickle_load(&pk, bytes, n, "model.pth: archive/data.pkl", &err) != CK_OK) ...;
 *     const ck_pk_obj *sd = ck_pk_dict_get(pk.root, "state_dict");   // NULL if absent
 *     ck_pickle_free(&pk);
 *
 * Strings and storage keys point into the input buffer, which must outlive the ck_pickle.
 */
#ifndef CK_PICKLE_H
#define CK_PICKLE_H

#include "core/check.h"
#include "core/tensor.h"
#include <stdint.h>

#define CK_PK_MAX_DIMS 8

typedef enum ck_pk_type {
    CK_PK_NONE,
    CK_PK_BOOL,
    CK_PK_INT,
    CK_PK_FLOAT,
    CK_PK_STR,
    CK_PK_TUPLE,
    CK_PK_LIST,
    CK_PK_DICT,    /* dict and collections.OrderedDict, insertion order kept */
    CK_PK_GLOBAL,  /* one of the allowed callables / classes, not yet applied */
    CK_PK_STORAGE, /* persistent id ('storage', <type>, key, location, numel) */
    CK_PK_TENSOR   /* result of _rebuild_tensor_v2 / _rebuild_parameter */
} ck_pk_type;

/* A storage reference, or a tensor view of one (shape/stride/offset used for tensors only). */
typedef struct ck_pk_tensor {
    ck_dtype    dtype;
    const char *key;            /* record name under <archive>/data/ */
    size_t      key_len;
    int64_t     storage_numel;  /* elements of dtype in the storage */
    int64_t     offset;         /* storage_offset, in elements */
    int         ndim;
    int64_t     shape[CK_PK_MAX_DIMS];
    int64_t     stride[CK_PK_MAX_DIMS];
} ck_pk_tensor;

typedef struct ck_pk_obj ck_pk_obj;
struct ck_pk_obj {
    ck_pk_type type;
    union {
        int64_t i;         /* BOOL, INT */
        double  f;         /* FLOAT */
        int     global;    /* GLOBAL: index into the allow-list */
        struct {
            const char *s; /* not NUL-terminated */
            size_t      len;
        } str;
        struct {
            ck_pk_obj **items; /* DICT: key, value, key, value, ... */
            size_t      n, cap;
        } seq;
        ck_pk_tensor *tensor; /* STORAGE, TENSOR */
    } u;
};

typedef struct ck_pk_chunk ck_pk_chunk;

typedef struct ck_pickle {
    ck_pk_obj   *root;
    ck_pk_chunk *chunks;  /* every object, freed together */
    size_t       n_objects;
} ck_pickle;

/* Runs the pickle up to STOP; pk->root is the value it returns. `label` prefixes error messages. */
ck_status        ck_pickle_load(ck_pickle *pk, const uint8_t *buf, size_t size, const char *label, ck_err *err);
void             ck_pickle_free(ck_pickle *pk);
/* The value of the last string key equal to `key` in a DICT, else NULL. */
const ck_pk_obj *ck_pk_dict_get(const ck_pk_obj *dict, const char *key);
const char      *ck_pk_type_name(ck_pk_type t);

#endif
