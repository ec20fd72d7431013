// JSON mode through the engine on the tiny random-weight model: every choice's text is a JSON
// object (finish stop) or, cut by max_tokens, a valid prefix of one (finish length); n > 1
// choices fork the constraint; json mode takes part in coalescing decisions.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "sampling/json_recognizer.h"

namespace herd {
namespace {

using testing::EngineSetup;
using testing::Fixture;
using testing::Make;
using testing::Prompt;

struct Choice {
  std::string text;
  std::vector<int32_t> tokens;
  EngineEvent finish;
};

std::map<int32_t, Choice> Drain(RequestStream& s) {
  std::map<int32_t, Choice> out;
  EngineEvent ev;
  while (s.TryNext(&ev)) {
    Choice& c = out[ev.index];
    c.text += ev.text;
    if (ev.kind == EngineEvent::Kind::kToken) {
      c.tokens.push_back(ev.token);
    } else {
      c.finish = ev;
    }
  }
  EXPECT_TRUE(s.ended());
  return out;
}

void RunToIdle(Engine& e) {
  for (int n = 0; e.Busy(); ++n) {
    e.Step();
    e.CheckInvariants();
    ASSERT_LT(n, 100000) << "engine does not finish";
  }
}

// Token ids of the built-in vocabulary's byte tokens <0xNN> (3 + byte) for the closers: a bias
// on them makes the random model close strings and containers, so documents finish.
std::vector<std::pair<int32_t, float>> CloserBias(float bias) {
  return {{3 + '"', bias}, {3 + '}', bias / 2}, {3 + ']', bias / 2}};
}

// A stop must be a complete object (checked by nlohmann::json, independent of herd's
// recognizer); a length finish must be a prefix herd's recognizer accepts.
void ExpectJson(const Choice& c, int32_t max_tokens) {
  if (c.finish.finish == FinishReason::kStop) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(c.text);
    } catch (const nlohmann::json::exception& e) {
      FAIL() << e.what() << "\n" << c.text;
    }
    EXPECT_TRUE(j.is_object()) << c.text;
    EXPECT_LE(c.finish.usage.completion_tokens, max_tokens);
  } else {
    ASSERT_EQ(c.finish.finish, FinishReason::kLength) << c.finish.error.ToString();
    EXPECT_EQ(c.finish.usage.completion_tokens, max_tokens);
    JsonRecognizer r;
    EXPECT_TRUE(r.Feed(c.text)) << c.text;
    EXPECT_FALSE(r.complete()) << c.text;
  }
}

TEST(EngineJsonTest, EveryChoiceIsAJsonObjectOrAValidPrefix) {
  Fixture f = Make(EngineSetup{});
  const int32_t n_vocab = f.model->config().n_vocab;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r;
    r.prompt = Prompt(10 + i, 300 + i, n_vocab);
    r.max_tokens = 150;
    r.json_mode = true;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 1.0f;
    r.sampling.seed = static_cast<uint64_t>(i);
    if (i < 6) r.sampling.logit_bias = CloserBias(3.0f);  // these finish; the last two may not
    if (i == 1) r.n = 3;
    reqs.push_back(r);
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) {
    auto s = f.engine->Submit(r);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    streams.push_back(*s);
  }
  RunToIdle(*f.engine);
  int stops = 0;
  std::set<std::string> forked_texts;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto choices = Drain(*streams[i]);
    ASSERT_EQ(choices.size(), static_cast<size_t>(reqs[i].n));
    for (const auto& [index, c] : choices) {
      SCOPED_TRACE("request " + std::to_string(i) + " choice " + std::to_string(index));
      ExpectJson(c, reqs[i].max_tokens);
      stops += c.finish.finish == FinishReason::kStop ? 1 : 0;
      // The text streamed token by token is the detokenized tokens: nothing held back or lost.
      EXPECT_EQ(c.text, f.tokenizer->Decode(c.tokens, {false, false}));
      if (i < 6) {
        EXPECT_EQ(c.finish.finish, FinishReason::kStop) << c.text;
      }
      if (i == 1) forked_texts.insert(c.text);
    }
  }
  EXPECT_GE(stops, 8);
  EXPECT_GE(forked_texts.size(), 2u);  // n = 3 sampled choices: each its own constraint state
  EXPECT_EQ(f.engine->kv().free_blocks(), 64);
}

TEST(EngineJsonTest, JsonModeIsPartOfTheCoalescingKeyAndNeedsATokenizer) {
  Fixture f = Make(EngineSetup{});
  GenerationRequest plain;
  plain.prompt = Prompt(16, 5, f.model->config().n_vocab);
  plain.sampling.temperature = 0.0f;
  plain.max_tokens = 40;
  plain.sampling.logit_bias = CloserBias(4.0f);
  GenerationRequest json = plain;
  json.json_mode = true;
  auto a = f.engine->Submit(plain);
  auto b = f.engine->Submit(json);
  auto c = f.engine->Submit(json);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  RunToIdle(*f.engine);
  EXPECT_EQ(f.engine->stats().coalesced, 1);  // c joined b; a did not
  const Choice pa = Drain(**a).at(0), pb = Drain(**b).at(0), pc = Drain(**c).at(0);
  EXPECT_EQ(pb.tokens, pc.tokens);
  EXPECT_NE(pa.tokens, pb.tokens);
  ExpectJson(pb, json.max_tokens);

  // Without a tokenizer the engine cannot know token bytes.
  Fixture bare = Make(EngineSetup{});
  EngineOptions o;
  auto engine = Engine::Create(bare.model.get(), bare.cache.get(), nullptr, o);
  ASSERT_TRUE(engine.ok());
  auto refused = (*engine)->Submit(json);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("JSON mode needs a tokenizer"), std::string::npos);
}

TEST(EngineJsonTest, LogitBiasThatBansEveryAllowedTokenIsAnError) {
  Fixture f = Make(EngineSetup{});
  GenerationRequest r;
  r.prompt = Prompt(8, 9, f.model->config().n_vocab);
  r.max_tokens = 10;
  r.json_mode = true;
  // At the start only whitespace and '{' are allowed: ban the '{' pieces and whitespace bytes.
  const float ban = -std::numeric_limits<float>::infinity();
  for (int32_t id = 0; id < f.tokenizer->n_tokens(); ++id) {
    const std::string p = f.tokenizer->TokenToPiece(id);
    if (!p.empty() && (p[0] == '{' || p[0] == ' ' || p[0] == '\n' || p[0] == '\t' || p[0] == '\r')) {
      r.sampling.logit_bias.push_back({id, ban});
    }
  }
  auto s = f.engine->Submit(r);
  ASSERT_TRUE(s.ok());
  RunToIdle(*f.engine);
  const Choice c = Drain(**s).at(0);
  EXPECT_EQ(c.finish.finish, FinishReason::kError);
  EXPECT_NE(c.finish.error.message().find("logit_bias"), std::string::npos) << c.finish.error.ToString();
  EXPECT_TRUE(c.tokens.empty());
}

}  // namespace
}  // namespace herd
