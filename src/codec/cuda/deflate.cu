/* zlib streams (RFC 1950 + RFC 1951) of independent byte segments, on the device: the deflate step of
 * PXR24 EXR chunks whose transformed bytes are produced on the GPU.
 *
 * Stream format, per segment of n bytes:
 *   - zlib header 0x78 0x01 (deflate, 32 KiB window, "fastest" level; FCHECK makes it a multiple of 31);
 *   - one deflate block per sub-block of 66,048 bytes (256 slices of 258) of the segment (the last one
 *     BFINAL), each with its own dynamic Huffman codes (BTYPE 2), so the sub-blocks are coded in parallel
 *     and adapt locally;
 *   - the Adler-32 of the segment, big-endian.
 * The stream is kept only when it is strictly shorter than the segment (dst_bytes = 0 otherwise, and the
 * caller stores the bytes raw, as PXR24 does).
 *
 * Tokens: literals, and matches at distance 1 only (a run of bytes equal to the previous byte, lengths
 * 3..258). PXR24's planes of high and low bytes of differences are long runs of 0x00 / 0xFF and skewed
 * literal distributions: entropy coding plus runs gets most of what a general LZ77 search would, at a
 * fraction of its cost. Each thread tokenizes a 258-byte slice greedily on its own; the byte before the
 * slice is known, so a run simply continues across slice and block borders (distance 1 reaches back into
 * the previous slice or block, which the window allows), except at a segment's first byte. A run through
 * a whole slice is then one match of the longest length (symbol 285, no extra bits): about 2 bits per
 * 258 bytes of a long zero run.
 *
 * Codes of a block:
 *   - literal/length: Huffman code of the block's symbol counts (end-of-block counted once), lengths
 *     limited to 15 by the JPEG count adjustment (ITU T.81 K.3, keeps the Kraft sum at exactly 1), the
 *     lengths handed out by frequency rank, canonical codes (RFC 1951 3.2.2) bit-reversed for LSB-first
 *     packing;
 *   - distance: symbols 0 and 1 both of length 1, a complete code (some inflaters refuse incomplete ones
 *     other than a single length-1 code); every match uses symbol 0 (distance 1), one bit;
 *   - code lengths: run-length coded with symbols 16/17/18, their code limited to 7 bits.
 *   An alphabet with a single used symbol gets a second length-1 code, so that every code is complete.
 *
 * Kernels, in launch order on the backend stream (both grids of sub-blocks are n · 16 blocks of 256
 * threads, one per possible sub-block of a segment of at most 1 MiB; those past a segment's end return
 * at once):
 *   1. dfl_analyze   per sub-block: zero the output words it owns; stage its bytes in shared memory,
 *                    thread t's slice in a 65-word row (odd, so the threads' sequential reads hit
 *                    distinct banks); tokenize → per-warp histograms, Adler-32 partial sums; build the
 *                    literal/length code and the code-length code, write the block header's bits; cost
 *                    of each slice's tokens and their exclusive scan. Results go to the sub-block's slot.
 *   2. dfl_place     one warp per segment: bit offsets of the sub-blocks (scan), stream length, the
 *                    keep / raw decision (dst_bytes), Adler-32 combined from the partials; writes the zlib
 *                    header and trailer bytes of kept streams.
 *   3. dfl_emit      per sub-block of a kept stream: stage and tokenize again, each thread writes its
 *                    tokens' bits at its offset — words wholly inside its range with plain stores, its
 *                    first and last word (shared with neighbours) with atomicOr onto the words zeroed in
 *                    step 1; warp 0 ORs the block header in.
 *
 * Output addressing: dst + seg_off[i] has any byte alignment. Stream bit b is bit 8·r + b of the 32-bit
 * words that start at that address rounded down to 4 (r = address mod 4; little-endian, so bits fill
 * bytes LSB first as deflate packs them). Step 1 zeroes only words lying wholly inside the segment. The
 * first word sticks out in front when r > 0: it holds header bytes and, when r = 1, the first deflate
 * byte, which step 3 stores as a byte. Deflate bits end at least 5 bytes before the segment's end
 * (4-byte trailer, stream strictly shorter), so no other word they touch sticks out. Header and trailer
 * bytes are byte stores (step 2) between the zeroing and the ORs, which leave them intact. dst must not
 * overlap src (step 1 zeroes dst while step 3 still reads src).
 *
 * Scratch: one slot per sub-block (struct dfl_slot, 2,592 bytes): sub-block k of segment i uses slot
 * floor((seg_off[i] − seg_off[0]) / 66048) + i + k. These never collide (a segment of L bytes starting at
 * o gets at least ceil(L / 66048) slots before the next segment's first) and need no prefix sum, so the
 * scratch holds floor(total / 66048) + n + 1 slots, total = seg_off[n] − seg_off[0].
 */
#include "ops/cuda/common.cuh"

