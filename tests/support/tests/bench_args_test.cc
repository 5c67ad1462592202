// The benchmarks' flag parser: values, switches, repeats, --help, and exit status 2 for what
// it cannot take (a number with trailing text, a missing value, an unknown flag).
#include "tests/support/bench_args.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln::testing {
namespace {

int parse(const BenchArgs& args, std::vector<std::string> words) {
  std::vector<char*> argv{const_cast<char*>("bench")};
  for (auto& w : words) argv.push_back(w.data());
  return args.parse(static_cast<int>(argv.size()), argv.data());
}

struct Flags {
  int pods = 1;
  long hosts = 0;
  double scale = 1;
  unsigned seed = 0;
  bool keep = false;
  std::string dir;
  std::vector<std::string> extra;
  BenchArgs args() {
    return BenchArgs("usage: bench\n")
        .number("--pods", &pods)
        .number("--hosts", &hosts)
        .number("--time-scale", &scale)
        .number("--seed", &seed)
        .flag("--keep", &keep)
        .text("--dir", &dir)
        .texts("--arg", &extra);
  }
};

TEST(BenchArgsTest, ReadsValuesSwitchesAndRepeats) {
  Flags f;
  EXPECT_EQ(parse(f.args(), {"--pods", "500", "--hosts", "9000", "--time-scale", "0.05", "--seed", "7", "--keep",
                             "--dir", "/tmp/x", "--arg", "a", "--arg", "b"}),
            -1);
  EXPECT_EQ(f.pods, 500);
  EXPECT_EQ(f.hosts, 9000);
  EXPECT_DOUBLE_EQ(f.scale, 0.05);
  EXPECT_EQ(f.seed, 7u);
  EXPECT_TRUE(f.keep);
  EXPECT_EQ(f.dir, "/tmp/x");
  EXPECT_EQ(f.extra, (std::vector<std::string>{"a", "b"}));
}

TEST(BenchArgsTest, HelpIsZeroAndWhatItCannotTakeIsTwo) {
  Flags f;
  EXPECT_EQ(parse(f.args(), {"--help"}), 0);
  EXPECT_EQ(parse(f.args(), {"--pods", "12x"}), 2);
  EXPECT_EQ(parse(f.args(), {"--pods", "1.5"}), 2);
  EXPECT_EQ(parse(f.args(), {"--time-scale", "fast"}), 2);
  EXPECT_EQ(parse(f.args(), {"--pods"}), 2);
  EXPECT_EQ(parse(f.args(), {"--colour", "red"}), 2);
  EXPECT_EQ(parse(f.args(), {"--seed", "-1"}), 2);
  EXPECT_EQ(f.pods, 1) << "a refused value is not stored";
}

}  // namespace
}  // namespace kiln::testing
