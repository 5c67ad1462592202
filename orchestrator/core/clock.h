#pragma once
// The orchestrator's names for the one time source (common/clock.h).

#include "common/clock.h"

namespace kiln::core {

using Clock_ = kiln::WallClock;
using TimePoint = kiln::TimePoint;
using Clock = kiln::Clock;
using SystemClock = kiln::SystemClock;
using FakeClock = kiln::FakeClock;

}  // namespace kiln::core
