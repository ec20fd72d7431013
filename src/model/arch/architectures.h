// The built-in architectures. Adding one: a new file in model/arch/ defining
// Register<Name>Architecture(), plus one line here and one in architectures.cc.
#pragma once

namespace herd {

void RegisterLlamaArchitecture();  // arch/llama.cc

// Called once by LoadModel / RegisteredArchitectures.
void RegisterBuiltinArchitectures();

}  // namespace herd
