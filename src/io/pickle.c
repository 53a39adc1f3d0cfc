/* Safe pickle interpreter for torch.save's data.pkl (see pickle.h for the contract).
 *
 * Reference: CPython Lib/pickle.py (_Unpickler) and Lib/pickletools.py for opcode semantics;
 * torch/serialization.py (_save persistent_id, _load persistent_load) and torch/_utils.py
 * (_rebuild_tensor_v2) for what the allowed callables receive.
 *
 * Rules kept here: nothing from the file is ever executed or imported; every byte read is bounds-
 * checked; MARK is kept as a separate stack of stack heights (CPython's metastack), so no opcode can
 * pop below the innermost mark; no recursion over the object graph, so cyclic or deep structures built
 * by a hostile file cost nothing.
 */
#include "io/pickle.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK   (1u << 20)
#define MAX_MARKS   (1u << 16)
#define MAX_MEMO    (1u << 20)
#define MAX_STR     (1u << 24)
#define MAX_OBJECTS (1u << 21)
#define MAX_GLOBAL_LINE 256
#define CHUNK_OBJS  256

struct ck_pk_chunk {
    ck_pk_chunk *next;
    size_t       used;
    ck_pk_obj    objs[CHUNK_OBJS];
};

enum {
    G_ORDERED_DICT,
    G_REBUILD_TENSOR,
    G_REBUILD_PARAM,
    G_REBUILD_PARAM_STATE,
    G_STORAGE
};

static const struct {
    const char *module, *name;
    int         kind;
    ck_dtype    dtype;
} k_globals[] = {
    {"collections", "OrderedDict", G_ORDERED_DICT, CK_DTYPE_F32},
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR, CK_DTYPE_F32},
    {"torch._utils", "_rebuild_parameter", G_REBUILD_PARAM, CK_DTYPE_F32},
    {"torch._utils", "_rebuild_parameter_with_state", G_REBUILD_PARAM_STATE, CK_DTYPE_F32},
    {"torch", "FloatStorage", G_STORAGE, CK_DTYPE_F32},
    {"torch", "HalfStorage", G_STORAGE, CK_DTYPE_F16},
    {"torch", "BFloat16Storage", G_STORAGE, CK_DTYPE_BF16},
    {"torch", "LongStorage", G_STORAGE, CK_DTYPE_I64},
    {"torch", "DoubleStorage", G_STORAGE, CK_DTYPE_F64},
    {"torch", "IntStorage", G_STORAGE, CK_DTYPE_I32},
    {"torch", "ByteStorage", G_STORAGE, CK_DTYPE_U8},
};
#define N_GLOBALS ((int)(sizeof k_globals / sizeof k_globals[0]))

typedef struct vm {
    const uint8_t *buf;
    size_t         size, pos, op_at; /* op_at: offset of the opcode being run, for messages */
    const char    *label;
    ck_err        *err;
    ck_pickle     *pk;
    ck_pk_obj    **stack;
    size_t         sp, stack_cap;
    size_t        *marks;
    size_t         n_marks, marks_cap;
    ck_pk_obj    **memo;
    size_t         memo_cap, memo_len; /* memo_len: distinct keys set, the index MEMOIZE uses */
} vm;

static ck_status fail(vm *v, ck_status st, const char *fmt, ...) CK_PRINTF(3, 4);
static ck_status fail(vm *v, ck_status st, const char *fmt, ...) {
    char    msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ck__fail(v->err, st, "%s: %s", v->label, msg);
}
#define FMT(...) fail(v, CK_STATUS_EFORMAT, __VA_ARGS__)
#define OOM()    fail(v, CK_STATUS_EOOM, "out of memory at pickle offset %zu", v->op_at)

