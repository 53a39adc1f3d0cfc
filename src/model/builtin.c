/* The built-in small keyer's weights, embedded in the library (see builtin.h). The assembler includes
 * the file given at build time (CK_BUILTIN_MODEL, an absolute path from CMake) into .rodata, 64-byte
 * aligned, so the safetensors reader maps it as it would a file. */
#include "model/builtin.h"

#include <stdlib.h>
#include <string.h>

#ifndef CK_BUILTIN_MODEL
#error "CK_BUILTIN_MODEL (the path of models/ckey-small.safetensors) must be defined by the build"
#endif

__asm__(".section .rodata\n"
        ".balign 64\n"
        ".global ck__builtin_model_begin\n"
        "ck__builtin_model_begin:\n"
        ".incbin \"" CK_BUILTIN_MODEL "\"\n"
        ".global ck__builtin_model_end\n"
        "ck__builtin_model_end:\n"
        ".previous\n");
extern const unsigned char ck__builtin_model_begin[], ck__builtin_model_end[];

int ck_builtin_is_spec(const char *path) {
    return path && (!strcmp(path, "builtin") || !strcmp(path, CK_BUILTIN_SPEC));
}

ck_status ck_builtin_checkpoint(ck_checkpoint *ck, ck_err *err) {
    const size_t size = (size_t)(ck__builtin_model_end - ck__builtin_model_begin);
    return ck_checkpoint_open_memory(ck, ck__builtin_model_begin, size, CK_BUILTIN_SPEC, err);
}

int ck_builtin_train_size(void) {
    ck_checkpoint ck;
    ck_err        err  = {{0}};
    int           size = 512;
    if (ck_builtin_checkpoint(&ck, &err) != CK_OK) return size;
    for (int i = 0; i < ck.n_meta; i++)
        if (!strcmp(ck.meta[i].key, "train_size")) size = atoi(ck.meta[i].value);
    ck_checkpoint_close(&ck);
    return size >= 32 && size % 32 == 0 ? size : 512;
}
