// Maps method + path to handlers. Routes are fixed before the server starts; Dispatch is
// then const and safe from any number of I/O threads.
//
// Patterns:
//   "/v1/models"        exact path
//   "/v1/models/{id}"   a {name} segment matches one non-empty path segment (percent-decoded
//                       into request.path_params)
//   "/static/*"         prefix: matches "/static/" and everything below; the rest of the
//                       path (not decoded) is the path parameter "*"
// Routes are tried in registration order; the first whose pattern and method match wins.
// A HEAD request falls back to the GET route of the same path (the server drops the body).
// A path that matches with another method only gets 405 with an Allow header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_message.h"
#include "http/responder.h"

namespace herd {

// Handlers run on an I/O thread and must not block: long work (generation) answers later
// through the Responder from another thread. A handler that throws gets a 500 (the
// exception's what() goes to the log, not to the client).
using HttpHandler = std::function<void(HttpRequest& request, std::shared_ptr<Responder> responder)>;

// Builds the response for an error the transport or router produced (400 malformed, 404,
// 405, 408, 413, 431, 500, 503). `request` holds whatever was parsed (possibly only the
// method and path, or nothing for garbage). Must not throw.
using HttpErrorFormatter =
    std::function<HttpResponse(int status, std::string_view message, const HttpRequest& request)>;

// Sees every dispatched request before its handler (request counters, access logs): gets the
// request, the pattern of the route that matched ("" when none did: the 404/405 answers) and the
// responder, and returns the responder the handler answers through — the same one, or a wrapper
// that observes the answer and forwards it. Runs on the I/O thread; must not block or throw.
// Transport errors answered before routing (400 unparseable, 408, 413, 431, 503) bypass it.
using HttpResponderWrap = std::function<std::shared_ptr<Responder>(const HttpRequest& request, std::string_view pattern,
                                                                   std::shared_ptr<Responder> responder)>;

class Router {
 public:
  Router();

  void Add(std::string_view method, std::string_view pattern, HttpHandler handler);
  void Get(std::string_view pattern, HttpHandler h) { Add("GET", pattern, std::move(h)); }
  void Post(std::string_view pattern, HttpHandler h) { Add("POST", pattern, std::move(h)); }

  // Called when no route matches the path (default: error formatter's 404).
  void SetNotFound(HttpHandler handler) { not_found_ = std::move(handler); }
  // Shapes every transport/router error (default: GenericErrorJson).
  void SetErrorFormatter(HttpErrorFormatter formatter) { error_formatter_ = std::move(formatter); }
  // Wraps every dispatched request's responder (see HttpResponderWrap); replaces an earlier one.
  void SetResponderWrap(HttpResponderWrap wrap) { wrap_ = std::move(wrap); }

  // Finds the route, fills request.path_params, runs the handler (catching exceptions).
  void Dispatch(HttpRequest& request, const std::shared_ptr<Responder>& responder) const;

  HttpResponse FormatError(int status, std::string_view message, const HttpRequest& request) const;

 private:
  struct Segment {
    std::string text;
    bool is_param = false;
  };
  struct Route {
    std::string method;
    std::string pattern;  // as registered
    std::vector<Segment> segments;
    bool prefix = false;  // pattern ended in "/*"
    HttpHandler handler;
  };

  // Matches `path` against `route`; on success appends the captures to `params`.
  static bool Match(const Route& route, std::string_view path,
                    std::vector<std::pair<std::string, std::string>>* params);

  std::vector<Route> routes_;
  HttpHandler not_found_;
  HttpErrorFormatter error_formatter_;
  HttpResponderWrap wrap_;
};

}  // namespace herd