const char *ck_pk_type_name(ck_pk_type t) {
    static const char *names[] = {"None", "bool",   "int",    "float",   "str",   "tuple",
                                  "list", "dict",   "global", "storage", "tensor"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static ck_status new_obj(vm *v, ck_pk_type t, ck_pk_obj **out) {
    ck_pickle *pk = v->pk;
    if (pk->n_objects >= MAX_OBJECTS) return FMT("pickle builds more than %u objects", MAX_OBJECTS);
    if (!pk->chunks || pk->chunks->used == CHUNK_OBJS) {
        ck_pk_chunk *c = malloc(sizeof *c);
        if (!c) return OOM();
        c->next    = pk->chunks;
        c->used    = 0;
        pk->chunks = c;
    }
    ck_pk_obj *o = &pk->chunks->objs[pk->chunks->used++];
    memset(o, 0, sizeof *o);
    o->type = t;
    pk->n_objects++;
    *out = o;
    return CK_OK;
}

static ck_status seq_add(vm *v, ck_pk_obj *seq, ck_pk_obj *item) {
    if (seq->u.seq.n == seq->u.seq.cap) {
        size_t      cap   = seq->u.seq.cap ? seq->u.seq.cap * 2 : 4;
        ck_pk_obj **items = realloc(seq->u.seq.items, cap * sizeof *items);
        if (!items) return OOM();
        seq->u.seq.items = items;
        seq->u.seq.cap   = cap;
    }
    seq->u.seq.items[seq->u.seq.n++] = item;
    return CK_OK;
}

static ck_status push(vm *v, ck_pk_obj *o) {
    if (v->sp == v->stack_cap) {
        if (v->stack_cap >= MAX_STACK) return FMT("pickle stack deeper than %u at offset %zu", MAX_STACK, v->op_at);
        size_t      cap = v->stack_cap ? v->stack_cap * 2 : 64;
        ck_pk_obj **s   = realloc(v->stack, cap * sizeof *s);
        if (!s) return OOM();
        v->stack     = s;
        v->stack_cap = cap;
    }
    v->stack[v->sp++] = o;
    return CK_OK;
}

static ck_status push_new(vm *v, ck_pk_type t, ck_pk_obj **out) {
    ck_pk_obj *o = NULL;
    ck_status  st = new_obj(v, t, &o);
    if (st == CK_OK) st = push(v, o);
    if (out) *out = o;
    return st;
}

/* Height of the innermost MARK: nothing at or below it belongs to the current frame. */
static size_t frame_base(const vm *v) { return v->n_marks ? v->marks[v->n_marks - 1] : 0; }

static ck_status pop(vm *v, ck_pk_obj **o) {
    if (v->sp <= frame_base(v)) return FMT("pickle stack underflow at offset %zu", v->op_at);
    *o = v->stack[--v->sp];
    return CK_OK;
}

static ck_status top(vm *v, ck_pk_obj **o) {
    if (v->sp <= frame_base(v)) return FMT("pickle stack underflow at offset %zu", v->op_at);
    *o = v->stack[v->sp - 1];
    return CK_OK;
}

/* Removes the innermost MARK; the items above it are stack[*base .. sp). */
static ck_status pop_mark(vm *v, size_t *base) {
    if (!v->n_marks) return FMT("pickle opcode at offset %zu needs a MARK", v->op_at);
    *base = v->marks[--v->n_marks];
    return CK_OK;
}

static ck_status need(vm *v, size_t n) {
    if (v->size - v->pos < n)
        return FMT("truncated: pickle opcode 0x%02x at offset %zu needs %zu bytes", v->buf[v->op_at], v->op_at, n);
    return CK_OK;
}

static uint64_t rd_le(const uint8_t *p, int n) {
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--) x = (x << 8) | p[i];
    return x;
}

static ck_status make_tuple(vm *v, size_t base) {
    ck_pk_obj *t = NULL;
    ck_status  st = new_obj(v, CK_PK_TUPLE, &t);
    for (size_t i = base; st == CK_OK && i < v->sp; i++) st = seq_add(v, t, v->stack[i]);
    if (st != CK_OK) return st;
    v->sp = base;
    return push(v, t);
}

static ck_status memo_put(vm *v, uint64_t idx) {
    ck_pk_obj *o = NULL;
    ck_status  st = top(v, &o);
    if (st != CK_OK) return st;
    if (idx >= MAX_MEMO) return FMT("pickle memo index %llu too large at offset %zu", (unsigned long long)idx, v->op_at);
    if (idx >= v->memo_cap) {
        size_t cap = v->memo_cap ? v->memo_cap : 64;
        while (cap <= idx) cap *= 2;
        ck_pk_obj **m = realloc(v->memo, cap * sizeof *m);
        if (!m) return OOM();
        memset(m + v->memo_cap, 0, (cap - v->memo_cap) * sizeof *m);
        v->memo     = m;
        v->memo_cap = cap;
    }
    if (!v->memo[idx]) v->memo_len++;
    v->memo[idx] = o;
    return CK_OK;
}

static ck_status memo_get(vm *v, uint64_t idx) {
    if (idx >= v->memo_cap || !v->memo[idx])
        return FMT("pickle memo key %llu missing at offset %zu", (unsigned long long)idx, v->op_at);
    return push(v, v->memo[idx]);
}

static ck_status push_str(vm *v, uint64_t len) {
    if (len > MAX_STR) return FMT("pickle string of %llu bytes at offset %zu is too long", (unsigned long long)len, v->op_at);
    ck_status st = need(v, (size_t)len);
    if (st != CK_OK) return st;
    ck_pk_obj *o = NULL;
    if ((st = push_new(v, CK_PK_STR, &o)) != CK_OK) return st;
    o->u.str.s   = (const char *)v->buf + v->pos;
    o->u.str.len = (size_t)len;
    v->pos += (size_t)len;
    return CK_OK;
}

static ck_status push_int(vm *v, int64_t x) {
    ck_pk_obj *o = NULL;
    ck_status  st = push_new(v, CK_PK_INT, &o);
    if (st == CK_OK) o->u.i = x;
    return st;
}

static ck_status push_global(vm *v, const char *mod, size_t mod_len, const char *name, size_t name_len) {
    for (int g = 0; g < N_GLOBALS; g++) {
        if (strlen(k_globals[g].module) == mod_len && memcmp(k_globals[g].module, mod, mod_len) == 0 &&
            strlen(k_globals[g].name) == name_len && memcmp(k_globals[g].name, name, name_len) == 0) {
            ck_pk_obj *o = NULL;
            ck_status  st = push_new(v, CK_PK_GLOBAL, &o);
            if (st == CK_OK) o->u.global = g;
            return st;
        }
    }
    int ml = mod_len > 100 ? 100 : (int)mod_len, nl = name_len > 100 ? 100 : (int)name_len;
    return FMT("unsupported object %.*s.%.*s in pickle (offset %zu); only tensors and containers are allowed", ml,
               mod, nl, name, v->op_at);
}

/* One '\n'-terminated line of a GLOBAL opcode. */
static ck_status read_line(vm *v, const char **s, size_t *len) {
    size_t         avail = v->size - v->pos;
    size_t         lim   = avail < MAX_GLOBAL_LINE ? avail : MAX_GLOBAL_LINE;
    const uint8_t *p     = v->buf + v->pos;
    const uint8_t *nl    = memchr(p, '\n', lim);
    if (!nl) return FMT("truncated or overlong GLOBAL at pickle offset %zu", v->op_at);
    *s   = (const char *)p;
    *len = (size_t)(nl - p);
    v->pos += *len + 1;
    return CK_OK;
}

static int is_int(const ck_pk_obj *o) { return o->type == CK_PK_INT || o->type == CK_PK_BOOL; }

/* ('storage', <storage class>, key, location, numel) -> STORAGE */
static ck_status persistent_load(vm *v, ck_pk_obj *pid) {
    const ck_pk_obj *const *it = pid->type == CK_PK_TUPLE ? (const ck_pk_obj *const *)pid->u.seq.items : NULL;
    if (!it || pid->u.seq.n != 5 || it[0]->type != CK_PK_STR || it[0]->u.str.len != 7 ||
        memcmp(it[0]->u.str.s, "storage", 7) != 0 || it[1]->type != CK_PK_GLOBAL ||
        k_globals[it[1]->u.global].kind != G_STORAGE || it[2]->type != CK_PK_STR || !is_int(it[4]) ||
        it[4]->u.i < 0)
        return FMT("unsupported persistent id at pickle offset %zu (expected ('storage', <type>, key, location, numel))",
                   v->op_at);
    ck_pk_obj *o = NULL;
    ck_status  st = push_new(v, CK_PK_STORAGE, &o);
    if (st != CK_OK) return st;
    ck_pk_tensor *t = calloc(1, sizeof *t);
    if (!t) return OOM();
    o->u.tensor      = t;
    t->dtype         = k_globals[it[1]->u.global].dtype;
    t->key           = it[2]->u.str.s;
    t->key_len       = it[2]->u.str.len;
    t->storage_numel = it[4]->u.i;
    return CK_OK;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]) */
