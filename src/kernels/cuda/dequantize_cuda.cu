// Dequantization kernels: GetRows (embedding gathers, float32 out, bit-identical to the
// reference), weight rows to half for the tensor-core matmul path, and the activation
// conversion to half/bf16 of the tensor-core matmul path (the GEMVs' int8 quantization is in
// quant_act.cu).
//
// Quantized rows: one thread block per (row, segment of at most 256 chunks). The segment's bytes
// are copied to shared memory (16-byte copies when rows are aligned), then each thread decodes
// one 32-element chunk with DecodeChunk and writes 32 outputs. value = fma(sc, q, mn) with
// sc = d*sc_j and mn = -(dmin*m_j) (or m) rounded first: the operations ref::DequantizeRow
// compiles to with GCC's default -ffp-contract=fast (d*sc*q - dmin*m as one fused
// multiply-subtract), so GetRows matches it bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_stage.cuh"

namespace herd::cuda {
namespace {

constexpr int kMaxSegChunks = 256;  // threads per block of the dequantize kernel

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

template <typename Out>
__device__ __forceinline__ Out FromFloat(float v) {
  if constexpr (std::is_same_v<Out, float>) return v;
  return __float2half_rn(v);
}

// ids == nullptr: rows row0 .. row0 + gridDim.x - 1; else rows ids[blockIdx.x] (out of range:
// the output row is NaN). Shared memory: the segment's input bytes (+ pad, rounded to 16), then
// its outputs, which are written back with coalesced 16-byte stores.
template <DType T, typename Out>
__global__ void DequantRowsKernel(const uint8_t* w, int64_t row_bytes, int64_t table_rows, int blocks_per_row,
                                  const int32_t* ids, int64_t row0, int seg_blocks, bool aligned, Out* out,
                                  int64_t n_in, bool vec_out) {
  using Q = QTraits<T>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int64_t r = blockIdx.x;
  const int64_t row = ids != nullptr ? static_cast<int64_t>(ids[r]) : row0 + r;
  const int b0 = blockIdx.y * seg_blocks;
  const int nb = min(seg_blocks, blocks_per_row - b0);
  const int n_out = nb * Q::kChunks * 32;  // outputs of this segment
  Out* o = out + r * n_in + static_cast<int64_t>(b0) * Q::kChunks * 32;
  if (row < 0 || row >= table_rows) {
    for (int i = threadIdx.x; i < n_out; i += blockDim.x) o[i] = FromFloat<Out>(__int_as_float(0x7fc00000));
    return;
  }
  StageCopy(smem, w + row * row_bytes + static_cast<int64_t>(b0) * Q::kBlockBytes, nb * Q::kBlockBytes, aligned,
            threadIdx.x, blockDim.x);
  CpAsyncCommit();
  CpAsyncWait<0>();
  __syncthreads();
  Out* staged = reinterpret_cast<Out*>(smem + ((seg_blocks * Q::kBlockBytes + kSmemPad + 15) & ~15));
  const int lc = threadIdx.x;
  if (lc < nb * Q::kChunks) {
    Chunk ch;
    DecodeChunk<T>(SmemSrc{smem}, (lc / Q::kChunks) * Q::kBlockBytes, lc % Q::kChunks, ch);
    uint4* dst = reinterpret_cast<uint4*>(staged + lc * 32);
    if constexpr (std::is_same_v<Out, float>) {
      float f[32];
      ChunkValues(ch, f);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        dst[k] = make_uint4(__float_as_uint(f[4 * k]), __float_as_uint(f[4 * k + 1]), __float_as_uint(f[4 * k + 2]),
                            __float_as_uint(f[4 * k + 3]));
    } else {
      uint32_t h[16];
      ChunkHalves(ch, h);
#pragma unroll
      for (int k = 0; k < 4; ++k) dst[k] = make_uint4(h[4 * k], h[4 * k + 1], h[4 * k + 2], h[4 * k + 3]);
    }
  }
  __syncthreads();
  if (vec_out) {
    const int n16 = n_out * static_cast<int>(sizeof(Out)) / 16;
    for (int i = threadIdx.x; i < n16; i += blockDim.x)
      reinterpret_cast<uint4*>(o)[i] = reinterpret_cast<const uint4*>(staged)[i];
  } else {
    for (int i = threadIdx.x; i < n_out; i += blockDim.x) o[i] = staged[i];
  }
}

template <DType T, typename Out>
void LaunchDequant(const TensorView& w, const int32_t* ids, int64_t row0, int64_t n_rows, Out* out,
                   cudaStream_t stream) {
  using Q = QTraits<T>;
  const int64_t n_in = w.cols();
  const int64_t row_bytes = static_cast<int64_t>(w.row_bytes());
  const int bpr = static_cast<int>(n_in / (32 * Q::kChunks));
  const int cpr = bpr * Q::kChunks;
  const bool aligned = row_bytes % 16 == 0 && Aligned16(w.data);
  // Segment: a multiple of 32 chunks and (aligned) of the 16-byte aligned group of blocks.
  int unit = 32;
  if (aligned) {
    const int g = Q::kGroupBlocks * Q::kChunks;
    unit = g <= 32 ? 32 : g;  // every group size (1..64 chunks) divides 32 or is 64
  }
  const int seg_chunks = std::min(kMaxSegChunks, (cpr + unit - 1) / unit * unit);
  const int seg_blocks = seg_chunks / Q::kChunks;
  const int n_seg = (bpr + seg_blocks - 1) / seg_blocks;
  const size_t smem = ((static_cast<size_t>(seg_blocks) * Q::kBlockBytes + kSmemPad + 15) & ~size_t{15}) +
                      static_cast<size_t>(seg_chunks) * 32 * sizeof(Out);
  HERD_CHECK(n_rows < (int64_t{1} << 31) && n_seg < 65536);
  const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>(n_seg));
  DequantRowsKernel<T, Out><<<grid, seg_chunks, smem, stream>>>(static_cast<const uint8_t*>(w.data), row_bytes,
                                                                w.rows(), bpr, ids, row0, seg_blocks, aligned, out,
                                                                n_in, Aligned16(out));
  HERD_CUDA_CHECK_LAUNCH();
}

template <DType T>
__device__ __forceinline__ float FloatAt(const void* p, int64_t i) {
  if constexpr (T == DType::kF32) return static_cast<const float*>(p)[i];
  if constexpr (T == DType::kBF16)
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16);
  return __half2float(__ushort_as_half(static_cast<const unsigned short*>(p)[i]));
}

