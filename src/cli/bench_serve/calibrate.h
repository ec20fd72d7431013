// How `herd bench serve` learns the server's token lengths without its tokenizer.
//
// 1. The server's tokenize route: POST <base>/tokenize with {"model", "content", "prompt",
//    "add_special": false} (herd's and llama.cpp's shape use "content", vLLM's "prompt"); an
//    answer {"tokens": [...]} (or {"count": n}) makes every count exact: prompts are then fitted
//    to their target length by the server's own tokenizer.
// 2. Otherwise the API's usage: two one-token requests with a long and a short message of random
//    words; the difference of their reported prompt tokens over the difference in words is the
//    tokens-per-word ratio, and what is left is the chat template's overhead.
// 3. Otherwise 1.3 tokens per word (English text in common BPE vocabularies), stated as such.
// The calibration requests are not part of any measurement (they also warm the server up).
#pragma once

#include <string>

#include "cli/bench_serve/api_protocol.h"
#include "cli/bench_serve/prompt_text.h"
#include "http/http_client.h"

namespace herd::bench {

struct Calibration {
  std::string method = "default";  // "tokenize", "usage" or "default"
  double tokens_per_word = 1.3;
  int template_overhead = -1;  // usage method: prompt tokens the API adds around the content
  std::string note;            // why a method was not used, for the report
};

// Fills `counter` (ratio, and the exact counter for the tokenize method; it keeps `client`,
// `url` and `request` by reference, so they must outlive it). Blocking; not on the I/O thread.
Calibration Calibrate(HttpClient& client, const HttpUrl& url, const RequestOptions& request, uint64_t seed,
                      TokenCounter* counter);

}  // namespace herd::bench
