#pragma once
// Reads the tool-output samples of agents/parsers/tests/testdata (see testdata/README.md).

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln::parsers {

inline std::string testdataPath(const std::string& name) {
  return std::string(KILN_PARSERS_TESTDATA) + "/" + name;
}

inline std::string readTestdata(const std::string& name) {
  std::ifstream file(testdataPath(name), std::ios::binary);
  if (!file) throw std::runtime_error("missing test sample " + testdataPath(name));
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace kiln::parsers
