// Engine-internal state of one submitted request (engine thread only, except `stream`).
#pragma once

#include <memory>
#include <vector>

#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/sequence.h"

namespace herd {

struct RequestState {
  RequestId id = 0;
  GenerationRequest request;  // prompt after truncation; sampling.stop_tokens completed
  std::shared_ptr<RequestStream> stream;
  std::vector<std::unique_ptr<Sequence>> choices;  // [0] runs the prompt; the others fork from it
  int32_t n_finished = 0;
  bool forked = false;
  std::vector<bool> pinned;  // per request.pins entry: applied
  RequestTimings timings;
};

}  // namespace herd
