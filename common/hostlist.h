#pragma once
// Slurm hostlist expressions ("gpu[001-064],login1") expanded to node names, in plain C++ (no
// libslurm, no scontrol): what `kilnctl slurm` reads from --nodes and SLURM_JOB_NODELIST, and
// the NodeList of jobs in `squeue --json` (orchestrator/scheduler).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln {

inline constexpr std::size_t kMaxHostlistNames = 100000;

// Names are separated by commas outside brackets. A name is text with any number of bracket
// groups; a group is a comma-separated list of numbers and LO-HI ranges ("[1-3,5,08-10]").
// A name with several groups expands to every combination, the first group varying slowest
// (r[1-2]n[1-2] -> r1n1 r1n2 r2n1 r2n2); text after a group is kept (c[1-2]-x -> c1-x c2-x).
// A range keeps the width of its low end (n[08-10] -> n08 n09 n10; n[8-10] -> n8 n9 n10); a
// single number is kept as written. Names come out in order, duplicates kept (as `scontrol show
// hostnames` does). Leading and trailing whitespace of `list` is ignored. Pure.
// Errors (kInvalidArgument, a message quoting the bad part): an empty list or an empty name,
// unbalanced or nested brackets, an empty group or group item, an item that is not a number or
// a range, a reversed range, a number of more than 18 digits, whitespace or a control character
// inside the list, more than `limit` names in all (checked before any name is built).
Result<std::vector<std::string>> expandHostlist(std::string_view list, std::size_t limit = kMaxHostlistNames);

}  // namespace kiln
