#pragma once
// A throwaway PostgreSQL database per test binary, on the server that deploy/test.sh starts.
// KILN_TEST_PG is a libpq connection string for that server without dbname
// (e.g. "host=/tmp/kiln-test/run port=55432 user=kiln"). Without it the tests fail loudly:
// they never silently skip.

#include <string>

namespace kiln::testing {

class TestDatabase {
 public:
  // Creates a fresh database "kiln_test_<random>" and applies the migrations.
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  // Runs SQL in autocommit, for test set-up and inspection. Returns the first column of the
  // first row as text ("" when none).
  std::string query(const std::string& sql) const;
  // An outage as kilnd sees it: false makes the database refuse new connections and ends every
  // session on it (each attempt fails at once); true lets it take connections again.
  void setReachable(bool reachable) const;

 private:
  std::string server_;
  std::string name_;
  std::string url_;
};

// The server connection string (KILN_TEST_PG); aborts with a clear message when unset.
std::string testServer();

}  // namespace kiln::testing
