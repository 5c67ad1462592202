#pragma once
// Parsers that turn the output of the hardware tools a workflow step runs on a host
// (nvidia-smi, dcgmi, ...) into normalized JSON that workflow checks and kilnd can read.
// The normalized schemas are documented, with examples, in agents/parsers/README.md.
//
// All functions are pure (no I/O except runParseCommand's streams) and thread-safe.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::parsers {

enum class Format { kNvidiaSmiXml, kDcgmDiagJson, kDcgmNvlinkJson, kJson, kKeyValue };

// Bounds on what any parser accepts (README.md "Limits"). Real outputs are far below them: a
// 72-GPU host's `nvidia-smi -q -x` is under 1 MiB, dcgmi JSON nests under 10 levels.
// kMaxInputBytes equals the agent's parse_capture_cap (agents/agent/agent.h).
inline constexpr std::size_t kMaxInputBytes = 16u << 20;  // 16 MiB
inline constexpr std::size_t kMaxNestingDepth = 128;      // JSON arrays/objects, XML elements
inline constexpr std::size_t kMaxJsonValues = 1u << 18;   // 262,144 values in one JSON document

// Names used in workflow YAML `parse:` and on the CLI: "nvidia-smi-xml", "dcgmi-diag-json",
// "dcgmi-nvlink-json", "json", "key-value".
// formatFromName: kInvalidArgument naming the known formats when `name` is not one of them.
kiln::Result<Format> formatFromName(std::string_view name);
std::string_view formatName(Format format);
// Every format name, in the order of the Format enum.
std::vector<std::string_view> formatNames();

// Parses a tool's output (`text`, as the tool printed it).
// On output it cannot read (including empty or blank text, text over kMaxInputBytes, nesting
// deeper than kMaxNestingDepth, JSON with more than kMaxJsonValues values, XML with more than
// 524,288 tags, an XML DOCTYPE with an internal subset):
// ErrorCode::kInvalidContent whose message (one line) names the first problem,
// prefixed by what was being read, e.g. "nvidia-smi XML: <gpu> 1 has no <uuid>" or
// "dcgmi diag JSON: line 3 column 5: syntax error ...". Strings in the result are valid UTF-8
// (invalid bytes in the tool's output become U+FFFD).
kiln::Result<nlohmann::json> parse(Format format, std::string_view text);

// The `kiln-agent parse FORMAT [FILE]` sub-command. `args` are the sub-command's arguments
// (FORMAT and optionally FILE; FILE "-" or absent means `in`). Prints the normalized JSON
// (indented, one trailing newline) to `out` and returns 0. On an unknown format, wrong
// arguments, an unreadable file or output the parser rejects: a one-line message to `err`,
// returns 2. Input is read up to kMaxInputBytes + 1 bytes and no further: a larger input is
// refused without being read whole. `-h`/`--help` prints usage to `out` and returns 0.
int runParseCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                    std::ostream& err);

}  // namespace kiln::parsers