// out[r, c] = table[ids[r], c] for F32/F16/BF16 tables (exact conversions). One thread per output.
template <DType T>
__global__ void GatherFloatKernel(const void* table, int64_t table_rows, int64_t cols, const int32_t* ids, int64_t n,
                                  float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const int64_t row = ids[r];
  out[i] = row >= 0 && row < table_rows ? FloatAt<T>(table, row * cols + c) : __int_as_float(0x7fc00000);
}

__global__ void ConvertKernel(const float* x, int64_t n, bool bf16, void* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (bf16) {
    static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(x[i]);
  } else {
    static_cast<__half*>(out)[i] = __float2half_rn(x[i]);
  }
}

unsigned Blocks(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t cols = table.cols();
  const bool quant =
      DispatchQuant(table.type, [&]<DType T>() { LaunchDequant<T, float>(table, ids, 0, n, out, stream); });
  if (quant) return;
  const unsigned blocks = Blocks(n * cols, 256);
  switch (table.type) {
    case DType::kF32:
      GatherFloatKernel<DType::kF32><<<blocks, 256, 0, stream>>>(table.data, table.rows(), cols, ids, n, out);
      break;
    case DType::kF16:
      GatherFloatKernel<DType::kF16><<<blocks, 256, 0, stream>>>(table.data, table.rows(), cols, ids, n, out);
      break;
    case DType::kBF16:
      GatherFloatKernel<DType::kBF16><<<blocks, 256, 0, stream>>>(table.data, table.rows(), cols, ids, n, out);
      break;
    default: HERD_CHECK_MSG(false, "GetRows: unsupported type %s", DTypeName(table.type).data());
  }
  HERD_CUDA_CHECK_LAUNCH();
}

namespace internal {

void ConvertActivations(const float* x, int64_t n, bool bf16, void* out, cudaStream_t stream) {
  if (n == 0) return;
  ConvertKernel<<<Blocks(n, 256), 256, 0, stream>>>(x, n, bf16, out);
  HERD_CUDA_CHECK_LAUNCH();
}

void DequantizeRowsToHalf(const TensorView& w, int64_t row0, int64_t n_rows, void* out, cudaStream_t stream) {
  if (n_rows == 0) return;
  const bool ok = DispatchQuant(w.type, [&]<DType T>() {
    LaunchDequant<T, __half>(w, nullptr, row0, n_rows, static_cast<__half*>(out), stream);
  });
  HERD_CHECK_MSG(ok, "DequantizeRowsToHalf: %s is not a quantized weight type", DTypeName(w.type).data());
}

}  // namespace internal
}  // namespace herd::cuda
