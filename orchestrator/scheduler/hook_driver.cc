#include "orchestrator/scheduler/hook_driver.h"

namespace kiln::scheduler {

HookDriver::HookDriver(Executor& executor, BlockingReleaseCall call)
    : executor_(executor), call_(std::make_shared<BlockingReleaseCall>(std::move(call))) {}

void HookDriver::requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) {
  executor_.post([call = call_, request, done = std::move(done)] {
    bool told = false;
    try {
      told = (*call)(request);
    } catch (...) {  // the thread's one catch: an ask that threw was not heard
    }
    done(told);
  });
}

}  // namespace kiln::scheduler
