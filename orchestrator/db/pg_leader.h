#pragma once
// Leader election among kilnd replicas on one PostgreSQL: a session advisory lock held on a
// dedicated connection. Exactly one replica holds it; when that replica dies its connection
// closes and another replica takes the lock on its next try. Not thread-safe: one owner thread.

#include <memory>
#include <string>

namespace kiln::db {

class LeaderLock {
 public:
  explicit LeaderLock(std::string url, long long key = 0x6b696c6e01);
  ~LeaderLock();
  // Takes the lock if free, or checks that the held lock's connection is alive. True while
  // this process is the leader.
  bool tryHold();
  bool held() const { return held_; }

 private:
  std::string url_;
  long long key_;
  struct Conn;
  std::unique_ptr<Conn> conn_;
  bool held_ = false;
};

}  // namespace kiln::db
