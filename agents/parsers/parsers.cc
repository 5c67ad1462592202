#include "agents/parsers/parsers.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "agents/parsers/formats.h"
#include "agents/parsers/text_util.h"

namespace kiln::parsers {
namespace {

struct NamedFormat {
  Format format;
  std::string_view name;
};
constexpr std::array<NamedFormat, 5> kFormats = {{
    {Format::kNvidiaSmiXml, "nvidia-smi-xml"},
    {Format::kDcgmDiagJson, "dcgmi-diag-json"},
    {Format::kDcgmNvlinkJson, "dcgmi-nvlink-json"},
    {Format::kJson, "json"},
    {Format::kKeyValue, "key-value"},
}};

std::string joinedNames() {
  std::string joined;
  for (const NamedFormat& f : kFormats) {
    if (!joined.empty()) joined += ", ";
    joined += f.name;
  }
  return joined;
}

void printUsage(std::ostream& os) {
  os << "usage: kiln-agent parse FORMAT [FILE]\n"
     << "Reads a tool's output from FILE (or stdin) and prints it as normalized JSON.\n"
     << "FORMAT: " << joinedNames() << "\n"
     << "Refused with one line on stderr and exit 2: input over " << (kMaxInputBytes >> 20)
     << " MiB (not read past that), empty input, nesting deeper than " << kMaxNestingDepth
     << " levels, more than " << kMaxJsonValues << " JSON values or keys, XML entity declarations.\n";
}

// What each format calls itself in its messages.
std::string_view whatOf(Format format) {
  switch (format) {
    case Format::kNvidiaSmiXml: return "nvidia-smi XML";
    case Format::kDcgmDiagJson: return "dcgmi diag JSON";
    case Format::kDcgmNvlinkJson: return "dcgmi nvlink JSON";
    case Format::kJson: return "JSON";
    case Format::kKeyValue: return "key-value";
  }
  return "input";
}

std::string tooLargeMessage() {
  return "input is larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB (" +
         std::to_string(kMaxInputBytes) + " bytes), the limit of every parser";
}

// Reads `in` up to kMaxInputBytes + 1 bytes: one byte past the bound says it is too large
// without reading (or holding) the rest.
struct BoundedRead {
  std::string text;
  bool tooLarge = false;
  bool failed = false;
};

BoundedRead readBounded(std::istream& in) {
  BoundedRead result;
  constexpr std::size_t kChunk = 64 * 1024;
  // Untouched reserved pages cost no memory; growing by doubling would copy up to 16 MiB twice.
  result.text.reserve(kMaxInputBytes + 1);
  std::size_t want = kMaxInputBytes + 1;
  while (result.text.size() < want && in) {
    std::size_t before = result.text.size();
    std::size_t chunk = std::min(kChunk, want - before);
    result.text.resize(before + chunk);
    in.read(result.text.data() + before, static_cast<std::streamsize>(chunk));
    result.text.resize(before + static_cast<std::size_t>(in.gcount()));
  }
  result.failed = in.bad();
  result.tooLarge = result.text.size() > kMaxInputBytes;
  return result;
}

// Messages are printed on one line whatever the parser quoted.
std::string oneLine(std::string_view message) {
  std::string line = sanitizeUtf8(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

}  // namespace

kiln::Result<Format> formatFromName(std::string_view name) {
  for (const NamedFormat& f : kFormats) {
    if (f.name == name) return f.format;
  }
  return kiln::invalidArgument("unknown parse format \"" + sanitizeUtf8(name) +
                               "\" (known: " + joinedNames() + ")");
}

std::string_view formatName(Format format) {
  for (const NamedFormat& f : kFormats) {
    if (f.format == format) return f.name;
  }
  KILN_CHECK(false && "a Format without a name");
  return {};
}

std::vector<std::string_view> formatNames() {
  std::vector<std::string_view> names;
  for (const NamedFormat& f : kFormats) names.push_back(f.name);
  return names;
}

kiln::Result<nlohmann::json> parse(Format format, std::string_view text) {
  if (text.size() > kMaxInputBytes) {
    return kiln::invalidContent(std::string(whatOf(format)) + ": " + tooLargeMessage());
  }
  if (trim(text).empty()) {
    return kiln::invalidContent(std::string(whatOf(format)) + ": line 1 column 1: the output is empty");
  }
  switch (format) {
    case Format::kNvidiaSmiXml: return parseNvidiaSmiXml(text);
    case Format::kDcgmDiagJson: return parseDcgmDiagJson(text);
    case Format::kDcgmNvlinkJson: return parseDcgmNvlinkJson(text);
    case Format::kJson: return parseJsonText(text, "JSON");
    case Format::kKeyValue: return parseKeyValue(text);
  }
  KILN_CHECK(false && "unhandled Format");
  return kiln::internalError("unhandled format");
}

int runParseCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                    std::ostream& err) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    printUsage(out);
    return 0;
  }
  if (args.empty() || args.size() > 2) {
    printUsage(err);
    return 2;
  }
  kiln::Result<Format> format = formatFromName(args[0]);
  if (!format) {
    err << "kiln-agent parse: " << oneLine(format.error().message) << "\n";
    return 2;
  }
  BoundedRead input;
  if (args.size() == 2 && args[1] != "-") {
    std::error_code ignored;  // a path that cannot be inspected fails to open below
    bool isDirectory = std::filesystem::is_directory(args[1], ignored);
    std::error_code noSize;  // not a regular file (a pipe, /dev/stdin): the bounded read decides
    std::uintmax_t size = std::filesystem::file_size(args[1], noSize);
    if (!noSize && size > kMaxInputBytes) {
      err << "kiln-agent parse: " << tooLargeMessage() << "\n";  // refused without reading it
      return 2;
    }
    std::ifstream file(args[1], std::ios::binary);
    if (file && !isDirectory) input = readBounded(file);
    if (!file.is_open() || isDirectory || input.failed) {
      err << "kiln-agent parse: cannot read " << oneLine(args[1]) << "\n";
      return 2;
    }
  } else {
    input = readBounded(in);
    if (input.failed) {
      err << "kiln-agent parse: cannot read stdin\n";
      return 2;
    }
  }
  if (input.tooLarge) {
    err << "kiln-agent parse: " << tooLargeMessage() << "\n";
    return 2;
  }
  const std::string& text = input.text;
  kiln::Result<nlohmann::json> parsed = parse(*format, text);
  if (!parsed) {
    err << "kiln-agent parse: " << oneLine(parsed.error().message) << "\n";
    return 2;
  }
  out << parsed->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace kiln::parsers
