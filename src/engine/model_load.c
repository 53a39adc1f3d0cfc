/* The loaded model (include/ckey.h ck_model): a checkpoint read once, its configuration and its weights on
 * one device, immutable from then on and shared by every context made from it. Each context keeps what a
 * stream of frames needs for itself (its own backend: CUDA stream, library handles, scratch, activation
 * arena, graphs; host buffers; error state), so contexts of one model run in parallel threads.
 *
 * Ownership: a model is reference-counted; ck_model_load hands out one reference, each context holds one,
 * ck_model_release drops one, and the last one frees the weights and the checkpoint. On CUDA the weights
 * live in a weights-only backend (memory and uploads, no scratch or library handles): the model costs
 * its weights and nothing else on the device. */
#include "engine/ctx.h"
#include "model/builtin.h"
#include "model/random_weights.h"

#include <stdlib.h>
#include <string.h>

ck_backend *ck__make_backend(const ck_params *p, int weights_only, ck_err *err, ck_status *st) {
    const int lowp = p->precision == CK_PREC_BF16 || p->precision == CK_PREC_FP16;
    if (p->device == CK_DEVICE_CPU) {
        if (lowp) {
            *st = ck__fail(err, CK_STATUS_EUNSUPPORTED, "the CPU backend computes in fp32 only (asked for %s)",
                           p->precision == CK_PREC_BF16 ? "bf16" : "fp16");
            return NULL;
        }
        return ck_backend_cpu_create(p->threads);
    }
    ck_err          cerr = {{0}};
    ck_backend_opts bo   = {p->device_index, p->precision == CK_PREC_AUTO ? CK_PREC_FP16 : p->precision,
                            p->fused_attention, weights_only};
    ck_backend     *be   = ck_backend_cuda_create(&bo, &cerr);
    if (be) return be;
    if (p->device == CK_DEVICE_CUDA) {
        *st = ck__fail(err, CK_STATUS_ENODEV, "--device cuda: %s", cerr.msg);
        return NULL;
    }
    CK_LOG_INFO("no usable CUDA device (%s); running on the CPU%s", cerr.msg, lowp ? " in fp32" : "");
    return ck_backend_cpu_create(p->threads);
}

ck_status ck__model_load(ck_model **out, const char *checkpoint_path, const ck_params *params, ck_err *err) {
    *out         = NULL;
    ck_model *m = calloc(1, sizeof *m);
    if (!m) return ck__fail(err, CK_STATUS_EOOM, "out of memory");
    atomic_init(&m->refs, 1);
    m->params   = *params;
    ck_status st = CK_OK;
    /* the device first: "no GPU" is reported before any checkpoint work */
    m->be = ck__make_backend(&m->params, 1, err, &st);
    if (!m->be) {
        free(m);
        return st != CK_OK ? st : CK_STATUS_ENODEV;
    }
    /* what the device resolved to, so that contexts made from the model match it */
    m->params.device = m->be->device;
    m->params.precision = m->be->act_dtype == CK_DTYPE_F16    ? CK_PREC_FP16
                          : m->be->act_dtype == CK_DTYPE_BF16 ? CK_PREC_BF16
                                                              : CK_PREC_FP32;
    m->builtin = ck_builtin_is_spec(checkpoint_path);
    /* "random:<config>": generated weights, no file (benchmarks, smoke runs) */
    st = ck_random_weights_is_spec(checkpoint_path) ? ck_random_checkpoint(&m->ckpt, checkpoint_path, err)
         : ck_builtin_is_spec(checkpoint_path)      ? ck_builtin_checkpoint(&m->ckpt, err)
                                                    : ck_checkpoint_open(&m->ckpt, checkpoint_path, err);
    if (st == CK_OK) {
        ck_checkpoint_canonicalize(&m->ckpt);
        st = ck_config_from_checkpoint(&m->cfg, &m->ckpt, m->params.size, m->params.head_dim, err);
    }
    if (st == CK_OK) st = ck_weights_load(&m->w, &m->cfg, &m->ckpt, m->be, err);
    if (st == CK_OK && m->be->failed)
        st = ck__fail(err, CK_STATUS_EDEVICE, "uploading the weights: %s", m->be->failure);
    if (st != CK_OK) {
        ck_model_release(m);
        return st;
    }
    m->params.head_dim = m->cfg.head_dim;
    *out               = m;
    return CK_OK;
}

ck_model *ck__model_retain(ck_model *m) {
    atomic_fetch_add(&m->refs, 1);
    return m;
}

void ck_model_release(ck_model *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
    ck_weights_free(&m->w);
    if (m->be) m->be->destroy(m->be);
    ck_checkpoint_close(&m->ckpt);
    free(m);
}

size_t ck_model_weight_bytes(const ck_model *m) { return m ? m->w.bytes : 0; }

const ck_params *ck_model_params(const ck_model *m) { return m ? &m->params : NULL; }