enum {
    DFL_THREADS  = 256,                     /* threads per sub-block */
    DFL_WARPS    = DFL_THREADS / 32,
    DFL_MAXMATCH = 258,
    DFL_SLICE    = DFL_MAXMATCH,            /* bytes per thread: a run through a whole slice is one match of
                                               length 258 (symbol 285, no extra bits) */
    DFL_SUB      = DFL_THREADS * DFL_SLICE, /* bytes per deflate block (sub-block): 66,048 */
    DFL_ROW      = (DFL_SLICE + 3) / 4,     /* shared words per slice: 65, odd, so rows start in distinct banks */
    DFL_SUBS     = (CK_DEFLATE_MAX_SEGMENT + DFL_SUB - 1) / DFL_SUB, /* sub-blocks of the largest segment: 16 */
    DFL_NLIT     = 286,                     /* literal/length symbols */
    DFL_NLIT_PAD = 288,
    DFL_NCL      = 19,                      /* code-length symbols */
    DFL_EOB      = 256,
    DFL_HDR_WORDS = 96, /* block header: ≤ 17 + 19·3 + 288·7 + 96·7 bits (run symbols cover ≥ 3 lengths) */
    /* Deepest Huffman leaf: a leaf at depth d needs a total weight ≥ Fibonacci(d + 2), and a block has at
     * most 66,049 symbols, so d ≤ 22. */
    DFL_MAXDEPTH = 32,
    DFL_NONE     = -1, /* "no previous byte" (a segment's first byte) */
};
static const uint32_t DFL_ADLER_MOD = 65521u;
static_assert(DFL_SUBS <= 32, "dfl_place: one lane per sub-block");
static_assert(DFL_ROW % 2 == 1 && DFL_SUB % 4 == 0, "bank-conflict-free rows; sub-blocks start on output words");
static_assert(DFL_SLICE <= DFL_MAXMATCH && DFL_SLICE * 32 < 65536,
              "a slice's run never needs splitting (the splitter is general); 16-bit per-warp counters");

/* What dfl_analyze leaves for dfl_place and dfl_emit about one sub-block. */
typedef struct dfl_slot {
    uint32_t bits;                /* the deflate block's bits: header, tokens, end-of-block */
    uint32_t hbits;               /* header bits */
    uint32_t adler_a;             /* Σ d_j mod 65521 over the sub-block (j = 0 .. m−1) */
    uint32_t adler_b;             /* Σ (m − j) · d_j mod 65521 */
    uint32_t start;               /* bit offset of the block in the segment's deflate data (dfl_place) */
    uint32_t pad_[3];
    uint32_t code[DFL_NLIT_PAD];  /* literal/length codes: bit-reversed code | length << 16 */
    uint32_t hdr[DFL_HDR_WORDS];  /* the header's bits, LSB first, zero past hbits */
    uint32_t toff[DFL_THREADS];   /* bit offset of thread t's tokens within the block (header included) */
} dfl_slot;
static_assert(sizeof(dfl_slot) == 2592 && sizeof(dfl_slot) % 16 == 0, "slot layout");

__host__ __device__ static inline int64_t dfl_slot_index(int64_t rel_off, int i, int k) {
    return rel_off / DFL_SUB + i + k;
}

/* ---- tokens ---- */

__host__ __device__ static inline int dfl_log2(uint32_t v) {
#ifdef __CUDA_ARCH__
    return 31 - __clz(v);
#else
    return 31 - __builtin_clz(v);
#endif
}

/* RFC 1951 3.2.5: length symbol, number of extra bits and their value of a match of length L (3..258). */
__host__ __device__ static inline void dfl_len_sym(int L, int *sym, int *nx, int *xv) {
    if (L == DFL_MAXMATCH) {
        *sym = 285, *nx = 0, *xv = 0;
        return;
    }
    const int l = L - 3;
    if (l < 8) {
        *sym = 257 + l, *nx = 0, *xv = 0;
        return;
    }
    const int nb = dfl_log2((uint32_t)l) - 2; /* 8..255 → 1..5 extra bits, 4 symbols per count */
    *sym = 257 + 4 * nb + (l >> nb), *nx = nb, *xv = l & ((1 << nb) - 1);
}

/* A run of `pend` bytes equal to the byte before them: matches when ≥ 3 (split so that no piece is
 * shorter than 3), else literals. */
template <class V> __host__ __device__ static inline void dfl_flush(V &v, int pend, int c) {
    if (pend >= 3) {
        while (pend > 0) {
            const int L = pend > DFL_MAXMATCH ? (pend - DFL_MAXMATCH < 3 ? pend - 3 : DFL_MAXMATCH) : pend;
            v.match(L);
            pend -= L;
        }
    } else {
        for (; pend > 0; pend--) v.lit(c);
    }
}

/* Greedy tokens of nbytes bytes (packed little-endian in words); `last` is the byte before them or
 * DFL_NONE. A byte equal to its predecessor extends the pending run; any other byte is a literal. */
template <class V> __host__ __device__ static inline void dfl_tokenize(const uint32_t *w, int nbytes, int last, V &v) {
    int pend = 0;
    for (int q = 0; q * 4 < nbytes; q++) {
        uint32_t  x  = w[q];
        const int nb = nbytes - q * 4 < 4 ? nbytes - q * 4 : 4;
        for (int b = 0; b < nb; b++, x >>= 8) {
            const int c = (int)(x & 255u);
            if (c == last) {
                pend++;
            } else {
                if (pend) dfl_flush(v, pend, last), pend = 0;
                v.lit(c);
                last = c;
            }
        }
    }
    if (pend) dfl_flush(v, pend, last);
}

