// The CUDA backend's switches: environment variables read once when a backend is made, for A/B
// runs of each fusion against the plain path (defaults and measurements: docs/configuration.md).
#pragma once

#include <cstdint>

namespace herd::cuda {

struct BackendSwitches {
  bool graphs = true;      // HERD_CUDA_GRAPHS: decode steps as CUDA graphs
  bool pinned_d2h = true;  // HERD_CUDA_PINNED_D2H: queued device-to-host copies through pinned memory
  // HERD_CUDA_KERNEL_COPIES: small staged uploads and queued downloads (a decode step's batch and
  // ids) as one-CTA kernels on pinned memory instead of DMAs (host_copies.h).
  bool kernel_copies = true;
  bool fuse = true;         // HERD_CUDA_FUSE: every fusion below, and the deferred RoPE / split
  bool fuse_inputs = true;  // HERD_CUDA_FUSE_INPUT: producers write their matmul's input format
  // A one-row AddRmsNorm before a K-quant GEMV of rows of up to this many values runs inside that
  // GEMV (HERD_CUDA_NORM_IN_GEMV=N; 0 off): gate/up of 2048 (1B) and 4096 (8B) values gain on H100.
  int64_t norm_in_gemv_max_cols = 4096;
  // ... and for the Q/K/V GEMV only where its rows have at least this many values
  // (HERD_CUDA_NORM_IN_QKV=N; 0 off): on H100 8B Q4_K_M (4096) gains, 1B (2048) loses.
  int64_t norm_in_qkv_min_cols = 4096;
  // ... also before Q8_0 GEMVs (Q8_0 activations) of rows of at least this many values
  // (HERD_CUDA_NORM_IN_GEMV_Q8_0=N; 0 off): on H200 8B Q8_0 (4096) gains 1.0%, 1B (2048) loses 0.3%.
  int64_t norm_in_gemv_q8_0_min_cols = 4096;
  // Attention writes the O projection's int8 GEMV input in its split merge
  // (HERD_CUDA_ATTN_QUANT_OUT=0: merge, then quantize).
  bool attn_quant_out = true;
  // Attention writes the O projection's half / bfloat16 tensor-core input too
  // (HERD_CUDA_ATTN_HALF_OUT=0: a conversion kernel before O).
  bool attn_half_out = true;
  // An AddRmsNorm right after a cuBLAS GEMM is launched plainly, not with programmatic dependent
  // launch (HERD_CUDA_NORM_PDL_AFTER_BLAS=1: with it). H200, 8B F16 at 128 sequences: the norm
  // after the down projection's split-K reduction took 8.1 us launched early, 4.2 us plainly.
  bool norm_pdl_after_blas = false;

  // The defaults above, overridden by the environment; the fusions depend on fuse / fuse_inputs.
  static BackendSwitches FromEnv();
};

}  // namespace herd::cuda
