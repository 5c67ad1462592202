#pragma once
// Command-line flags of the benchmark programs (bench/): "--name VALUE" and "--name" switches,
// numbers checked whole (no "12x"), --help, and an error with the usage and exit status 2 for
// anything else. The one parser the benchmarks share.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln::testing {

class BenchArgs {
 public:
  explicit BenchArgs(std::string usage) : usage_(std::move(usage)) {}

  BenchArgs& flag(const std::string& name, bool* out);  // --name sets it
  BenchArgs& text(const std::string& name, std::string* out);
  BenchArgs& texts(const std::string& name, std::vector<std::string>* out);  // repeatable
  BenchArgs& number(const std::string& name, int* out);
  BenchArgs& number(const std::string& name, unsigned* out);
  BenchArgs& number(const std::string& name, long* out);
  BenchArgs& number(const std::string& name, long long* out);
  BenchArgs& number(const std::string& name, double* out);

  // -1: parsed, go on; otherwise the exit status to return from main (0 after --help, 2 after
  // an error, with the error and the usage on stderr).
  int parse(int argc, char** argv) const;

 private:
  struct Option {
    bool takes_value = true;
    // Stores the value; false when it does not parse.
    std::function<bool(const std::string&)> set;
  };
  std::string usage_;
  std::map<std::string, Option> options_;
};

}  // namespace kiln::testing