/* Adler-32 partial sums of nbytes bytes: *sa = Σ d_u, *sb = Σ (nbytes − u) · d_u (≤ 258·259/2·255 for
 * a slice: fits 32 bits). */
__host__ __device__ static inline void dfl_adler_slice(const uint32_t *w, int nbytes, uint32_t *sa, uint32_t *sb) {
    uint32_t a = 0, b = 0;
    for (int q = 0; q * 4 < nbytes; q++) {
        uint32_t  x  = w[q];
        const int nb = nbytes - q * 4 < 4 ? nbytes - q * 4 : 4;
        for (int j = 0; j < nb; j++, x >>= 8) a += x & 255u, b += a;
    }
    *sa = a, *sb = b;
}

/* ---- bits ---- */

/* Word sinks of the bit writer: `edge` for a word that other writers share (its first and last),
 * `own` for a word wholly inside this writer's range. */
struct dfl_sink_shared {
    __device__ static void edge(uint32_t *p, uint32_t v) { atomicOr(p, v); }
    __device__ static void own(uint32_t *p, uint32_t v) { *p = v; }
};
/* A buffer written by one thread from bit 0 (the header): every word is its own. */
struct dfl_sink_plain {
    __host__ __device__ static void edge(uint32_t *p, uint32_t v) { *p = v; }
    __host__ __device__ static void own(uint32_t *p, uint32_t v) { *p = v; }
};

/* LSB-first bit writer into 32-bit words starting at an arbitrary bit position; the bits below that
 * position in the first word are written as zeros (an OR leaves them as they are). */
template <class Sink> struct dfl_bitw {
    uint64_t  acc;
    int       nb;
    int       first;
    uint32_t *p;

    __host__ __device__ void init(uint32_t *base, uint32_t bitpos) {
        p = base + (bitpos >> 5), nb = (int)(bitpos & 31u), acc = 0, first = 1;
    }
    /* n ≤ 32 and v < 2^n: nb ≤ 31 before, so acc never holds more than 63 bits */
    __host__ __device__ void put(uint32_t v, int n) {
        acc |= (uint64_t)v << nb;
        nb += n;
        if (nb >= 32) {
            if (first) Sink::edge(p, (uint32_t)acc), first = 0;
            else Sink::own(p, (uint32_t)acc);
            p++, acc >>= 32, nb -= 32;
        }
    }
    __host__ __device__ void finish() {
        if (nb > 0) Sink::edge(p, (uint32_t)acc);
    }
};

/* ---- Huffman codes ---- */

/* Work space of one code construction (the largest alphabet). */
typedef struct dfl_huff_tmp {
    uint16_t sym[DFL_NLIT_PAD];   /* used symbols by rank: ascending frequency, then symbol */
    uint32_t wl[DFL_NLIT_PAD];    /* their frequencies */
    uint32_t iw[DFL_NLIT_PAD];    /* internal nodes' weights, in creation order */
    uint16_t lpar[DFL_NLIT_PAD];  /* parent (internal node) of each leaf, by rank */
    uint16_t ipar[DFL_NLIT_PAD];  /* parent of each internal node */
    uint16_t dep[DFL_NLIT_PAD];   /* depth of each internal node */
    int      bl[DFL_MAXDEPTH + 1]; /* number of codes of each length */
    int      m;                   /* used symbols */
} dfl_huff_tmp;

/* Rank of used symbol s among the used symbols of f, by (frequency, symbol). */
__host__ __device__ static inline int dfl_rank(const uint32_t *f, int nsym, int s) {
    const uint32_t fs = f[s];
    int            r  = 0;
    for (int j = 0; j < nsym; j++) {
        const uint32_t fj = f[j];
        r += fj != 0 && (fj < fs || (fj == fs && j < s));
    }
    return r;
}

/* Code length counts t->bl[1..maxbits] of a Huffman code of the m ≥ 2 leaves t->wl (ascending), limited
 * to maxbits. Huffman's tree by the two-queue method (the leaves sorted, internal nodes created in
 * non-decreasing weight; ties take the leaf), then the JPEG adjustment: while a code is longer than
 * maxbits, two siblings at the deepest level i make room by one of them pairing with a leaf of the
 * longest length j < i − 1 (lengths i, i → i − 1 and j → j + 1, j + 1): the Kraft sum stays 1. */
