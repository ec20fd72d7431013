// EncodeTensorMap2d (tma.cuh): cuTensorMapEncodeTiled through the runtime's driver entry point
// (no link against libcuda).
#include "kernels/cuda/tma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace herd::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 EncodeFunction() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // not sticky: cleared so that later checks do not see it
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

Status EncodeTensorMap2d(CUtensorMap* map, const void* base, bool bf16, uint64_t rows, uint64_t cols,
                         uint64_t row_bytes, uint32_t box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = EncodeFunction();
  if (encode == nullptr) return Unimplemented("the CUDA driver has no cuTensorMapEncodeTiled");
  if (rows == 0 || cols == 0 || row_bytes % 16 != 0 || row_bytes < cols * 2 || box_rows == 0 || box_rows > 256 ||
      reinterpret_cast<uintptr_t>(base) % 16 != 0) {
    return InvalidArgument(StrFormat("tensor map: bad shape %llu x %llu, row stride %llu, box rows %u",
                                     static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                                     static_cast<unsigned long long>(row_bytes), box_rows));
  }
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {64, box_rows};  // 64 elements = one 128-byte swizzle row
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r =
      encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(base),
             dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return Internal(StrFormat("cuTensorMapEncodeTiled failed (CUresult %d)", static_cast<int>(r)));
  return Status::Ok();
}

bool TensorMapsUsable() { return DeviceIsSm90() && EncodeFunction() != nullptr; }

}  // namespace herd::cuda
