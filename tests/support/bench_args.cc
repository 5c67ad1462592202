#include "tests/support/bench_args.h"

#include <charconv>
#include <cstdlib>
#include <iostream>

namespace kiln::testing {
namespace {

template <typename T>
bool parseWhole(const std::string& s, T* out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end && !s.empty();
}

}  // namespace

BenchArgs& BenchArgs::flag(const std::string& name, bool* out) {
  options_[name] = {false, [out](const std::string&) {
                      *out = true;
                      return true;
                    }};
  return *this;
}

BenchArgs& BenchArgs::text(const std::string& name, std::string* out) {
  options_[name] = {true, [out](const std::string& v) {
                      *out = v;
                      return true;
                    }};
  return *this;
}

BenchArgs& BenchArgs::texts(const std::string& name, std::vector<std::string>* out) {
  options_[name] = {true, [out](const std::string& v) {
                      out->push_back(v);
                      return true;
                    }};
  return *this;
}

BenchArgs& BenchArgs::number(const std::string& name, int* out) {
  options_[name] = {true, [out](const std::string& v) { return parseWhole(v, out); }};
  return *this;
}

BenchArgs& BenchArgs::number(const std::string& name, unsigned* out) {
  options_[name] = {true, [out](const std::string& v) { return parseWhole(v, out); }};
  return *this;
}

BenchArgs& BenchArgs::number(const std::string& name, long* out) {
  options_[name] = {true, [out](const std::string& v) { return parseWhole(v, out); }};
  return *this;
}

BenchArgs& BenchArgs::number(const std::string& name, long long* out) {
  options_[name] = {true, [out](const std::string& v) { return parseWhole(v, out); }};
  return *this;
}

BenchArgs& BenchArgs::number(const std::string& name, double* out) {
  options_[name] = {true, [out](const std::string& v) {
                      char* end = nullptr;
                      const double d = std::strtod(v.c_str(), &end);
                      if (v.empty() || end != v.c_str() + v.size()) return false;
                      *out = d;
                      return true;
                    }};
  return *this;
}

int BenchArgs::parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << usage_;
      return 0;
    }
    auto it = options_.find(a);
    if (it == options_.end()) {
      std::cerr << "unknown argument " << a << "\n" << usage_;
      return 2;
    }
    std::string value;
    if (it->second.takes_value) {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n" << usage_;
        return 2;
      }
      value = argv[++i];
    }
    if (!it->second.set(value)) {
      std::cerr << a << ": '" << value << "' is not a number\n" << usage_;
      return 2;
    }
  }
  return -1;
}

}  // namespace kiln::testing
