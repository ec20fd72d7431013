// A non-owning view of an n-dimensional tensor (up to 4 dims), ggml-style: ne[0] is the
// innermost (contiguous) dimension, a matrix [rows, cols] has ne = {cols, rows}. For
// quantized types ne[0] is a multiple of the block size and nb[1] = RowBytes(type, ne[0]).
// `data` may point into a read-only file mapping or into device memory (see kernels/backend.h).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace herd {

struct TensorView {
  DType type = DType::kF32;
  int64_t ne[4] = {1, 1, 1, 1};  // elements per dimension, innermost first
  void* data = nullptr;

  int64_t cols() const { return ne[0]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return RowBytes(type, ne[0]); }
  size_t bytes() const { return row_bytes() * static_cast<size_t>(rows()); }
  const uint8_t* row(int64_t i) const { return static_cast<const uint8_t*>(data) + row_bytes() * i; }
  uint8_t* row(int64_t i) { return static_cast<uint8_t*>(data) + row_bytes() * i; }
  std::string ShapeString() const;  // "[2048, 8192]" outermost first, as people read shapes

  static TensorView Matrix(DType type, int64_t rows, int64_t cols, void* data) {
    TensorView t;
    t.type = type;
    t.ne[0] = cols;
    t.ne[1] = rows;
    t.data = data;
    return t;
  }
};

}  // namespace herd
