// Helpers of the CudaBackend tests: a backend per test (or a skip with the reason when there is
// no GPU), uploads/downloads through the Backend interface, random inputs, error measures.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/quants.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace herd::cuda::testing {

inline std::vector<float> RandomNormal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A random quantized weight [rows, cols] of `type`: random floats through ref::QuantizeRow.
inline std::vector<uint8_t> QuantizedWeight(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const auto f = RandomNormal(static_cast<size_t>(rows * cols), seed, 0.05f);
  std::vector<uint8_t> w(RowBytes(type, cols) * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    ref::QuantizeRow(type, f.data() + r * cols, w.data() + r * RowBytes(type, cols), cols);
  return w;
}

// Fixture base: backend_ is the CUDA backend of device 0; tests skip without a GPU.
class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    auto be = MakeCudaBackend(0);
    ASSERT_TRUE(be.ok()) << be.status().ToString();
    backend_ = std::move(be).value();
  }
  void TearDown() override {
    for (void* p : owned_) backend_->Free(p);
  }

  // Device copy of `v` (freed at the end of the test). The host vector may die right after.
  template <typename T>
  T* Upload(const std::vector<T>& v) {
    void* p = backend_->Alloc(sizeof(T) * v.size());
    owned_.push_back(p);
    backend_->CopyToDevice(p, v.data(), sizeof(T) * v.size());
    return static_cast<T*>(p);
  }
  // n values of device memory, filled with NaN (float) or 0xff bytes: outputs must overwrite them.
  template <typename T>
  T* Poisoned(size_t n) {
    std::vector<T> v(n);
    if constexpr (std::is_same_v<T, float>) {
      for (auto& x : v) x = std::numeric_limits<float>::quiet_NaN();
    } else {
      std::memset(v.data(), 0xff, sizeof(T) * n);
    }
    return Upload(v);
  }
  template <typename T>
  std::vector<T> Download(const T* p, size_t n) {
    backend_->Synchronize();
    std::vector<T> v(n);
    backend_->CopyToHost(v.data(), p, sizeof(T) * n);
    return v;
  }

  // QuantizedWeight uploaded through PrepareWeight; its host bytes stay in hosts_ (in order).
  TensorView Weight(DType type, int64_t rows, int64_t cols, uint32_t seed) {
    hosts_.push_back(QuantizedWeight(type, rows, cols, seed));
    return backend_->PrepareWeight(TensorView::Matrix(type, rows, cols, hosts_.back().data()));
  }

  std::unique_ptr<Backend> backend_;
  std::vector<void*> owned_;
  std::vector<std::vector<uint8_t>> hosts_;
};

// Device memory of a test, freed with it (outside any backend: for kernel-level tests).
struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { HERD_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  Dev(Dev&& o) noexcept : p(o.p) { o.p = nullptr; }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};
// A device copy of v.
template <typename T>
Dev Up(const std::vector<T>& v) {
  Dev d(v.size() * sizeof(T));
  HERD_CUDA_CHECK(cudaMemcpy(d.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
// n values of T at p, after every queued kernel of the device.
template <typename T>
std::vector<T> Down(const void* p, size_t n) {
  std::vector<T> h(n);
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
  HERD_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ||a - b|| / ||b|| over [begin, end); NaN anywhere in a gives +inf.
inline double RelError(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Byte offsets of the half-precision scale fields of one block of a quantized type (d, and dmin
// or m), e.g. to overwrite them with chosen scales in tests.
inline std::vector<int> HalfFields(DType t) {
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0: return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K: return {0, 2};
    case DType::kQ2_K: return {80, 82};
    case DType::kQ3_K: return {108};
    case DType::kQ6_K: return {208};
    default: return {};
  }
}

}  // namespace herd::cuda::testing