static ck_status rebuild_tensor(vm *v, const ck_pk_obj *args) {
    const ck_pk_obj *const *a = (const ck_pk_obj *const *)args->u.seq.items;
    size_t                  n = args->u.seq.n;
    if ((n != 6 && n != 7) || a[0]->type != CK_PK_STORAGE || !is_int(a[1]) || a[2]->type != CK_PK_TUPLE ||
        a[3]->type != CK_PK_TUPLE)
        return FMT("malformed _rebuild_tensor_v2 arguments at pickle offset %zu", v->op_at);
    const ck_pk_obj *size = a[2], *stride = a[3];
    if (size->u.seq.n > CK_PK_MAX_DIMS || size->u.seq.n != stride->u.seq.n)
        return FMT("tensor at pickle offset %zu has %zu dims and %zu strides (at most %d dims supported)", v->op_at,
                   size->u.seq.n, stride->u.seq.n, CK_PK_MAX_DIMS);
    if (a[1]->u.i < 0) return FMT("negative storage offset at pickle offset %zu", v->op_at);
    ck_pk_obj *o = NULL;
    ck_status  st = push_new(v, CK_PK_TENSOR, &o);
    if (st != CK_OK) return st;
    ck_pk_tensor *t = malloc(sizeof *t);
    if (!t) return OOM();
    *t          = *a[0]->u.tensor;
    o->u.tensor = t;
    t->offset   = a[1]->u.i;
    t->ndim     = (int)size->u.seq.n;
    for (int d = 0; d < t->ndim; d++) {
        const ck_pk_obj *s = size->u.seq.items[d], *r = stride->u.seq.items[d];
        if (!is_int(s) || !is_int(r) || s->u.i < 0)
            return FMT("bad tensor size or stride at pickle offset %zu", v->op_at);
        t->shape[d]  = s->u.i;
        t->stride[d] = r->u.i;
    }
    return CK_OK;
}

