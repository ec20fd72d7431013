#include "http/router.h"

#include <exception>

#include "base/log.h"

namespace herd {

namespace {

// Splits "/a/b/c" into {"a","b","c"}; "/" gives {}; a trailing slash gives a trailing "".
std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace

Router::Router() {
  error_formatter_ = [](int status, std::string_view message, const HttpRequest&) {
    return HttpResponse::Json(status, GenericErrorJson(status, message));
  };
}

void Router::Add(std::string_view method, std::string_view pattern, HttpHandler handler) {
  Route route;
  route.method = std::string(method);
  route.pattern = std::string(pattern);
  route.handler = std::move(handler);
  std::string_view p = pattern;
  if (p.size() >= 2 && p.substr(p.size() - 2) == "/*") {
    route.prefix = true;
    p.remove_suffix(2);
  }
  for (std::string_view seg : SplitPath(p)) {
    Segment s;
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      s.is_param = true;
      s.text = std::string(seg.substr(1, seg.size() - 2));
    } else {
      s.text = std::string(seg);
    }
    route.segments.push_back(std::move(s));
  }
  routes_.push_back(std::move(route));
}

bool Router::Match(const Route& route, std::string_view path,
                   std::vector<std::pair<std::string, std::string>>* params) {
  std::vector<std::pair<std::string, std::string>> captured;
  std::string_view rest = path;
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  for (size_t i = 0; i < route.segments.size(); ++i) {
    size_t slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    bool last_in_path = slash == std::string_view::npos;
    const Segment& s = route.segments[i];
    if (s.is_param) {
      if (seg.empty()) return false;
      captured.emplace_back(s.text, PercentDecode(seg, false));
    } else if (seg != s.text) {
      return false;
    }
    if (last_in_path) {
      if (i + 1 != route.segments.size()) return false;  // path shorter than pattern
      rest = {};
      // "/static" matches the prefix route "/static/*" with an empty rest.
      if (route.prefix) captured.emplace_back("*", "");
      params->insert(params->end(), captured.begin(), captured.end());
      return true;
    }
    rest = rest.substr(slash + 1);
  }
  if (route.segments.empty() && !route.prefix) {
    // The root pattern "/" matches only "/" (or "").
    if (!rest.empty()) return false;
  } else if (!route.prefix) {
    return false;  // the path has more segments than the pattern
  }
  if (route.prefix) captured.emplace_back("*", std::string(rest));
  params->insert(params->end(), captured.begin(), captured.end());
  return true;
}

HttpResponse Router::FormatError(int status, std::string_view message, const HttpRequest& request) const {
  try {
    return error_formatter_(status, message, request);
  } catch (const std::exception& e) {
    HERD_LOG(kError, "http: error formatter threw: %s", e.what());
  } catch (...) {
    HERD_LOG(kError, "http: error formatter threw");
  }
  return HttpResponse::Json(status, GenericErrorJson(status, message));
}

void Router::Dispatch(HttpRequest& request, const std::shared_ptr<Responder>& original) const {
  const Route* found = nullptr;
  const Route* get_fallback = nullptr;
  std::string allow;
  for (const Route& route : routes_) {
    std::vector<std::pair<std::string, std::string>> params;
    if (!Match(route, request.path, &params)) continue;
    if (route.method == request.method) {
      found = &route;
      request.path_params = std::move(params);
      break;
    }
    if (request.method == "HEAD" && route.method == "GET" && !get_fallback) {
      get_fallback = &route;
      request.path_params = std::move(params);
    }
    if (allow.find(route.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + route.method;
  }
  if (!found) found = get_fallback;
  std::shared_ptr<Responder> responder = original;
  if (wrap_) responder = wrap_(request, found ? std::string_view(found->pattern) : std::string_view(), original);
  try {
    if (found) {
      found->handler(request, responder);
    } else if (!allow.empty()) {
      HttpResponse r = FormatError(405, "method " + request.method + " not allowed for " + request.path, request);
      r.headers.Set("Allow", allow);
      responder->Respond(std::move(r));
    } else if (not_found_) {
      not_found_(request, responder);
    } else {
      responder->Respond(FormatError(404, "no route for " + request.method + " " + request.path, request));
    }
  } catch (const std::exception& e) {
    HERD_LOG(kError, "http: handler for %s %s threw: %s", request.method.c_str(), request.path.c_str(), e.what());
    responder->Respond(FormatError(500, "internal error", request));
  } catch (...) {
    HERD_LOG(kError, "http: handler for %s %s threw", request.method.c_str(), request.path.c_str());
    responder->Respond(FormatError(500, "internal error", request));
  }
}

}  // namespace herd
