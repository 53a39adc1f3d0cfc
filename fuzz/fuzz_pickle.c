/* libFuzzer harness: the pickle reader of .pth data.pkl records (ck_pickle_load on the exact input buffer),
 * then a walk over the object tree it returns. */
#include "fuzz_common.h"
#include "io/pickle.h"

/* Objects may be shared through the memo (a tree of depth d can have 2^d paths, a list may hold itself),
 * so the walk visits at most *budget nodes, at most 1000 deep. */
static void walk(const ck_pk_obj *o, int depth, long *budget) {
    CK_ASSERT(o != NULL);
    if (--*budget < 0 || depth > 1000) return;
    switch (o->type) {
    case CK_PK_STR: ck_fuzz_touch(o->u.str.s, o->u.str.len); break;
    case CK_PK_TUPLE:
    case CK_PK_LIST:
    case CK_PK_DICT:
        for (size_t i = 0; i < o->u.seq.n && *budget >= 0; i++) walk(o->u.seq.items[i], depth + 1, budget);
        break;
    case CK_PK_STORAGE:
    case CK_PK_TENSOR:
        ck_fuzz_touch(o->u.tensor->key, o->u.tensor->key_len);
        CK_ASSERT(o->u.tensor->ndim >= 0 && o->u.tensor->ndim <= CK_PK_MAX_DIMS);
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_pickle pk = {0};
    ck_fuzz_status = ck_pickle_load(&pk, data, size, "fuzz-input", &ck_fuzz_err);
    if (ck_fuzz_status == CK_OK) {
        long budget = 1000000;
        walk(pk.root, 0, &budget);
        (void)ck_pk_dict_get(pk.root, "state_dict");
    }
    ck_pickle_free(&pk);
    return 0;
}