__host__ __device__ static inline void dfl_tree_counts(dfl_huff_tmp *t, int m, int maxbits) {
    int li = 0, ih = 0;
    for (int k = 0; k < m - 1; k++) { /* internal node k joins the two lightest nodes left */
        uint32_t w = 0;
        for (int c = 0; c < 2; c++) {
            if (li < m && (ih == k || t->wl[li] <= t->iw[ih])) w += t->wl[li], t->lpar[li++] = (uint16_t)k;
            else w += t->iw[ih], t->ipar[ih++] = (uint16_t)k;
        }
        t->iw[k] = w;
    }
    t->dep[m - 2] = 0; /* the root; parents are created after their children */
    for (int k = m - 3; k >= 0; k--) t->dep[k] = (uint16_t)(t->dep[t->ipar[k]] + 1);
    for (int d = 0; d <= DFL_MAXDEPTH; d++) t->bl[d] = 0;
    for (int r = 0; r < m; r++) {
        const int d = t->dep[t->lpar[r]] + 1;
        t->bl[d < DFL_MAXDEPTH ? d : DFL_MAXDEPTH]++;
    }
    for (int i = DFL_MAXDEPTH; i > maxbits; i--)
        while (t->bl[i] > 0) {
            int j = i - 2;
            while (t->bl[j] == 0) j--;
            t->bl[i] -= 2, t->bl[i - 1] += 1, t->bl[j + 1] += 2, t->bl[j] -= 1;
        }
}

/* Length of the code of the symbol of rank r: the rarest symbols get the longest codes. */
__host__ __device__ static inline int dfl_len_of_rank(const int *bl, int maxbits, int r) {
    for (int L = maxbits; L >= 1; L--) {
        if (r < bl[L]) return L;
        r -= bl[L];
    }
    return 0;
}

__host__ __device__ static inline uint32_t dfl_rev(uint32_t c, int n) {
#ifdef __CUDA_ARCH__
    return __brev(c) >> (32 - n);
#else
    uint32_t r = 0;
    for (int i = 0; i < n; i++) r = r << 1 | ((c >> i) & 1u);
    return r;
#endif
}

/* Canonical codes of the lengths (RFC 1951 3.2.2), stored bit-reversed | length << 16. */
__host__ __device__ static inline void dfl_canonical(const uint8_t *len, int nsym, uint32_t *code) {
    int cnt[16];
    for (int b = 0; b < 16; b++) cnt[b] = 0;
    for (int s = 0; s < nsym; s++) cnt[len[s]]++;
    cnt[0] = 0;
    uint32_t next[16], c = 0;
    next[0] = 0;
    for (int b = 1; b < 16; b++) c = (c + (uint32_t)cnt[b - 1]) << 1, next[b] = c;
    for (int s = 0; s < nsym; s++) {
        const int L = len[s];
        code[s]     = L ? dfl_rev(next[L]++, L) | (uint32_t)L << 16 : 0u;
    }
}

/* Code lengths (literal/length then distance, one sequence) as code-length symbols: 18 for 11..138
 * zeros, 17 for 3..10 zeros, 16 for 3..6 repeats of the previous length; extra-bit values in xv.
 * Returns the symbol count (≤ n). */
__host__ __device__ static inline int dfl_cl_rle(const uint8_t *L, int n, uint8_t *sym, uint8_t *xv) {
    int k = 0;
    for (int i = 0; i < n;) {
        const int v = L[i];
        int       r = 1;
        while (i + r < n && L[i + r] == v) r++;
        i += r;
        if (v == 0) {
            while (r >= 11) {
                const int c = r < 138 ? r : 138;
                sym[k] = 18, xv[k++] = (uint8_t)(c - 11), r -= c;
            }
            if (r >= 3) sym[k] = 17, xv[k++] = (uint8_t)(r - 3), r = 0;
            for (; r > 0; r--) sym[k] = 0, xv[k++] = 0;
        } else {
            sym[k] = (uint8_t)v, xv[k++] = 0, r--;
            while (r >= 3) {
                const int c = r < 6 ? r : 6;
                sym[k] = 16, xv[k++] = (uint8_t)(c - 3), r -= c;
            }
            for (; r > 0; r--) sym[k] = (uint8_t)v, xv[k++] = 0;
        }
    }
    return k;
}

/* The dynamic block header (RFC 1951 3.2.7) into out from bit 0; returns its bit count. HDIST is 2. */
__host__ __device__ static inline uint32_t dfl_write_header(uint32_t *out, int bfinal, int hlit, const uint8_t *cl_len,
                                                            const uint32_t *cl_code, const uint8_t *tsym,
                                                            const uint8_t *txv, int ntok) {
    const uint8_t order[DFL_NCL] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    int           hclen          = DFL_NCL;
    while (hclen > 4 && cl_len[order[hclen - 1]] == 0) hclen--;
    dfl_bitw<dfl_sink_plain> w;
    w.init(out, 0);
    w.put((uint32_t)bfinal | 2u << 1, 3); /* BFINAL, BTYPE = 2 */
    w.put((uint32_t)(hlit - 257), 5);
    w.put(2u - 1u, 5);
    w.put((uint32_t)(hclen - 4), 4);
    for (int i = 0; i < hclen; i++) w.put(cl_len[order[i]], 3);
    for (int k = 0; k < ntok; k++) {
        const int      s  = tsym[k];
        const uint32_t e  = cl_code[s];
        const int      n  = (int)(e >> 16);
        const int      nx = s == 16 ? 2 : s == 17 ? 3 : s == 18 ? 7 : 0;
        w.put((e & 0xffffu) | (uint32_t)txv[k] << n, n + nx);
    }
    const uint32_t bits = (uint32_t)(w.p - out) * 32u + (uint32_t)w.nb;
    w.finish();
    return bits;
}

/* ---- token visitors ---- */

