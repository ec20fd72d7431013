// Portable kernel set: the reference VecDot per output element, after converting herd's CPU
// activation layout back to the reference activation blocks (exactly: same int8 values and
// scales). Used on CPUs without a SIMD set and as the last fallback.
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/cpu/kernel_set.h"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

namespace herd::cpu::internal {
namespace {

// Token row t of the activations in the reference format VecDotType(args.type).
void ToRefRow(const KernelArgs& a, int64_t t, std::vector<uint8_t>* out) {
  const ActLayout& l = a.layout;
  const uint8_t* row = a.act + static_cast<size_t>(t) * l.stride;
  const int8_t* q = reinterpret_cast<const int8_t*>(row);
  std::vector<int8_t> natural;
  if (l.interleaved) {  // undo the span interleaving (see act_quant.h)
    natural.resize(l.n_pad);
    for (int64_t o = 0; o < l.n_pad; o += 256)
      for (int k = 0; k < 4; ++k)
        for (int g = 0; g < 16; ++g) std::memcpy(&natural[o + 16 * g + 4 * k], q + o + 64 * k + 4 * g, 4);
    q = natural.data();
  }
  const auto* d = reinterpret_cast<const float*>(row + l.d_off);
  const int64_t nb = a.n_in / (l.format == ActFormat::kQ8B256 ? 256 : 32);
  switch (l.format) {
    case ActFormat::kF32: out->assign(row, row + a.n_in * 4); return;
    case ActFormat::kQ8B32H: {
      out->resize(nb * sizeof(BlockQ8_0));
      auto* b = reinterpret_cast<BlockQ8_0*>(out->data());
      for (int64_t i = 0; i < nb; ++i) {
        b[i].d = Fp32ToFp16(d[i]);
        std::memcpy(b[i].qs, q + 32 * i, 32);
      }
      return;
    }
    case ActFormat::kQ8B32F: {
      out->resize(nb * sizeof(BlockQ8_1));
      auto* b = reinterpret_cast<BlockQ8_1*>(out->data());
      for (int64_t i = 0; i < nb; ++i) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += q[32 * i + j];
        b[i].d = d[i];
        b[i].s = d[i] * static_cast<float>(sum);
        std::memcpy(b[i].qs, q + 32 * i, 32);
      }
      return;
    }
    case ActFormat::kQ8B256: {
      out->resize(nb * sizeof(BlockQ8_K));
      auto* b = reinterpret_cast<BlockQ8_K*>(out->data());
      for (int64_t i = 0; i < nb; ++i) {
        b[i].d = d[i];
        std::memcpy(b[i].qs, q + 256 * i, 256);
        for (int g = 0; g < 16; ++g) {
          int sum = 0;
          for (int j = 0; j < 16; ++j) sum += q[256 * i + 16 * g + j];
          b[i].bsums[g] = static_cast<int16_t>(sum);
        }
      }
      return;
    }
  }
}

void GenericKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  std::vector<uint8_t> xr;
  for (int64_t t = 0; t < a.n_tok; ++t) {
    ToRefRow(a, t, &xr);
    for (int64_t r = r0; r < r1; ++r) {
      a.y[t * a.ldy + r] = ref::VecDot(a.type, a.n_in, a.w + static_cast<size_t>(r) * a.w_stride, xr.data());
    }
  }
}

MatKernel Get(DType) { return &GenericKernel; }

int PackMinTok(DType) { return 1 << 30; }

const KernelSet kSet = {"generic", &Get, 1, &PackMinTok};

}  // namespace

const KernelSet* GenericKernelSet() { return &kSet; }

}  // namespace herd::cpu::internal