static ck_status reduce(vm *v, const ck_pk_obj *fn, const ck_pk_obj *args) {
    if (fn->type != CK_PK_GLOBAL || args->type != CK_PK_TUPLE)
        return FMT("REDUCE of %s with %s at pickle offset %zu is not supported", ck_pk_type_name(fn->type),
                   ck_pk_type_name(args->type), v->op_at);
    int    kind = k_globals[fn->u.global].kind;
    size_t n    = args->u.seq.n;
    switch (kind) {
    case G_ORDERED_DICT:
        if (n != 0) return FMT("OrderedDict with arguments at pickle offset %zu is not supported", v->op_at);
        return push_new(v, CK_PK_DICT, NULL);
    case G_REBUILD_TENSOR: return rebuild_tensor(v, args);
    case G_REBUILD_PARAM:
    case G_REBUILD_PARAM_STATE:
        if (n != (kind == G_REBUILD_PARAM ? 3u : 4u) || args->u.seq.items[0]->type != CK_PK_TENSOR)
            return FMT("malformed %s arguments at pickle offset %zu", k_globals[fn->u.global].name, v->op_at);
        return push(v, args->u.seq.items[0]);
    default:
        return FMT("calling %s.%s at pickle offset %zu is not supported", k_globals[fn->u.global].module,
                   k_globals[fn->u.global].name, v->op_at);
    }
}

