#pragma once
// The Transport over kiln::http::Client: the only cli code besides main.cc that touches the
// HTTP client.

#include <memory>

#include "cli/settings.h"
#include "cli/transport.h"
#include "common/result.h"

namespace kiln::cli {

// Errors: kInvalidArgument when the client refuses the settings (a malformed URL).
Result<std::unique_ptr<Transport>> makeHttpTransport(const ConnectionSettings& settings);

}  // namespace kiln::cli
