#include "http/http_message.h"

#include <cstdio>

#include "base/json_string.h"

namespace herd {

namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::optional<std::string_view> Headers::Get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (EqualsIgnoreCase(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

std::string Headers::GetOr(std::string_view name, std::string_view fallback) const {
  auto v = Get(name);
  return std::string(v ? *v : fallback);
}

void Headers::Set(std::string_view name, std::string_view value) {
  Remove(name);
  Add(name, value);
}

void Headers::Add(std::string_view name, std::string_view value) { fields_.emplace_back(name, value); }

void Headers::Remove(std::string_view name) {
  std::erase_if(fields_, [&](const auto& f) { return EqualsIgnoreCase(f.first, name); });
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::string HttpRequest::PathParam(std::string_view name) const {
  for (const auto& [n, v] : path_params) {
    if (n == name) return v;
  }
  return "";
}

std::optional<std::string> HttpRequest::QueryParam(std::string_view name) const {
  std::string_view q = query;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    if (key != name) continue;
    return eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1), true);
  }
  return std::nullopt;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "text/plain; charset=utf-8");
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 529: return "Site Overloaded";
    default: return "Unknown";
  }
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  AppendJsonEscaped(s, &out);
  return out;
}

std::string GenericErrorJson(int status, std::string_view message) {
  return "{\"error\":{\"code\":" + std::to_string(status) + ",\"message\":\"" + JsonEscape(message) + "\"}}";
}

}  // namespace herd
