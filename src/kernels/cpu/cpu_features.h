// CPU feature detection for run-time kernel dispatch. x86-64: cpuid for the instruction sets
// and xgetbv for the register state the OS saves (an AVX-512 CPU under an OS or VM that does
// not enable the ZMM/opmask state reports avx512f = false here). aarch64: hwcaps.
#pragma once

#include <string>

namespace herd::cpu {

struct CpuFeatures {
  // x86-64
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx_vnni = false;  // VEX-encoded vpdpbusd on ymm
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx512fp16 = false;
  bool amx_int8 = false;  // CPU + OS XCR0 tile state; the per-process permission is separate
  bool amx_bf16 = false;  // AMX-TILE + AMX-BF16 + OS XCR0 tile state (permission: AmxEnabled())
  // aarch64
  bool neon = false;
  bool dotprod = false;

  // x86-64-v3 baseline the binary is compiled for.
  bool HasX86V3() const { return avx2 && fma && f16c; }
  // Everything the AVX-512 kernel set uses (F, BW, VL, VNNI; BF16 is optional inside it).
  bool HasAvx512Vnni() const { return HasX86V3() && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni; }
  std::string ToString() const;  // "avx2 fma f16c avx512f ..." for logs and benchmarks
};

// Detected once (thread-safe static) and cached.
const CpuFeatures& GetCpuFeatures();

}  // namespace herd::cpu