/* Per-warp histogram: two 16-bit counters per word (a warp codes ≤ 32 · 258 symbols). */
struct dfl_hist_v {
    uint32_t *h;
    __device__ void count(int s) { atomicAdd(h + (s >> 1), 1u << ((s & 1) << 4)); }
    __device__ void lit(int c) { count(c); }
    __device__ void match(int L) {
        int s, nx, xv;
        dfl_len_sym(L, &s, &nx, &xv);
        count(s);
    }
};

/* Bits of the tokens. */
struct dfl_cost_v {
    const uint8_t *len;
    uint32_t       bits;
    __host__ __device__ void lit(int c) { bits += len[c]; }
    __host__ __device__ void match(int L) {
        int s, nx, xv;
        dfl_len_sym(L, &s, &nx, &xv);
        bits += (uint32_t)(len[s] + nx + 1); /* + the 1-bit distance code */
    }
};

/* Writes the tokens. */
template <class Sink> struct dfl_emit_v {
    const uint32_t *code;
    dfl_bitw<Sink>  w;
    __host__ __device__ void lit(int c) {
        const uint32_t e = code[c];
        w.put(e & 0xffffu, (int)(e >> 16));
    }
    __host__ __device__ void match(int L) {
        int s, nx, xv;
        dfl_len_sym(L, &s, &nx, &xv);
        const uint32_t e = code[s];
        const int      n = (int)(e >> 16);
        w.put((e & 0xffffu) | (uint32_t)xv << n, n + nx + 1); /* distance symbol 0 is the code "0" */
    }
};

/* ---- block-level pieces ---- */

/* Segment geometry of (segment, sub-block) = (blockIdx.x / 16, blockIdx.x % 16). */
struct dfl_where {
    int64_t o;    /* seg_off[i] */
    int64_t rel;  /* seg_off[i] − seg_off[0] */
    int64_t len;  /* segment bytes */
    int64_t p0;   /* sub-block's first byte within the segment */
    int     i, k;
};

__device__ static inline dfl_where dfl_locate(const int64_t *seg_off) {
    dfl_where w;
    w.i   = (int)(blockIdx.x / DFL_SUBS);
    w.k   = (int)(blockIdx.x % DFL_SUBS);
    w.o   = seg_off[w.i];
    w.rel = w.o - seg_off[0];
    w.len = seg_off[w.i + 1] - w.o;
    w.p0  = (int64_t)w.k * DFL_SUB;
    return w;
}

/* The m bytes at s into shared memory: slice t's bytes 4q..4q+3 in word t · 65 + q. Reads aligned words
 * (only those holding a byte of the range) and shifts them into place; rows overlap by the 2 bytes
 * that follow a slice. */
__device__ static inline void dfl_stage(uint32_t *s_data, const uint8_t *s, int m) {
    const uintptr_t end = (uintptr_t)s + (uintptr_t)m - 1; /* last byte */
    const int       nw  = (m + DFL_SLICE - 1) / DFL_SLICE * DFL_ROW;
    for (int g = threadIdx.x; g < nw; g += DFL_THREADS) {
        const int t = g / DFL_ROW, off = t * DFL_SLICE + (g - t * DFL_ROW) * 4;
        if (off >= m) continue;
        const uintptr_t a  = (uintptr_t)s + (uintptr_t)off;
        const uint32_t *aw = (const uint32_t *)(a & ~(uintptr_t)3);
        const int       sh = (int)(a & 3u) * 8;
        uint32_t        x  = __ldg(aw);
        if (sh) x = __funnelshift_r(x, (uintptr_t)(aw + 1) <= end ? __ldg(aw + 1) : 0u, sh);
        s_data[g] = x;
    }
}

/* This thread's slice: its byte count and the byte before it (DFL_NONE at a segment's start). */
__device__ static inline int dfl_slice(const uint32_t *s_data, int m, int prev_of_block, int *last) {
    const int t0 = threadIdx.x * DFL_SLICE;
    const int nb = m - t0 < 0 ? 0 : (m - t0 > DFL_SLICE ? DFL_SLICE : m - t0);
    /* a non-empty slice after the first follows a full one */
    *last = threadIdx.x == 0 ? prev_of_block
                             : (nb > 0 ? (int)(s_data[(threadIdx.x - 1) * DFL_ROW + (DFL_SLICE - 1) / 4] >>
                                               (8 * ((DFL_SLICE - 1) % 4))) & 255
                                       : 0);
    return nb;
}

/* Used-symbol ranks in parallel, the tree on thread 0, lengths per rank in parallel. len[s] for s < nsym. */
__device__ static void dfl_huff_lengths(const uint32_t *f, int nsym, int maxbits, uint8_t *len, dfl_huff_tmp *t) {
    if (threadIdx.x == 0) t->m = 0;
    __syncthreads();
    int mine = 0;
    for (int s = threadIdx.x; s < nsym; s += DFL_THREADS) {
        len[s] = 0;
        if (f[s]) {
            const int r = dfl_rank(f, nsym, s);
            t->sym[r] = (uint16_t)s, t->wl[r] = f[s], mine++;
        }
    }
    if (mine) atomicAdd(&t->m, mine);
    __syncthreads();
    const int m = t->m;
    if (threadIdx.x == 0) {
        if (m == 1) len[t->sym[0]] = 1, len[t->sym[0] ? 0 : 1] = 1; /* a second code keeps it complete */
        else if (m >= 2) dfl_tree_counts(t, m, maxbits);
    }
    __syncthreads();
    if (m >= 2)
        for (int r = threadIdx.x; r < m; r += DFL_THREADS) len[t->sym[r]] = (uint8_t)dfl_len_of_rank(t->bl, maxbits, r);
    __syncthreads();
}

