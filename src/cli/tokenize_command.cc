// `herd tokenize -m FILE [--ids] [--add-special] [--parse-special]`: tokenizes stdin (or -p)
// with the vocabulary of a GGUF file. Output: ids space-separated on one line (--ids), or one
// line per token "ID 'PIECE'" with the piece's bytes escaped where they are not printable
// text. Defaults follow the vocabulary fixtures: no BOS/EOS added, special tokens not parsed.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace herd::cli {
namespace {

// Printable UTF-8 is kept; quotes, backslashes, control characters and bytes that are not
// part of a valid character are escaped, so every token stays on one line.
std::string Escape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = unicode::DecodeUtf8(s.data() + i, s.size() - i, &len);
    char buf[8];
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\\' || cp == '\'') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == unicode::kInvalid || cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
    } else {
      out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app) {
  struct Options {
    std::string model;
    std::string prompt;
    bool ids = false;
    bool add_special = false;
    bool parse_special = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Tokenize text from stdin with a GGUF file's vocabulary");
  cmd->add_option("-m,--model", opts->model, "GGUF file (a model or a vocabulary-only file)")->required();
  cmd->add_option("-p,--prompt", opts->prompt, "Text to tokenize instead of stdin");
  cmd->add_flag("--ids", opts->ids, "Print only the ids, space-separated on one line");
  cmd->add_flag("--add-special", opts->add_special, "Add BOS/EOS (/SEP) as the vocabulary's flags say");
  cmd->add_flag("--parse-special", opts->parse_special, "Match control tokens (e.g. <s>, <|eot_id|>) in the text");
  cmd->callback([opts, cmd] {
    auto file = GgufFile::Open(opts->model);
    if (!file.ok()) Fail(file.status().message());
    auto tok = Tokenizer::FromGguf(**file);
    if (!tok.ok()) Fail(tok.status().message());
    std::string text;
    if (cmd->count("--prompt") > 0) {
      text = opts->prompt;
    } else {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    std::vector<TokenId> ids = (*tok)->Encode(text, opts->add_special, opts->parse_special);
    std::string out;
    if (opts->ids) {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ' ';
        out += std::to_string(ids[i]);
      }
      out += '\n';
    } else {
      for (TokenId id : ids) {
        out += std::to_string(id) + " '" + Escape((*tok)->TokenToPiece(id, /*render_special=*/true)) + "'\n";
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace herd::cli
