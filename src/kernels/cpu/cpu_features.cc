#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <cstdint>

namespace herd::cpu {
namespace {

#if defined(__x86_64__)
uint64_t ReadXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Detect() {
  CpuFeatures f;
  uint32_t a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const uint32_t max_leaf = a;
  if (max_leaf < 7) return f;
  __cpuid_count(1, 0, a, b, c, d);
  const bool osxsave = (c >> 27) & 1;
  const bool cpu_fma = (c >> 12) & 1;
  const bool cpu_f16c = (c >> 29) & 1;
  const bool cpu_avx = (c >> 28) & 1;
  if (!osxsave || !cpu_avx) return f;
  const uint64_t xcr0 = ReadXcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;           // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;         // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_tile = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  if (!os_ymm) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const uint32_t b7 = b, c7 = c, d7 = d;
  f.avx2 = (b7 >> 5) & 1;
  f.fma = cpu_fma;
  f.f16c = cpu_f16c;
  if (os_zmm) {
    f.avx512f = (b7 >> 16) & 1;
    f.avx512dq = (b7 >> 17) & 1;
    f.avx512bw = (b7 >> 30) & 1;
    f.avx512vl = (b7 >> 31) & 1;
    f.avx512vnni = (c7 >> 11) & 1;
    f.avx512fp16 = (d7 >> 23) & 1;
  }
  f.amx_int8 = os_tile && ((d7 >> 25) & 1) && ((d7 >> 24) & 1);
  f.amx_bf16 = os_tile && ((d7 >> 22) & 1) && ((d7 >> 24) & 1);
  __cpuid_count(7, 1, a, b, c, d);
  f.avx_vnni = (a >> 4) & 1;
  if (os_zmm) f.avx512bf16 = (a >> 5) & 1;
  return f;
}
#elif defined(__aarch64__)
CpuFeatures Detect() {
  CpuFeatures f;
  f.neon = true;  // mandatory on aarch64
#if defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP);
#if defined(HWCAP_ASIMDDP)
  f.dotprod = (hw & HWCAP_ASIMDDP) != 0;
#endif
#endif
  return f;
}
#else
CpuFeatures Detect() { return CpuFeatures{}; }
#endif

}  // namespace

std::string CpuFeatures::ToString() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx_vnni, "avx-vnni");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avx512fp16, "avx512fp16");
  add(amx_int8, "amx-int8");
  add(amx_bf16, "amx-bf16");
  add(neon, "neon");
  add(dotprod, "dotprod");
  return s.empty() ? "none" : s;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace herd::cpu
