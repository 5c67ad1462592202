#pragma once
// The floor kilnd's dispatch is compared with: a bare job queue in PostgreSQL. `workers`
// connections each claim one item (`FOR UPDATE SKIP LOCKED`, one transaction) and finish it
// (a second transaction) until the queue is empty: two commits per item, as a dispatched and
// acknowledged step costs at least a claim and a result.

#include <string>

namespace kiln::bench {

struct QueueResult {
  long items = 0;         // finished
  double seconds = 0;     // from the first claim to the last finish
  double per_second = 0;  // items / seconds
  long claimed_twice = 0; // must be 0
  // CPU over the drain: the PostgreSQL backends of the workers' connections, and this process
  // (the workers' client side, as kilnd is the client side of dispatch).
  double db_cpu_s = 0, client_cpu_s = 0;
};

// Creates a fresh table `table` in the database at `url` (dropping an earlier one), fills it
// with `items` pending rows, drains it with `workers` threads and drops it. Throws on a
// database error.
QueueResult runQueueBaseline(const std::string& url, const std::string& table, long items, int workers);

}  // namespace kiln::bench
