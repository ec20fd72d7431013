#include "protocols/ollama/ollama_models.h"

#include <gtest/gtest.h>

namespace herd::ollama {
namespace {

using nlohmann::json;

TEST(OllamaModelsTest, ShowAcceptsModelOrLegacyName) {
  ShowRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseShowRequest(json{{"model", "llama3"}, {"verbose", true}}, &r, &e));
  EXPECT_EQ(r.model, "llama3");
  EXPECT_TRUE(r.verbose);
  ShowRequest legacy;
  ASSERT_TRUE(ParseShowRequest(json{{"name", "old:tag"}, {"unknown_field", 1}}, &legacy, &e));
  EXPECT_EQ(legacy.model, "old:tag");
  EXPECT_FALSE(legacy.verbose);
  EXPECT_FALSE(ParseShowRequest(json::object(), &r, &e));
  EXPECT_EQ(e.param, "model");
  EXPECT_FALSE(ParseShowRequest(json{{"model", 3}}, &r, &e));
  EXPECT_EQ(e.param, "model");
  EXPECT_FALSE(ParseShowRequest(json{{"model", "x"}, {"verbose", "yes"}}, &r, &e));
  EXPECT_EQ(e.param, "verbose");
  EXPECT_FALSE(ParseShowRequest(json::array(), &r, &e));
}

TEST(OllamaModelsTest, CopyDeletePull) {
  CopyRequest c;
  api::ApiError e;
  ASSERT_TRUE(ParseCopyRequest(json{{"source", "a"}, {"destination", "b"}}, &c, &e));
  EXPECT_EQ(c.source, "a");
  EXPECT_EQ(c.destination, "b");
  EXPECT_FALSE(ParseCopyRequest(json{{"source", "a"}}, &c, &e));
  EXPECT_EQ(e.param, "destination");
  std::string model;
  ASSERT_TRUE(ParseDeleteRequest(json{{"name", "x"}}, &model, &e));
  EXPECT_EQ(model, "x");
  PullRequest p;
  ASSERT_TRUE(ParsePullRequest(json{{"model", "host:5000/ns/m:t"}, {"insecure", true}, {"stream", false}}, &p, &e));
  EXPECT_EQ(p.model, "host:5000/ns/m:t");
  EXPECT_TRUE(p.insecure);
  EXPECT_FALSE(p.stream);
  PullRequest d;
  ASSERT_TRUE(ParsePullRequest(json{{"model", "m"}}, &d, &e));
  EXPECT_TRUE(d.stream);
  EXPECT_FALSE(d.insecure);
  EXPECT_FALSE(ParsePullRequest(json{{"model", "m"}, {"stream", 1}}, &d, &e));
  EXPECT_EQ(e.param, "stream");
}

TEST(OllamaModelsTest, HumanNumberAsOllamaPrintsParameterSizes) {
  EXPECT_EQ(HumanNumber(8030261248ULL), "8.0B");
  EXPECT_EQ(HumanNumber(7000000000ULL), "7B");
  EXPECT_EQ(HumanNumber(1235814400ULL), "1.2B");
  EXPECT_EQ(HumanNumber(999890000ULL), "999.89M");
  EXPECT_EQ(HumanNumber(135000000ULL), "135M");
  EXPECT_EQ(HumanNumber(12345), "12K");
  EXPECT_EQ(HumanNumber(999), "999");
}

TEST(OllamaModelsTest, Shapes) {
  EXPECT_EQ(Rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Rfc3339(1700000000), "2023-11-14T22:13:20Z");
  ModelDetails d;
  d.family = "llama";
  d.families = {"llama"};
  d.parameter_size = "1.2B";
  d.quantization_level = "Q4_K_M";
  EXPECT_EQ(DetailsJson(d).dump(),
            R"({"families":["llama"],"family":"llama","format":"gguf","parameter_size":"1.2B","parent_model":"",)"
            R"("quantization_level":"Q4_K_M"})");
  EXPECT_TRUE(DetailsJson(ModelDetails{})["families"].is_null());
  ShowResponse s;
  s.capabilities = {"completion"};
  const json show = ShowJson(s);
  for (const char* k :
       {"modelfile", "parameters", "template", "details", "model_info", "capabilities", "modified_at"}) {
    EXPECT_TRUE(show.contains(k)) << k;
  }
  EXPECT_FALSE(show.contains("license"));
  EXPECT_FALSE(show.contains("system"));
  RunningModel m;
  m.name = "x:latest";
  const json ps = PsJson({m});
  EXPECT_EQ(ps["models"][0]["model"], "x:latest");
  EXPECT_EQ(ps["models"][0]["size_vram"], 0);
  EXPECT_EQ(ProgressJson({"pulling manifest", "", 0, 0}).dump(), R"({"status":"pulling manifest"})");
  EXPECT_EQ(ProgressJson({"pulling 0123456789ab", "sha256:0123456789ab", 10, 4}).dump(),
            R"({"completed":4,"digest":"sha256:0123456789ab","status":"pulling 0123456789ab","total":10})");
}

}  // namespace
}  // namespace herd::ollama