static ck_status step(vm *v, int *done) {
    ck_status  st;
    ck_pk_obj *a = NULL, *b = NULL, *c = NULL;
    size_t     base = 0;
    if (v->pos >= v->size) return FMT("truncated: pickle ends at offset %zu without STOP", v->pos);
    v->op_at   = v->pos;
    uint8_t op = v->buf[v->pos++];
    switch (op) {
    case 0x80: /* PROTO */
        if ((st = need(v, 1)) != CK_OK) return st;
        if (v->buf[v->pos] > 5) return FMT("unsupported pickle protocol %d", v->buf[v->pos]);
        v->pos += 1;
        return CK_OK;
    case 0x95: /* FRAME: a buffering hint only */
        if ((st = need(v, 8)) != CK_OK) return st;
        v->pos += 8;
        return CK_OK;
    case '}': return push_new(v, CK_PK_DICT, NULL);
    case ']': return push_new(v, CK_PK_LIST, NULL);
    case ')': return push_new(v, CK_PK_TUPLE, NULL);
    case 'N': return push_new(v, CK_PK_NONE, NULL);
    case 0x88: /* NEWTRUE */
    case 0x89: /* NEWFALSE */
        if ((st = push_new(v, CK_PK_BOOL, &a)) == CK_OK) a->u.i = op == 0x88;
        return st;
    case '(': /* MARK */
        if (v->n_marks == v->marks_cap) {
            if (v->marks_cap >= MAX_MARKS) return FMT("more than %u nested MARKs in pickle", MAX_MARKS);
            size_t  cap = v->marks_cap ? v->marks_cap * 2 : 16;
            size_t *m   = realloc(v->marks, cap * sizeof *m);
            if (!m) return OOM();
            v->marks     = m;
            v->marks_cap = cap;
        }
        v->marks[v->n_marks++] = v->sp;
        return CK_OK;
    case 't': /* TUPLE */
        if ((st = pop_mark(v, &base)) != CK_OK) return st;
        return make_tuple(v, base);
    case 0x85: /* TUPLE1 */
    case 0x86: /* TUPLE2 */
    case 0x87: /* TUPLE3 */ {
        size_t k = (size_t)(op - 0x84);
        if (v->sp - frame_base(v) < k) return FMT("pickle stack underflow at offset %zu", v->op_at);
        return make_tuple(v, v->sp - k);
    }
    case 'X': /* BINUNICODE */
        if ((st = need(v, 4)) != CK_OK) return st;
        v->pos += 4;
        return push_str(v, rd_le(v->buf + v->pos - 4, 4));
    case 0x8c: /* SHORT_BINUNICODE */
        if ((st = need(v, 1)) != CK_OK) return st;
        v->pos += 1;
        return push_str(v, v->buf[v->pos - 1]);
    case 0x8d: /* BINUNICODE8 */
        if ((st = need(v, 8)) != CK_OK) return st;
        v->pos += 8;
        return push_str(v, rd_le(v->buf + v->pos - 8, 8));
    case 'J': /* BININT: signed 32-bit */
        if ((st = need(v, 4)) != CK_OK) return st;
        v->pos += 4;
        return push_int(v, (int32_t)(uint32_t)rd_le(v->buf + v->pos - 4, 4));
    case 'K': /* BININT1 */
        if ((st = need(v, 1)) != CK_OK) return st;
        v->pos += 1;
        return push_int(v, v->buf[v->pos - 1]);
    case 'M': /* BININT2 */
        if ((st = need(v, 2)) != CK_OK) return st;
        v->pos += 2;
        return push_int(v, (int64_t)rd_le(v->buf + v->pos - 2, 2));
    case 0x8a: /* LONG1 */
    case 0x8b: /* LONG4 */ {
        int lw = op == 0x8a ? 1 : 4;
        if ((st = need(v, (size_t)lw)) != CK_OK) return st;
        uint64_t n = rd_le(v->buf + v->pos, lw);
        v->pos += (size_t)lw;
        if (n > 8) return FMT("pickle integer of %llu bytes at offset %zu is too large", (unsigned long long)n, v->op_at);
        if ((st = need(v, (size_t)n)) != CK_OK) return st;
        uint64_t x = rd_le(v->buf + v->pos, (int)n);
        if (n > 0 && n < 8 && (v->buf[v->pos + n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * n); /* sign-extend */
        v->pos += (size_t)n;
        int64_t sx;
        memcpy(&sx, &x, sizeof sx); /* two's complement reinterpretation without implementation-defined casts */
        return push_int(v, sx);
    }
    case 'G': { /* BINFLOAT: big-endian IEEE double */
        if ((st = need(v, 8)) != CK_OK) return st;
        uint64_t x = 0;
        for (int i = 0; i < 8; i++) x = (x << 8) | v->buf[v->pos + (size_t)i];
        v->pos += 8;
        if ((st = push_new(v, CK_PK_FLOAT, &a)) == CK_OK) memcpy(&a->u.f, &x, sizeof x);
        return st;
    }
    case 'c': { /* GLOBAL "module\nname\n" */
        const char *mod = NULL, *name = NULL;
        size_t      ml = 0, nl = 0;
        if ((st = read_line(v, &mod, &ml)) != CK_OK || (st = read_line(v, &name, &nl)) != CK_OK) return st;
        return push_global(v, mod, ml, name, nl);
    }
    case 0x93: /* STACK_GLOBAL */
        if ((st = pop(v, &b)) != CK_OK || (st = pop(v, &a)) != CK_OK) return st;
        if (a->type != CK_PK_STR || b->type != CK_PK_STR)
            return FMT("STACK_GLOBAL on non-strings at pickle offset %zu", v->op_at);
        return push_global(v, a->u.str.s, a->u.str.len, b->u.str.s, b->u.str.len);
    case 'q': /* BINPUT */
        if ((st = need(v, 1)) != CK_OK) return st;
        v->pos += 1;
        return memo_put(v, v->buf[v->pos - 1]);
    case 'r': /* LONG_BINPUT */
        if ((st = need(v, 4)) != CK_OK) return st;
        v->pos += 4;
        return memo_put(v, rd_le(v->buf + v->pos - 4, 4));
    case 0x94: /* MEMOIZE */ return memo_put(v, v->memo_len);
    case 'h': /* BINGET */
        if ((st = need(v, 1)) != CK_OK) return st;
        v->pos += 1;
        return memo_get(v, v->buf[v->pos - 1]);
    case 'j': /* LONG_BINGET */
        if ((st = need(v, 4)) != CK_OK) return st;
        v->pos += 4;
        return memo_get(v, rd_le(v->buf + v->pos - 4, 4));
    case 's': /* SETITEM */
        if ((st = pop(v, &c)) != CK_OK || (st = pop(v, &b)) != CK_OK || (st = top(v, &a)) != CK_OK) return st;
        if (a->type != CK_PK_DICT) return FMT("SETITEM on %s at pickle offset %zu", ck_pk_type_name(a->type), v->op_at);
        if ((st = seq_add(v, a, b)) != CK_OK) return st;
        return seq_add(v, a, c);
    case 'u': /* SETITEMS */
        if ((st = pop_mark(v, &base)) != CK_OK) return st;
        if ((v->sp - base) % 2) return FMT("SETITEMS with an odd number of items at pickle offset %zu", v->op_at);
        {
            size_t hi = v->sp;
            v->sp     = base;
            if ((st = top(v, &a)) != CK_OK) return st;
            if (a->type != CK_PK_DICT)
                return FMT("SETITEMS on %s at pickle offset %zu", ck_pk_type_name(a->type), v->op_at);
            for (size_t i = base; i < hi; i++)
                if ((st = seq_add(v, a, v->stack[i])) != CK_OK) return st;
        }
        return CK_OK;
    case 'a': /* APPEND */
        if ((st = pop(v, &b)) != CK_OK || (st = top(v, &a)) != CK_OK) return st;
        if (a->type != CK_PK_LIST) return FMT("APPEND on %s at pickle offset %zu", ck_pk_type_name(a->type), v->op_at);
        return seq_add(v, a, b);
    case 'e': /* APPENDS */
        if ((st = pop_mark(v, &base)) != CK_OK) return st;
        {
            size_t hi = v->sp;
            v->sp     = base;
            if ((st = top(v, &a)) != CK_OK) return st;
            if (a->type != CK_PK_LIST)
                return FMT("APPENDS on %s at pickle offset %zu", ck_pk_type_name(a->type), v->op_at);
            for (size_t i = base; i < hi; i++)
                if ((st = seq_add(v, a, v->stack[i])) != CK_OK) return st;
        }
        return CK_OK;
    case 'R': /* REDUCE */
        if ((st = pop(v, &b)) != CK_OK || (st = pop(v, &a)) != CK_OK) return st;
        return reduce(v, a, b);
    case 0x81: /* NEWOBJ: only OrderedDict.__new__(OrderedDict) */
        if ((st = pop(v, &b)) != CK_OK || (st = pop(v, &a)) != CK_OK) return st;
        if (a->type != CK_PK_GLOBAL || k_globals[a->u.global].kind != G_ORDERED_DICT || b->type != CK_PK_TUPLE ||
            b->u.seq.n != 0)
            return FMT("NEWOBJ at pickle offset %zu is only supported for OrderedDict", v->op_at);
        return push_new(v, CK_PK_DICT, NULL);
    case 'b': /* BUILD: state of an OrderedDict (state_dict()._metadata) or a tensor is not needed */
        if ((st = pop(v, &b)) != CK_OK || (st = top(v, &a)) != CK_OK) return st;
        if (a->type != CK_PK_DICT && a->type != CK_PK_TENSOR)
            return FMT("BUILD on %s at pickle offset %zu is not supported", ck_pk_type_name(a->type), v->op_at);
        return CK_OK;
    case 'Q': /* BINPERSID */
        if ((st = pop(v, &a)) != CK_OK) return st;
        return persistent_load(v, a);
    case '0': /* POP: CPython drops the innermost mark when the frame is empty */
        if (v->sp > frame_base(v)) {
            v->sp--;
            return CK_OK;
        }
        return pop_mark(v, &base);
    case '1': /* POP_MARK */
        if ((st = pop_mark(v, &base)) != CK_OK) return st;
        v->sp = base;
        return CK_OK;
    case '.': /* STOP */
        if ((st = pop(v, &a)) != CK_OK) return st;
        v->pk->root = a;
        *done       = 1;
        return CK_OK;
    default: return FMT("bad pickle opcode 0x%02x at offset %zu", op, v->op_at);
    }
}

ck_status ck_pickle_load(ck_pickle *pk, const uint8_t *buf, size_t size, const char *label, ck_err *err) {
    memset(pk, 0, sizeof *pk);
    vm v    = {0};
    v.buf   = buf;
    v.size  = size;
    v.label = label;
    v.err   = err;
    v.pk    = pk;
    ck_status st   = CK_OK;
    int       done = 0;
    while (st == CK_OK && !done) st = step(&v, &done);
    free(v.stack);
    free(v.marks);
    free(v.memo);
    if (st != CK_OK) ck_pickle_free(pk);
    return st;
}

void ck_pickle_free(ck_pickle *pk) {
    ck_pk_chunk *c = pk->chunks;
    while (c) {
        for (size_t i = 0; i < c->used; i++) {
            ck_pk_obj *o = &c->objs[i];
            if (o->type == CK_PK_TUPLE || o->type == CK_PK_LIST || o->type == CK_PK_DICT) free(o->u.seq.items);
            if (o->type == CK_PK_STORAGE || o->type == CK_PK_TENSOR) free(o->u.tensor);
        }
        ck_pk_chunk *next = c->next;
        free(c);
        c = next;
    }
    memset(pk, 0, sizeof *pk);
}

const ck_pk_obj *ck_pk_dict_get(const ck_pk_obj *dict, const char *key) {
    if (!dict || dict->type != CK_PK_DICT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = dict->u.seq.n; i >= 2; i -= 2) {
        const ck_pk_obj *k = dict->u.seq.items[i - 2];
        if (k->type == CK_PK_STR && k->u.str.len == kl && memcmp(k->u.str.s, key, kl) == 0) return dict->u.seq.items[i - 1];
    }
    return NULL;
}