/* Exclusive sum over the block; *total gets the sum. */
__device__ static inline uint32_t dfl_block_scan(uint32_t v, uint32_t *s_warp, uint32_t *total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t  inc  = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, inc, d);
        if (lane >= d) inc += y;
    }
    if (lane == 31) s_warp[warp] = inc;
    __syncthreads();
    uint32_t before = 0, all = 0;
    for (int w = 0; w < DFL_WARPS; w++) {
        before += w < warp ? s_warp[w] : 0u;
        all += s_warp[w];
    }
    *total = all;
    return before + inc - v;
}

/* ---- 1. analysis ---- */

struct dfl_smem_a {
    union {
        uint32_t     hist[DFL_WARPS][DFL_NLIT_PAD / 2]; /* pass 1 */
        dfl_huff_tmp tmp;                               /* code construction (after the merge) */
    } u;
    uint32_t freq[DFL_NLIT_PAD];
    uint8_t  len[DFL_NLIT_PAD];
    uint8_t  seq[DFL_NLIT_PAD + 2];  /* HLIT literal/length lengths, then the 2 distance lengths */
    uint8_t  tsym[DFL_NLIT_PAD + 2]; /* their code-length symbols */
    uint8_t  txv[DFL_NLIT_PAD + 2];
    uint32_t clfreq[DFL_NCL];
    uint8_t  cllen[DFL_NCL];
    uint32_t clcode[DFL_NCL];
    uint32_t red_a[DFL_WARPS];
    uint64_t red_b[DFL_WARPS];
    uint32_t scan[DFL_WARPS];
    int      prev, ntok, hlit;
    uint32_t hbits;
};

__global__ void __launch_bounds__(DFL_THREADS) dfl_analyze(const uint8_t *__restrict__ src, const int64_t *__restrict__ seg_off,
                                                           uint8_t *dst, dfl_slot *__restrict__ slots) {
    extern __shared__ uint32_t s_data[]; /* DFL_THREADS rows of DFL_ROW words */
    __shared__ dfl_smem_a      S;
    const dfl_where            W = dfl_locate(seg_off);
    if (W.len <= W.p0) return;
    const int  m      = (int)(W.len - W.p0 < DFL_SUB ? W.len - W.p0 : DFL_SUB);
    const int  bfinal = W.p0 + m >= W.len;
    dfl_slot  *slot   = slots + dfl_slot_index(W.rel, W.i, W.k);
    const int  tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    /* zero the output words wholly inside the segment among words [k, k + 1) · DFL_SUB / 4 */
    {
        const uintptr_t ua   = (uintptr_t)(dst + W.o);
        const int       r    = (int)(ua & 3u);
        uint32_t       *wb   = (uint32_t *)(ua - (uintptr_t)r);
        const int64_t   wend = ((int64_t)r + W.len) >> 2;
        int64_t         lo = (int64_t)W.k * (DFL_SUB / 4), hi = lo + DFL_SUB / 4;
        if (lo < (r ? 1 : 0)) lo = r ? 1 : 0;
        if (hi > wend) hi = wend;
        for (int64_t w = lo + tid; w < hi; w += DFL_THREADS) wb[w] = 0u;
    }

    dfl_stage(s_data, src + W.o + W.p0, m);
    if (tid == 0) S.prev = W.p0 > 0 ? (int)src[W.o + W.p0 - 1] : DFL_NONE;
    for (int j = tid; j < DFL_WARPS * DFL_NLIT_PAD / 2; j += DFL_THREADS) (&S.u.hist[0][0])[j] = 0u;
    __syncthreads();

    /* pass 1: symbol counts, Adler-32 partials */
    int             last;
    const int       nb  = dfl_slice(s_data, m, S.prev, &last);
    const uint32_t *row = s_data + tid * DFL_ROW;
    uint32_t        sa = 0, sb = 0;
    if (nb > 0) {
        dfl_hist_v hv{S.u.hist[warp]};
        dfl_tokenize(row, nb, last, hv);
        dfl_adler_slice(row, nb, &sa, &sb);
    }
    uint64_t tb = nb > 0 ? sb + (uint64_t)(m - tid * DFL_SLICE - nb) * sa : 0u;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sa += __shfl_xor_sync(0xffffffffu, sa, d), tb += __shfl_xor_sync(0xffffffffu, tb, d);
    if (lane == 0) S.red_a[warp] = sa, S.red_b[warp] = tb;
    __syncthreads();
    for (int s = tid; s < DFL_NLIT_PAD; s += DFL_THREADS) {
        uint32_t f = 0;
        for (int w = 0; w < DFL_WARPS; w++) f += (S.u.hist[w][s >> 1] >> ((s & 1) << 4)) & 0xffffu;
        S.freq[s] = s == DFL_EOB ? 1u : (s < DFL_NLIT ? f : 0u);
    }
    __syncthreads();

    /* literal/length code; code lengths run-length coded; their code; the header */
    dfl_huff_lengths(S.freq, DFL_NLIT, 15, S.len, &S.u.tmp);
    if (tid == 0) {
        dfl_canonical(S.len, DFL_NLIT, slot->code);
        slot->code[DFL_NLIT] = slot->code[DFL_NLIT + 1] = 0u;
        int hlit = DFL_NLIT;
        while (hlit > 257 && S.len[hlit - 1] == 0) hlit--;
        for (int s = 0; s < hlit; s++) S.seq[s] = S.len[s];
        S.seq[hlit] = S.seq[hlit + 1] = 1; /* distance codes 0 and 1 */
        S.hlit = hlit;
        S.ntok = dfl_cl_rle(S.seq, hlit + 2, S.tsym, S.txv);
        for (int s = 0; s < DFL_NCL; s++) S.clfreq[s] = 0u;
        for (int j = 0; j < S.ntok; j++) S.clfreq[S.tsym[j]]++;
    }
    __syncthreads();
    dfl_huff_lengths(S.clfreq, DFL_NCL, 7, S.cllen, &S.u.tmp);
    if (tid == 0) {
        dfl_canonical(S.cllen, DFL_NCL, S.clcode);
        S.hbits = dfl_write_header(slot->hdr, bfinal, S.hlit, S.cllen, S.clcode, S.tsym, S.txv, S.ntok);
    }
    __syncthreads();

    /* pass 2: bits of each slice's tokens (the last thread's include end-of-block), their offsets */
    dfl_cost_v cv{S.len, 0u};
    if (nb > 0) dfl_tokenize(row, nb, last, cv);
    if (tid == DFL_THREADS - 1) cv.bits += S.len[DFL_EOB];
    uint32_t       total;
    const uint32_t excl = dfl_block_scan(cv.bits, S.scan, &total);
    slot->toff[tid]     = S.hbits + excl;
    if (tid == 0) {
        uint32_t a = 0;
        uint64_t b = 0;
        for (int w = 0; w < DFL_WARPS; w++) a += S.red_a[w], b += S.red_b[w];
        slot->bits    = S.hbits + total;
        slot->hbits   = S.hbits;
        slot->adler_a = a % DFL_ADLER_MOD;
        slot->adler_b = (uint32_t)(b % DFL_ADLER_MOD);
    }
}

