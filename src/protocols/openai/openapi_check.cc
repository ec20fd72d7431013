#include "protocols/openai/openapi_check.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace herd::openai::testing {

using nlohmann::json;

const OpenApiSpec& OpenApiSpec::Get() {
  static const OpenApiSpec* spec = [] {
    auto* s = new OpenApiSpec;
    const std::string path = std::string(HERD_SHARED_DIR) + "/specs/openai-openapi.json";
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "cannot open %s\n", path.c_str());
      std::abort();
    }
    s->spec_ = json::parse(in);
    return s;
  }();
  return *spec;
}

const json& OpenApiSpec::Resolve(const json& schema) const {
  const json* s = &schema;
  while (s->is_object() && s->contains("$ref")) {
    const std::string ref = (*s)["$ref"].get<std::string>();
    const std::string prefix = "#/components/schemas/";
    if (ref.rfind(prefix, 0) != 0) break;
    s = &spec_["components"]["schemas"][ref.substr(prefix.size())];
  }
  return *s;
}

namespace {
bool TypeMatches(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return true;
}
}  // namespace

void OpenApiSpec::CheckNode(const json& v, const json& schema_in, const std::string& path,
                            std::vector<std::string>* errors, int depth) const {
  if (depth > 40) return;
  // OpenAPI 3.0 `nullable: true` (also beside a $ref) admits null.
  if (v.is_null() && schema_in.is_object() && schema_in.value("nullable", false)) return;
  const json& schema = Resolve(schema_in);
  if (v.is_null() && schema.is_object() && schema.value("nullable", false)) return;
  if (!schema.is_object()) return;
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key)) continue;
    bool any = false;
    std::vector<std::string> first_errors;
    for (const json& branch : schema[key]) {
      std::vector<std::string> e;
      CheckNode(v, branch, path, &e, depth + 1);
      if (e.empty()) {
        any = true;
        break;
      }
      if (first_errors.empty()) first_errors = e;
    }
    if (!any) errors->push_back(path + ": matches no branch of " + key + " (" + first_errors.front() + ")");
  }
  if (schema.contains("allOf")) {
    for (const json& branch : schema["allOf"]) CheckNode(v, branch, path, errors, depth + 1);
  }
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    if (t.is_string()) {
      ok = TypeMatches(v, t.get<std::string>());
    } else if (t.is_array()) {
      for (const json& x : t) ok = ok || TypeMatches(v, x.get<std::string>());
    } else {
      ok = true;
    }
    if (!ok) {
      errors->push_back(path + ": expected type " + t.dump() + ", got " + v.dump());
      return;
    }
  }
  if (schema.contains("enum") && !v.is_null()) {
    bool found = false;
    for (const json& e : schema["enum"]) found = found || e == v;
    if (!found) errors->push_back(path + ": " + v.dump() + " not in enum " + schema["enum"].dump());
  }
  if (v.is_object()) {
    if (schema.contains("required")) {
      for (const json& r : schema["required"]) {
        if (!v.contains(r.get<std::string>())) errors->push_back(path + "." + r.get<std::string>() + ": required");
      }
    }
    if (schema.contains("properties")) {
      for (const auto& [name, sub] : schema["properties"].items()) {
        if (v.contains(name)) CheckNode(v[name], sub, path + "." + name, errors, depth + 1);
      }
    }
  }
  if (v.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < v.size(); ++i) {
      CheckNode(v[i], schema["items"], path + "[" + std::to_string(i) + "]", errors, depth + 1);
    }
  }
}

std::vector<std::string> OpenApiSpec::Check(const json& value, const std::string& schema_name) const {
  std::vector<std::string> errors;
  if (!spec_["components"]["schemas"].contains(schema_name)) return {"no schema named " + schema_name};
  CheckNode(value, spec_["components"]["schemas"][schema_name], "$", &errors, 0);
  return errors;
}

}  // namespace herd::openai::testing
