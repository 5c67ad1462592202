#include "orchestrator/workflow/substitute.h"

#include <cctype>

namespace kiln::workflow {
namespace {

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

struct Piece {
  bool is_ref = false;
  std::string text;  // literal text, or the reference name
};

kiln::Result<std::vector<Piece>> split(std::string_view text) {
  std::vector<Piece> pieces;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      pieces.push_back({false, std::string(text.substr(pos))});
      break;
    }
    if (open > pos) pieces.push_back({false, std::string(text.substr(pos, open - pos))});
    std::size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return kiln::invalidContent("unclosed \"{{\" in \"" + std::string(text) + "\"");
    }
    std::string_view name = trim(text.substr(open + 2, close - open - 2));
    if (name.empty()) return kiln::invalidContent("empty \"{{}}\" in \"" + std::string(text) + "\"");
    for (char c : name) {
      if (!isNameChar(c)) {
        return kiln::invalidContent("bad reference \"{{" + std::string(name) + "}}\": names use "
                                    "letters, digits, '_', '-' and '.'");
      }
    }
    pieces.push_back({true, std::string(name)});
    pos = close + 2;
  }
  return pieces;
}

bool isContextName(std::string_view name) {
  return name.starts_with("host.") || name.starts_with("pod.");
}

}  // namespace

kiln::Result<std::vector<std::string>> templateNames(std::string_view text) {
  auto pieces = split(text);
  if (!pieces.ok()) return pieces.error();
  std::vector<std::string> names;
  for (const auto& p : *pieces) {
    if (p.is_ref) names.push_back(p.text);
  }
  return names;
}

kiln::Result<std::string> substitute(std::string_view text, const ParamValues& params,
                                     const ContextFields& fields) {
  auto pieces = split(text);
  if (!pieces.ok()) return pieces.error();
  std::string out;
  for (const auto& p : *pieces) {
    if (!p.is_ref) {
      out += p.text;
      continue;
    }
    const auto& source = isContextName(p.text) ? fields : params;
    auto it = source.find(p.text);
    if (it == source.end()) {
      return kiln::invalidArgument("unknown reference \"{{" + p.text + "}}\"" +
                                   (isContextName(p.text) ? " (no such host/pod field)"
                                                          : " (no such parameter)"));
    }
    out += it->second;
  }
  return out;
}

kiln::Result<std::vector<std::string>> substituteArgv(const std::vector<std::string>& argv,
                                                      const ParamValues& params,
                                                      const ContextFields& fields) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) {
    auto s = substitute(argv[i], params, fields);
    if (!s.ok()) {
      kiln::Error e = s.error();
      e.message = "argv[" + std::to_string(i) + "]: " + e.message;
      return e;
    }
    out.push_back(std::move(s.value()));
  }
  return out;
}

kiln::Result<bool> evaluateWhen(std::string_view when, const ParamValues& params,
                                const ContextFields& fields) {
  if (when.empty()) return true;
  auto s = substitute(when, params, fields);
  if (!s.ok()) return s.error();
  std::string_view v = trim(*s);
  return !(v.empty() || v == "false" || v == "0");
}

std::string soleReference(std::string_view text) {
  auto pieces = split(text);
  if (!pieces.ok() || pieces->size() != 1 || !(*pieces)[0].is_ref) return {};
  return (*pieces)[0].text;
}

}  // namespace kiln::workflow
