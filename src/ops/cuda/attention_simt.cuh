/* attention_simt_kernel: the float32 parity path (and head dims the tensor-core kernels lack). Included by
 * attention.cu inside its anonymous namespace. */

/* ---------------------------------------------------------------------------------------------------------
 * SIMT kernel (f32 parity path; also any dtype with a head dim the tensor-core kernels lack, HD <= DM).
 * One thread per query row, BQ rows of one group per block, K/V tiles of 32 keys converted to f32 in shared
 * memory (every thread reads the same element: broadcast). expf and an explicit scale multiply follow the
 * CPU reference (s = scale·(q·k), p = exp(s − max)), so f32 results agree with it to rounding.
 * ------------------------------------------------------------------------------------------------------- */
template <typename T, int DM, int BQ>
__global__ void __launch_bounds__(BQ)
    attention_simt_kernel(T *__restrict__ O, const T *__restrict__ Q, const T *__restrict__ K,
                          const T *__restrict__ V, int Tq, int Tk, int HD, int nqb, float scale) {
    constexpr int BK = 32;
    __shared__ __align__(16) float sK[BK][DM]; /* (BK, DM), columns >= HD zero */
    __shared__ __align__(16) float sV[BK][DM];

    const int     tid = threadIdx.x;
    const int64_t g   = (int64_t)blockIdx.x / nqb;
    const int     q0 = (int)((int64_t)blockIdx.x - g * nqb) * BQ, row = q0 + tid;
    const bool    active = row < Tq;
    const T      *qr     = Q + ((int64_t)g * Tq + (active ? row : q0)) * HD;
    const T      *Kg = K + (int64_t)g * Tk * HD, *Vg = V + (int64_t)g * Tk * HD;

    float q[DM], o[DM];
#pragma unroll
    for (int d = 0; d < DM; d++) {
        q[d] = d < HD ? ck__to_f32(qr[d]) : 0.0f;
        o[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int k0 = 0; k0 < Tk; k0 += BK) {
        const int nk = Tk - k0 < BK ? Tk - k0 : BK;
        __syncthreads(); /* the previous tile is fully consumed */
        for (int i = tid; i < BK * DM; i += BQ) {
            const int  j = i / DM, d = i % DM;
            const bool ok = j < nk && d < HD;
            sK[j][d]      = ok ? ck__to_f32(Kg[(int64_t)(k0 + j) * HD + d]) : 0.0f;
            sV[j][d]      = ok ? ck__to_f32(Vg[(int64_t)(k0 + j) * HD + d]) : 0.0f;
        }
        __syncthreads();
        float s[BK], mx = m;
#pragma unroll
        for (int j = 0; j < BK; j++) {
            float acc = 0.0f;
#pragma unroll
            for (int d = 0; d < DM; d += 4) {
                const float4 kv = *reinterpret_cast<const float4 *>(&sK[j][d]);
                acc = fmaf(q[d], kv.x, acc);
                acc = fmaf(q[d + 1], kv.y, acc);
                acc = fmaf(q[d + 2], kv.z, acc);
                acc = fmaf(q[d + 3], kv.w, acc);
            }
            s[j] = j < nk ? acc * scale : -INFINITY;
            mx   = fmaxf(mx, s[j]);
        }
        const float corr = expf(m - mx); /* first tile: exp(-inf) = 0 */
        l *= corr;
#pragma unroll
        for (int d = 0; d < DM; d++) o[d] *= corr;
#pragma unroll
        for (int j = 0; j < BK; j++) {
            const float p = expf(s[j] - mx);
            l += p;
#pragma unroll
            for (int d = 0; d < DM; d += 4) {
                const float4 vv = *reinterpret_cast<const float4 *>(&sV[j][d]);
                o[d]            = fmaf(p, vv.x, o[d]);
                o[d + 1]        = fmaf(p, vv.y, o[d + 1]);
                o[d + 2]        = fmaf(p, vv.z, o[d + 2]);
                o[d + 3]        = fmaf(p, vv.w, o[d + 3]);
            }
        }
        m = mx;
    }
    if (!active) return;
    const float inv = 1.0f / l;
    T          *orow = O + ((int64_t)g * Tq + row) * HD;
#pragma unroll
    for (int d = 0; d < DM; d++)
        if (d < HD) orow[d] = ck__from_f32<T>(o[d] * inv);
}
