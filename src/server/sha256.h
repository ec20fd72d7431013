// SHA-256 (OpenSSL's libcrypto) for verifying downloaded blobs: incremental, ~1-2 GB/s with the
// CPU's SHA extensions or AVX2.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace herd::server {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t n);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The digest as 64 lower-case hex digits; the object is then reset for reuse.
  std::string HexDigest();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// "sha256:<hex>" of `data`.
std::string Sha256Digest(std::string_view data);

}  // namespace herd::server
