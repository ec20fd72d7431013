#include "model/arch/architectures.h"

namespace herd {

void RegisterBuiltinArchitectures() { RegisterLlamaArchitecture(); }

}  // namespace herd
