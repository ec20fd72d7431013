#include "http/responder.h"

namespace herd {

bool ResponseStream::WriteSse(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(event.size() + data.size() + 24);
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  // Each line of data is its own data: field; the client joins them with '\n'.
  size_t start = 0;
  while (true) {
    size_t nl = data.find('\n', start);
    out += "data: ";
    out += data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return Write(out);
}

bool ResponseStream::WriteSseData(std::string_view data) { return WriteSse({}, data); }

bool ResponseStream::WriteSseComment(std::string_view text) {
  std::string out = ": ";
  out += text;
  out += "\n\n";
  return Write(out);
}

bool ResponseStream::WriteNdjson(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 1);
  out += json;
  out += '\n';
  return Write(out);
}

std::shared_ptr<ResponseStream> Responder::StartSse(int status, Headers extra) {
  extra.Set("Content-Type", "text/event-stream");
  if (!extra.Has("Cache-Control")) extra.Set("Cache-Control", "no-cache");
  return StartStream(status, std::move(extra));
}

std::shared_ptr<ResponseStream> Responder::StartNdjson(int status, Headers extra) {
  extra.Set("Content-Type", "application/x-ndjson");
  return StartStream(status, std::move(extra));
}

}  // namespace herd
