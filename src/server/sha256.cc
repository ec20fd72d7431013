#include "server/sha256.h"

#include <openssl/evp.h>

#include "base/check.h"

namespace herd::server {

namespace {
EVP_MD_CTX* Ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  HERD_CHECK(ctx_ != nullptr && EVP_DigestInit_ex(Ctx(ctx_), EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(Ctx(ctx_)); }

void Sha256::Update(const void* data, size_t n) { HERD_CHECK(EVP_DigestUpdate(Ctx(ctx_), data, n) == 1); }

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HERD_CHECK(EVP_DigestFinal_ex(Ctx(ctx_), md, &len) == 1 && len == 32);
  HERD_CHECK(EVP_DigestInit_ex(Ctx(ctx_), EVP_sha256(), nullptr) == 1);
  static const char* kHex = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

std::string Sha256Digest(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return "sha256:" + h.HexDigest();
}

}  // namespace herd::server
