// Logging: spdlog with levels, a per-run log file, and redaction of registered secrets.
//
// Every sink sits behind a redacting sink: any string registered with RegisterSecret (API keys,
// auth tokens, values interpolated from ${ENV}) is replaced by "<redacted>" before it reaches a
// terminal or a file.
#pragma once

#include <string>

#include "core/status.h"

namespace allot {

// "trace", "debug", "info", "warn", "error", "off".
Status SetupLogging(const std::string& level, const std::string& log_file = "");
// Adds a file sink to the current logger (e.g. once the run directory exists).
Status AddLogFile(const std::string& log_file);

// Secrets shorter than 4 characters are ignored: redacting them would mangle ordinary text.
void RegisterSecret(const std::string& secret);
std::string Redact(std::string text);

}  // namespace allot
