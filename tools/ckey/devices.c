/* --devices LIST|all for `ckey key` / `ckey clip`: the CUDA devices a shot is keyed on, one context each
 * (a model per GPU, loaded once: an index given twice runs two streams of that GPU's model), handed to the
 * shot library (ck_shot_key_multi), which shares the frames among them. */
#include "key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int key_parse_devices(const char *list, int *idx, int max, char *msg, size_t n) {
    const int visible = ck_cuda_device_count();
    if (visible == 0) return snprintf(msg, n, "--devices %s: no CUDA device is visible", list), -1;
    int count = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; i < visible && count < max; i++) idx[count++] = i;
        return count;
    }
    const char *s = list;
    while (*s) {
        char *end = NULL;
        long  v   = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || v < 0)
            return snprintf(msg, n, "--devices %s: a comma list of device indices (0, 1, ...) or all", list), -1;
        if (v >= visible)
            return snprintf(msg, n, "--devices %s: there is no CUDA device %ld (%d visible: 0-%d)", list, v, visible,
                            visible - 1), -1;
        if (count == max) return snprintf(msg, n, "--devices %s: at most %d entries", list, max), -1;
        idx[count++] = (int)v;
        s            = *end ? end + 1 : end;
    }
    if (count == 0) return snprintf(msg, n, "--devices: no device given"), -1;
    return count;
}

int key_open_contexts(const char *ckpt, const ck_params *p, const int *idx, int n, ck_ctx **ctxs, char *msg, size_t len) {
    ck_model *models[CK_PIPE_MAX_CONTEXTS] = {0};
    int       model_dev[CK_PIPE_MAX_CONTEXTS], n_models = 0, ok = 1;
    for (int i = 0; i < n; i++) ctxs[i] = NULL;
    for (int i = 0; i < n && ok; i++) {
        ck_params q    = *p;
        q.device       = CK_DEVICE_CUDA;
        q.device_index = idx[i];
        int m          = 0;
        while (m < n_models && model_dev[m] != idx[i]) m++;
        if (m == n_models) { /* the first context on this GPU: its model */
            char err[512];
            if (ck_model_load(&models[m], ckpt, &q, err, sizeof err) != CK_OK) {
                snprintf(msg, len, "device %d: %s", idx[i], err);
                ok = 0;
                break;
            }
            model_dev[n_models++] = idx[i];
        }
        if (ck_ctx_init_model(&ctxs[i], models[m], &q) != CK_OK) {
            snprintf(msg, len, "device %d: %s", idx[i], ck_ctx_last_error(ctxs[i]));
            ok = 0;
        }
    }
    for (int m = 0; m < n_models; m++) ck_model_release(models[m]); /* the contexts hold them */
    if (!ok)
        for (int i = 0; i < n; i++) ck_ctx_free(ctxs[i]), ctxs[i] = NULL;
    return ok;
}
