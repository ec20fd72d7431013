// "--name value" command-line flags of the CUDA benchmarks (ffn_branch_bench.cu,
// layer_chain_bench.cu, gemv_norm_bench.cu). Host code.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <variant>

namespace herd::cuda::bench {

struct Flag {
  const char* name;                                            // with its dashes, e.g. "--layers"
  std::variant<int*, int64_t*, double*, const char**> target;  // const char*: the argv string
};

// Sets each named flag's target from the value after it. False, with a message on stderr, for a
// flag not in `flags` or one without a value.
inline bool ParseFlags(int argc, char** argv, std::initializer_list<Flag> flags) {
  for (int i = 1; i < argc; i += 2) {
    const Flag* found = nullptr;
    for (const Flag& f : flags)
      if (std::strcmp(argv[i], f.name) == 0) found = &f;
    if (found == nullptr || i + 1 >= argc) {
      std::fprintf(stderr, "%s flag %s\n", found == nullptr ? "unknown" : "no value for", argv[i]);
      return false;
    }
    const char* v = argv[i + 1];
    if (auto* p = std::get_if<int*>(&found->target)) {
      **p = std::atoi(v);
    } else if (auto* q = std::get_if<int64_t*>(&found->target)) {
      **q = std::atoll(v);
    } else if (auto* d = std::get_if<double*>(&found->target)) {
      **d = std::atof(v);
    } else {
      *std::get<const char**>(found->target) = v;
    }
  }
  return true;
}

}  // namespace herd::cuda::bench
