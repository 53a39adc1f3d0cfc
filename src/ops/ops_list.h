/* The one list of ops. Backends fill one slot per entry; tests and benchmarks iterate it. */
#ifndef CK_OPS_LIST_H
#define CK_OPS_LIST_H

#define CK_OPS(X)       \
    X(linear)           \
    X(layernorm)        \
    X(conv2d)           \
    X(groupnorm)        \
    X(attention)        \
    X(attn_gather)      \
    X(attn_scatter)     \
    X(maxpool2x2)       \
    X(add)              \
    X(resize_bilinear)  \
    X(resize_sum)       \
    X(activation)       \
    X(sigmoid_add)      \
    X(concat_sigmoid)   \
    X(convert)          \
    X(copy_rect)        \
    X(zero)

#endif
