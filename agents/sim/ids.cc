#include "agents/sim/ids.h"

#include <cstdio>

namespace kiln::sim {

uint64_t fnv1a64(std::string_view data) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // FNV-1a mixes the last bytes weakly; a final avalanche (from splitmix64) spreads them.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

double unitInterval(uint64_t hash) {
  return static_cast<double>(hash >> 11) / static_cast<double>(1ULL << 53);
}

std::string gpuSerial(std::string_view host, int gpu_index) {
  std::string seed = std::string(host) + "/gpu-serial/" + std::to_string(gpu_index);
  char buf[32];
  std::snprintf(buf, sizeof buf, "165%010llu", static_cast<unsigned long long>(fnv1a64(seed) % 10000000000ULL));
  return buf;
}

static std::string uuidBody(std::string_view seed) {
  uint64_t a = fnv1a64(std::string(seed) + "#a");
  uint64_t b = fnv1a64(std::string(seed) + "#b");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(a >> 32),
                static_cast<unsigned long long>((a >> 16) & 0xffff), static_cast<unsigned long long>(a & 0xffff),
                static_cast<unsigned long long>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string gpuUuid(std::string_view seed) {
  return "GPU-" + uuidBody(seed);
}

std::string uuidFrom(std::string_view seed) {
  return uuidBody(seed);
}

}  // namespace kiln::sim
