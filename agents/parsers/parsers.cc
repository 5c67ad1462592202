#include "agents/parsers/parsers.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

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
     << "FORMAT: " << joinedNames() << "\n";
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
    err << "kiln-agent parse: " << format.error().message << "\n";
    return 2;
  }
  std::string text;
  if (args.size() == 2 && args[1] != "-") {
    std::error_code ignored;  // a path that cannot be inspected fails to open below
    bool isDirectory = std::filesystem::is_directory(args[1], ignored);
    std::ifstream file(args[1], std::ios::binary);
    std::ostringstream contents;
    if (file && !isDirectory) contents << file.rdbuf();
    if (!file || isDirectory || file.bad()) {
      err << "kiln-agent parse: cannot read " << args[1] << "\n";
      return 2;
    }
    text = std::move(contents).str();
  } else {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  kiln::Result<nlohmann::json> parsed = parse(*format, text);
  if (!parsed) {
    err << "kiln-agent parse: " << parsed.error().message << "\n";
    return 2;
  }
  out << parsed->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace kiln::parsers
