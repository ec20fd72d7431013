// Looks up and validates model tensors in a GGUF file and makes them usable by a backend.
// Errors name the file, the tensor and what is wrong (missing, wrong shape, unsupported type).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "tensor/tensor.h"

namespace herd {

class GgufFile;

class WeightLoader {
 public:
  WeightLoader(const GgufFile& file, Backend* backend) : file_(file), backend_(backend) {}
  ~WeightLoader();

  bool Has(const std::string& name) const;
  // A matrix or vector `name` with shape `ne` (innermost first), any weight type.
  Result<TensorView> Matrix(const std::string& name, std::vector<int64_t> ne);
  // Matrices a matmul reads together (Q/K/V), validated as Matrix and prepared as one group
  // (Backend::PrepareWeightGroup: back to back on a device).
  struct Spec {
    std::string name;
    std::vector<int64_t> ne;
  };
  Result<std::vector<TensorView>> MatrixGroup(const std::vector<Spec>& specs);
  // A float32 vector of length n (norm weights, rope factors): returns backend memory.
  // F16/BF16/F32 in the file are accepted and widened once.
  Result<const float*> F32Vector(const std::string& name, int64_t n);
  // Release ownership of converted vectors to the caller's lifetime (the model).
  std::vector<void*> TakeAllocations() { return std::move(allocations_); }

 private:
  // The host view of `name` after the checks of Matrix.
  Result<TensorView> HostMatrix(const std::string& name, std::vector<int64_t> ne) const;
  Status CheckPrepared(const std::string& name, const TensorView& host, const TensorView& prepared) const;

  const GgufFile& file_;
  Backend* backend_;
  std::vector<void*> allocations_;
};

}  // namespace herd
