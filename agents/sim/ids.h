#pragma once
// Deterministic identifiers for simulated hardware: the same host name always yields the same
// GPU serials, UUIDs and boot ids, so fleets of simulated hosts are reproducible.

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::sim {

// 64-bit FNV-1a. Stable across platforms and releases (unlike std::hash).
uint64_t fnv1a64(std::string_view data);

// A hash mapped onto [0, 1).
double unitInterval(uint64_t hash);

// A 13-digit board serial like nvidia-smi prints ("1652824012345").
std::string gpuSerial(std::string_view host, int gpu_index);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" derived from `seed`.
std::string gpuUuid(std::string_view seed);

// A lowercase RFC-4122-looking id ("3f2a...-...") derived from `seed`, for boot ids.
std::string uuidFrom(std::string_view seed);

}  // namespace kiln::sim
