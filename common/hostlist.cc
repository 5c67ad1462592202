#include "common/hostlist.h"

#include <algorithm>
#include <cstdint>

namespace kiln {
namespace {

constexpr std::size_t kMaxDigits = 18;  // every number fits a uint64 with room for hi - lo + 1

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isSpaceOrControl(char c) { return c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string quoted(std::string_view s) {
  return "'" + (s.size() > 200 ? std::string(s.substr(0, 200)) + "..." : std::string(s)) + "'";
}

// One item of a bracket group: LO-HI printed at least `width` digits wide, or a single number
// kept as written (lo == hi, `text` set).
struct Item {
  std::uint64_t lo = 0, hi = 0;
  std::size_t width = 0;
  std::string text;
};

struct Group {
  std::vector<Item> items;
  std::uint64_t count = 0;  // names it stands for, saturated at limit + 1
};

// A name split at its groups: literals[0] group[0] literals[1] group[1] ... literals[n].
struct Pattern {
  std::vector<std::string> literals;
  std::vector<Group> groups;
};

std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b, std::uint64_t cap) { return a >= cap || b >= cap - a ? cap : a + b; }
std::uint64_t saturatingMul(std::uint64_t a, std::uint64_t b, std::uint64_t cap) {
  if (a == 0 || b == 0) return 0;
  return a > cap / b ? cap : std::min(a * b, cap);
}

Result<std::uint64_t> number(std::string_view digits, std::string_view name) {
  if (digits.empty()) return invalidArgument("hostlist name " + quoted(name) + ": a range needs a number on each side of '-'");
  for (char c : digits)
    if (!isDigit(c))
      return invalidArgument("hostlist name " + quoted(name) + ": " + quoted(digits) + " is not a number");
  if (digits.size() > kMaxDigits)
    return invalidArgument("hostlist name " + quoted(name) + ": " + quoted(digits) + " has more than " +
                           std::to_string(kMaxDigits) + " digits");
  std::uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

// "1-3,5,08-10" (the text between '[' and ']').
Result<Group> parseGroup(std::string_view body, std::string_view name, std::uint64_t cap) {
  if (body.empty()) return invalidArgument("hostlist name " + quoted(name) + " has an empty bracket group '[]'");
  Group g;
  std::size_t start = 0;
  while (true) {
    const auto comma = body.find(',', start);
    const std::string_view item = body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty())
      return invalidArgument("hostlist name " + quoted(name) + " has an empty item in [" + std::string(body) + "]");
    Item it;
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      auto v = number(item, name);
      if (!v.ok()) return v.error();
      it.lo = it.hi = *v;
      it.text = std::string(item);
    } else {
      const std::string_view lo_text = item.substr(0, dash), hi_text = item.substr(dash + 1);
      if (hi_text.find('-') != std::string_view::npos)
        return invalidArgument("hostlist name " + quoted(name) + ": " + quoted(item) + " is not a range (LO-HI)");
      auto lo = number(lo_text, name);
      if (!lo.ok()) return lo.error();
      auto hi = number(hi_text, name);
      if (!hi.ok()) return hi.error();
      if (*hi < *lo)
        return invalidArgument("hostlist name " + quoted(name) + ": range " + std::string(item) + " is reversed");
      it.lo = *lo;
      it.hi = *hi;
      it.width = lo_text.size();
    }
    g.count = saturatingAdd(g.count, it.hi - it.lo + 1, cap);
    g.items.push_back(std::move(it));
    if (comma == std::string_view::npos) return g;
    start = comma + 1;
  }
}

// One name (no commas outside brackets; brackets already known to balance and not nest).
Result<Pattern> parseName(std::string_view name, std::uint64_t cap) {
  Pattern p;
  std::size_t pos = 0;
  while (true) {
    const auto open = name.find('[', pos);
    p.literals.emplace_back(name.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (open == std::string_view::npos) return p;
    const auto close = name.find(']', open);
    auto g = parseGroup(name.substr(open + 1, close - open - 1), name, cap);
    if (!g.ok()) return g.error();
    p.groups.push_back(std::move(*g));
    pos = close + 1;
  }
}

std::string itemText(const Item& it, std::uint64_t v) {
  if (!it.text.empty()) return it.text;
  std::string s = std::to_string(v);
  if (s.size() < it.width) s.insert(0, it.width - s.size(), '0');
  return s;
}

void expandInto(const Pattern& p, std::vector<std::string>& out) {
  std::vector<std::string> names = {p.literals[0]};
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    std::vector<std::string> next;
    next.reserve(names.size() * p.groups[g].count);
    for (const auto& prefix : names)
      for (const auto& it : p.groups[g].items)
        for (std::uint64_t v = it.lo;; ++v) {
          next.push_back(prefix + itemText(it, v) + p.literals[g + 1]);
          if (v == it.hi) break;
        }
    names = std::move(next);
  }
  for (auto& n : names) out.push_back(std::move(n));
}

}  // namespace

Result<std::vector<std::string>> expandHostlist(std::string_view list, std::size_t limit) {
  while (!list.empty() && isSpaceOrControl(list.front())) list.remove_prefix(1);
  while (!list.empty() && isSpaceOrControl(list.back())) list.remove_suffix(1);
  if (list.empty()) return invalidArgument("the hostlist is empty");

  // Split at the commas outside brackets, checking the brackets on the way.
  std::vector<std::string_view> names;
  std::size_t start = 0, open_at = 0;
  bool in_group = false;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (isSpaceOrControl(c))
      return invalidArgument("hostlist " + quoted(list) + ": whitespace or a control character inside the list");
    if (c == '[') {
      if (in_group) return invalidArgument("hostlist " + quoted(list) + ": brackets cannot nest ('[' inside '[...]')");
      in_group = true;
      open_at = i;
    } else if (c == ']') {
      if (!in_group) return invalidArgument("hostlist " + quoted(list) + ": ']' without a '[' before it");
      in_group = false;
    } else if (c == ',' && !in_group) {
      if (i == start) return invalidArgument("hostlist " + quoted(list) + " has an empty name (a comma at an end, or two in a row)");
      names.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (in_group)
    return invalidArgument("hostlist " + quoted(list) + ": '[' in " + quoted(list.substr(open_at)) + " is never closed");

  const std::uint64_t cap = static_cast<std::uint64_t>(limit) + 1;
  std::vector<Pattern> patterns;
  std::uint64_t total = 0;
  for (auto name : names) {
    auto p = parseName(name, cap);
    if (!p.ok()) return p.error();
    std::uint64_t count = 1;
    for (const auto& g : p->groups) count = saturatingMul(count, g.count, cap);
    total = saturatingAdd(total, count, cap);
    if (total > limit)
      return invalidArgument("hostlist " + quoted(list) +
                             " expands to more than " + std::to_string(limit) + " names");
    patterns.push_back(std::move(*p));
  }
  std::vector<std::string> out;
  out.reserve(total);
  for (const auto& p : patterns) expandInto(p, out);
  return out;
}

}  // namespace kiln
