// Test helper: checks a JSON value against a schema of the published OpenAI OpenAPI file
// (../shared/specs/openai-openapi.json). Covers the keywords the response schemas use: $ref,
// type (incl. null and OpenAPI 3.0 nullable), required, properties, items, enum, anyOf / oneOf (one branch must match),
// allOf. Unknown keywords are ignored; extra properties are allowed, as in the spec.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace herd::openai::testing {

class OpenApiSpec {
 public:
  // Loads the spec file; aborts the test binary with a message if it cannot.
  static const OpenApiSpec& Get();
  // Errors ("$.choices[0].message.refusal: required") for `value` against components.schemas[name].
  std::vector<std::string> Check(const nlohmann::json& value, const std::string& schema_name) const;

 private:
  void CheckNode(const nlohmann::json& v, const nlohmann::json& schema, const std::string& path,
                 std::vector<std::string>* errors, int depth) const;
  const nlohmann::json& Resolve(const nlohmann::json& schema) const;
  nlohmann::json spec_;
};

}  // namespace herd::openai::testing
