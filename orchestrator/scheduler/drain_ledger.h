#pragma once
// The Slurm driver's drain ledger: the nodes Kiln drained (orchestrator/db/pg_drain_ledger.cc).

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/scheduler/slurm.h"

namespace kiln::scheduler {

class DrainLedger {
 public:
  virtual ~DrainLedger() = default;
  virtual Result<std::vector<Drain>> list() = 0;
  // Upserts the row (written before the drain is asked of Slurm), with an audit record
  // `slurm.drain` naming the node, host and reason.
  virtual Status put(const Drain& d, const core::Actor& actor) = 0;
  // Removes the row, with an audit record `action` (slurm.resume: Kiln resumed the node;
  // slurm.release: someone else took the node over) and `why`.
  virtual Status remove(const std::string& node, const std::string& action, const std::string& why,
                        const core::Actor& actor) = 0;
};

}  // namespace kiln::scheduler
