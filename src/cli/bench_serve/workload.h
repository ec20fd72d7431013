// The requests of one benchmark run, as sessions of turns.
//
//   random     one turn each: `input_len` tokens of random words; the first `shared_prefix_len`
//              tokens are the same text in every prompt (a shared system prompt's effect)
//   agent      one turn each: a shared system prompt (an agent preamble, the tool schemas (JSON
//              text) that fit, guidelines; `shared_prefix_len` tokens, 1024 when not given) and a
//              different short user task of `input_len` tokens per request
//   multiturn  sessions of `turns` turns: the first user message has `input_len` tokens, each
//              later turn sends the whole conversation so far (with the server's answers) plus a
//              new user message of `turn_len` tokens; a turn starts when the previous one ended
//   dataset    one turn per JSONL line, in file order, repeated to num_prompts: {"prompt": "..."}
//              or {"messages": [{"role", "content"}, ...]} ending with a user message; an
//              optional "max_tokens" (or "output_len") overrides output_len
//
// Every session starts with different random words (the seed advances), so no two prompts share
// a cached prefix unless the workload means them to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/bench_serve/api_protocol.h"
#include "cli/bench_serve/prompt_text.h"

namespace herd::bench {

struct Session {
  std::vector<Message> base;            // messages before the first user turn (system, dataset history)
  std::vector<std::string> user_turns;  // one request per turn
  std::vector<int> max_tokens;          // per turn
  int base_tokens = 0;                  // counted tokens of `base`
  std::vector<int> turn_tokens;         // counted tokens of each user turn
  bool exact = false;                   // counts are the server tokenizer's
};

struct WorkloadOptions {
  std::string kind = "random";  // random | agent | multiturn | dataset
  int num_prompts = 8;          // requests in all (multiturn: split into sessions of `turns`)
  int input_len = 512;
  int output_len = 128;
  int shared_prefix_len = 0;
  int turns = 4;
  int turn_len = 64;
  std::string dataset;  // JSONL file (kind dataset)
  uint64_t seed = 0;
};

// Errors: InvalidArgument (unknown kind, bad lengths, dataset file unreadable or malformed,
// naming the file and line).
Result<std::vector<Session>> BuildWorkload(const WorkloadOptions& o, const TokenCounter& counter);

// The number of requests (turns) in `sessions`.
int CountRequests(const std::vector<Session>& sessions);

}  // namespace herd::bench
