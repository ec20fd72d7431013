// herd make-model --shape NAME --type TYPE [--vocab VOCAB.gguf] -o OUT.gguf [--seed S]
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "model/make_model.h"
#include "model/model_shapes.h"

namespace herd::cli {

void AddMakeModelCommand(CLI::App& app) {
  auto opts = std::make_shared<MakeModelOptions>();
  std::string shapes, types;
  for (const auto& s : ModelShapeNames()) shapes += (shapes.empty() ? "" : ", ") + s;
  for (const auto& t : FileTypeNames()) types += (types.empty() ? "" : ", ") + t;
  CLI::App* cmd = app.add_subcommand("make-model", "Write a GGUF model with seeded random weights in a real shape");
  cmd->add_option("--shape", opts->shape, "Model shape: " + shapes)->capture_default_str();
  cmd->add_option("--type", opts->file_type, "File type: " + types)->capture_default_str();
  cmd->add_option("--vocab", opts->vocab_path, "GGUF file whose tokenizer.* metadata is copied (default: built-in)");
  cmd->add_option("-o,--output", opts->output_path, "Output .gguf path")->required();
  cmd->add_option("--seed", opts->seed, "Random seed")->capture_default_str();
  cmd->add_option("-t,--threads", opts->threads, "Threads (0 = all cores)");
  cmd->callback([opts] {
    Status s = MakeRandomModel(*opts);
    if (!s.ok()) Fail(s.message());
    std::printf("wrote %s\n", opts->output_path.c_str());
  });
}

}  // namespace herd::cli