/* ---- 2. placement ---- */

__global__ void dfl_place(const int64_t *__restrict__ seg_off, int n, uint8_t *dst, int32_t *dst_bytes,
                          dfl_slot *__restrict__ slots) {
    const int lane = threadIdx.x & 31;
    const int i    = (int)(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
    if (i >= n) return;
    const int64_t o = seg_off[i], rel = o - seg_off[0], len = seg_off[i + 1] - o;
    const int     K = len >= 1 && len <= CK_DEFLATE_MAX_SEGMENT ? (int)((len + DFL_SUB - 1) / DFL_SUB) : 0;
    uint32_t      bits = 0, a = 0, b = 0;
    dfl_slot     *sl   = lane < K ? slots + dfl_slot_index(rel, i, lane) : NULL;
    if (sl) {
        const int64_t p = (int64_t)lane * DFL_SUB, mk = len - p < DFL_SUB ? len - p : DFL_SUB;
        const int64_t rest = len - p - mk; /* bytes after the sub-block */
        bits = sl->bits, a = sl->adler_a;
        b    = (uint32_t)((sl->adler_b + (uint64_t)(rest % DFL_ADLER_MOD) * a) % DFL_ADLER_MOD);
    }
    uint32_t inc = bits;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, inc, d);
        if (lane >= d) inc += y;
    }
    const uint32_t total = __shfl_sync(0xffffffffu, inc, 31);
    if (sl) sl->start = inc - bits;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) a += __shfl_xor_sync(0xffffffffu, a, d), b += __shfl_xor_sync(0xffffffffu, b, d);
    if (lane == 0) {
        const int64_t nbytes = ((int64_t)total + 7) / 8;
        const int64_t stream = 2 + nbytes + 4;
        const int     keep   = K > 0 && stream < len;
        dst_bytes[i]         = keep ? (int32_t)stream : 0;
        if (keep) {
            const uint32_t A = (1u + a) % DFL_ADLER_MOD;
            const uint32_t B = (uint32_t)(((uint64_t)(len % DFL_ADLER_MOD) + b) % DFL_ADLER_MOD);
            uint8_t       *d = dst + o;
            d[0] = 0x78, d[1] = 0x01;
            d[2 + nbytes] = (uint8_t)(B >> 8), d[3 + nbytes] = (uint8_t)B;
            d[4 + nbytes] = (uint8_t)(A >> 8), d[5 + nbytes] = (uint8_t)A;
        }
    }
}

/* ---- 3. emission ---- */

