#include "server/ollama_admin_routes.h"

namespace herd::server {

void AddOllamaAdminRoutes(Router&, ModelRegistry&, const ApiKeys*) {}

}  // namespace herd::server
