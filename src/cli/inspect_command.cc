// `herd inspect FILE.gguf`: header, metadata, tensor table and a summary of a GGUF file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "io/gguf.h"

namespace herd::cli {

namespace {

constexpr size_t kMaxArrayItems = 8;     // arrays print their first items, then "... (N items)"
constexpr size_t kMaxStringBytes = 160;  // long strings (chat templates) are cut

std::string Shape(const GgufTensorInfo& t) {  // outermost first, as people read shapes
  std::string s = "[";
  for (size_t d = t.ne.size(); d-- > 0;) {
    s += std::to_string(t.ne[d]);
    if (d > 0) s += ", ";
  }
  return s + "]";
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string HumanCount(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof(buf), "%.2f B", n / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof(buf), "%.2f M", n / 1e6);
  } else if (n >= 1000ull) {
    std::snprintf(buf, sizeof(buf), "%.2f K", n / 1e3);
  } else {
    return std::to_string(n);
  }
  return buf;
}

}  // namespace

// Prints the file description to `out`; the tensor table only when `tensors` is true (the
// summary always). Long arrays and strings are abbreviated.
void PrintGgufSummary(const GgufFile& file, std::ostream& out, bool tensors) {
  out << "file:       " << file.path() << "\n";
  out << "size:       " << file.file_size() << " bytes (" << HumanBytes(file.file_size()) << ")\n";
  out << "version:    " << file.version() << "\n";
  out << "alignment:  " << file.alignment() << "\n";
  if (!file.tensors().empty()) out << "data:       offset " << file.data_offset() << "\n";

  size_t key_w = 3, type_w = 4;
  for (const auto& [key, value] : file.metadata()) {
    key_w = std::max(key_w, key.size());
    type_w = std::max(type_w, value.TypeString().size());
  }
  out << "\nmetadata (" << file.metadata().size() << " keys):\n";
  for (const auto& [key, value] : file.metadata()) {
    out << "  " << Pad(key, key_w) << "  " << Pad(value.TypeString(), type_w) << "  "
        << value.ToString(kMaxArrayItems, kMaxStringBytes) << "\n";
  }

  uint64_t params = 0, bytes = 0;
  std::map<std::string, size_t> per_type;
  for (const GgufTensorInfo& t : file.tensors()) {
    uint64_t n = 1;
    for (int64_t d : t.ne) n *= static_cast<uint64_t>(d);
    params += n;
    bytes += t.bytes;
    ++per_type[std::string(DTypeName(t.type))];
  }

  if (tensors && !file.tensors().empty()) {
    size_t name_w = 4, shape_w = 5;
    for (const GgufTensorInfo& t : file.tensors()) {
      name_w = std::max(name_w, t.name.size());
      shape_w = std::max(shape_w, Shape(t).size());
    }
    out << "\ntensors (" << file.tensors().size() << "):\n";
    out << "  " << Pad("name", name_w) << "  " << Pad("type", 5) << "  " << Pad("shape", shape_w) << "  bytes\n";
    for (const GgufTensorInfo& t : file.tensors()) {
      out << "  " << Pad(t.name, name_w) << "  " << Pad(std::string(DTypeName(t.type)), 5) << "  "
          << Pad(Shape(t), shape_w) << "  " << t.bytes << "\n";
    }
  }

  out << "\nsummary:\n";
  out << "  tensors:          " << file.tensors().size() << "\n";
  out << "  parameters:       " << params << " (" << HumanCount(params) << ")\n";
  out << "  tensor bytes:     " << bytes << " (" << HumanBytes(bytes) << ")\n";
  if (params > 0) {
    char bpw[32];
    std::snprintf(bpw, sizeof(bpw), "%.3f", static_cast<double>(bytes) * 8.0 / static_cast<double>(params));
    out << "  bits per weight:  " << bpw << "\n";
  }
  if (!per_type.empty()) {
    std::string list;
    for (const auto& [name, count] : per_type) list += (list.empty() ? "" : ", ") + name + ": " + std::to_string(count);
    out << "  types:            " << list << "\n";
  }
}

void AddInspectCommand(CLI::App& app) {
  struct Options {
    std::string path;
    bool no_tensors = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print a GGUF file's metadata, tensor table and summary");
  cmd->add_option("file", opts->path, "GGUF file")->required();
  cmd->add_flag("--no-tensors", opts->no_tensors, "Omit the tensor table (the summary is still printed)");
  cmd->callback([opts] {
    auto file = GgufFile::Open(opts->path);
    if (!file.ok()) Fail(file.status().message());
    PrintGgufSummary(**file, std::cout, !opts->no_tensors);
  });
}

}  // namespace herd::cli