__global__ void __launch_bounds__(DFL_THREADS) dfl_emit(const uint8_t *__restrict__ src, const int64_t *__restrict__ seg_off,
                                                        uint8_t *dst, const int32_t *__restrict__ dst_bytes,
                                                        const dfl_slot *__restrict__ slots) {
    extern __shared__ uint32_t s_data[];
    __shared__ uint32_t        s_code[DFL_NLIT_PAD];
    __shared__ int             s_prev;
    const dfl_where            W = dfl_locate(seg_off);
    if (W.len <= W.p0 || dst_bytes[W.i] == 0) return;
    const int       m    = (int)(W.len - W.p0 < DFL_SUB ? W.len - W.p0 : DFL_SUB);
    const dfl_slot *slot = slots + dfl_slot_index(W.rel, W.i, W.k);
    const int       tid  = threadIdx.x;

    dfl_stage(s_data, src + W.o + W.p0, m);
    for (int s = tid; s < DFL_NLIT_PAD; s += DFL_THREADS) s_code[s] = slot->code[s];
    if (tid == 0) s_prev = W.p0 > 0 ? (int)src[W.o + W.p0 - 1] : DFL_NONE;
    __syncthreads();

    const uintptr_t ua   = (uintptr_t)(dst + W.o);
    const int       r    = (int)(ua & 3u);
    uint32_t       *wb   = (uint32_t *)(ua - (uintptr_t)r);
    const uint32_t  bit0 = 8u * (uint32_t)r + 16u + slot->start; /* the block's first bit */

    int       last;
    const int nb = dfl_slice(s_data, m, s_prev, &last);
    if (nb > 0 || tid == DFL_THREADS - 1) {
        dfl_emit_v<dfl_sink_shared> ev;
        ev.code = s_code;
        ev.w.init(wb, bit0 + slot->toff[tid]);
        if (nb > 0) dfl_tokenize(s_data + tid * DFL_ROW, nb, last, ev);
        if (tid == DFL_THREADS - 1) ev.w.put(s_code[DFL_EOB] & 0xffffu, (int)(s_code[DFL_EOB] >> 16));
        ev.w.finish();
    }

    if (tid < 32) { /* the header, shifted into place */
        const uint32_t hbits = slot->hbits, sh = bit0 & 31u, w0 = bit0 >> 5;
        const int      hw = (int)((hbits + 31) >> 5), nw = (int)((sh + hbits + 31) >> 5);
        for (int j = tid; j < nw; j += 32) {
            const uint32_t cur = j < hw ? slot->hdr[j] : 0u, prv = j > 0 ? slot->hdr[j - 1] : 0u;
            const uint32_t v   = sh ? cur << sh | prv >> (32 - sh) : cur;
            if (w0 + (uint32_t)j == 0 && r) { /* the word sticking out in front: its deflate bytes only */
                for (int q = r + 2; q < 4; q++) dst[W.o + q - r] = (uint8_t)(v >> (8 * q));
            } else {
                atomicOr(wb + w0 + j, v);
            }
        }
    }
}

/* ---- host ---- */

static const int DFL_SMEM = DFL_THREADS * DFL_ROW * (int)sizeof(uint32_t);

extern "C" size_t ck_deflate_cuda_scratch_bytes(int n, int64_t total_bytes) {
    CK_ASSERT(n >= 0 && total_bytes >= 0);
    return ((size_t)(total_bytes / DFL_SUB) + (size_t)n + 1) * sizeof(dfl_slot);
}

extern "C" void ck_deflate_cuda(ck_backend *be, const ck_deflate_args *a) {
    ck_cuda *cu = ck_cuda_of(be);
    if (a->n <= 0) return;
    CK_ASSERT(a->src && a->seg_off && a->dst && a->dst_bytes && a->scratch);
    CK_ASSERT(ck_aligned(a->scratch, 256) && (const void *)a->dst != (const void *)a->src);
    CK_ASSERT(a->n <= INT32_MAX / DFL_SUBS);
    dfl_slot      *slots = (dfl_slot *)a->scratch;
    const unsigned grid  = (unsigned)a->n * DFL_SUBS;
    /* above the 48 KiB default: opt in (a host-side attribute, cheap, allowed during capture) */
    CK_CUDA_CHECK(cudaFuncSetAttribute((const void *)dfl_analyze, cudaFuncAttributeMaxDynamicSharedMemorySize, DFL_SMEM));
    CK_CUDA_CHECK(cudaFuncSetAttribute((const void *)dfl_emit, cudaFuncAttributeMaxDynamicSharedMemorySize, DFL_SMEM));
    dfl_analyze<<<grid, DFL_THREADS, DFL_SMEM, cu->stream>>>(a->src, a->seg_off, a->dst, slots);
    CK_KERNEL_CHECK(cu);
    dfl_place<<<(unsigned)((a->n + 7) / 8), 256, 0, cu->stream>>>(a->seg_off, a->n, a->dst, a->dst_bytes, slots);
    CK_KERNEL_CHECK(cu);
    dfl_emit<<<grid, DFL_THREADS, DFL_SMEM, cu->stream>>>(a->src, a->seg_off, a->dst, a->dst_bytes, slots);
    CK_KERNEL_CHECK(cu);
}
