#pragma once
// What the store contract suites (orchestrator/db/tests/*_contract_test.cc) share: the
// implementation a suite runs against (its fake, or PostgreSQL), the two instantiations, and the
// rows a PostgreSQL harness writes directly for what the interface under test only reads (pods,
// hosts, runs' assignments), with no audit records, as a fake's set-up methods do.

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/test_db.h"

namespace kiln::db::contract {

// A suite's parameter: the implementation's name (the instantiation's) and how to make a fresh
// one, with what the suite's tests need around it (the Harness of each suite).
template <typename Harness>
struct Implementation {
  std::string name;
  std::function<std::unique_ptr<Harness>()> make;
};
// Names the parameter in gtest's messages (instead of its bytes).
template <typename Harness>
void PrintTo(const Implementation<Harness>& implementation, std::ostream* os) {
  *os << implementation.name;
}

// Instantiates the value-parameterised suite `Suite` (whose parameter is Implementation<Harness>)
// once over `FakeH` and once over `PgH`: Fake/Suite.Test/Fake and Postgres/Suite.Test/Postgres.
#define KILN_CONTRACT_INSTANTIATE(Suite, Harness, FakeH, PgH)                                  \
  INSTANTIATE_TEST_SUITE_P(Fake, Suite,                                                        \
                           ::testing::Values(::kiln::db::contract::Implementation<Harness>{    \
                               "Fake", [] { return std::unique_ptr<Harness>(new FakeH); }}),   \
                           [](const auto& info) { return info.param.name; });                  \
  INSTANTIATE_TEST_SUITE_P(Postgres, Suite,                                                    \
                           ::testing::Values(::kiln::db::contract::Implementation<Harness>{    \
                               "Postgres", [] { return std::unique_ptr<Harness>(new PgH); }}), \
                           [](const auto& info) { return info.param.name; })

// A pod (with its site, building and one rack "<pod>-r1"); the site and building may exist.
inline void insertPod(const kiln::testing::TestDatabase& db, const std::string& site, const std::string& building,
                      const std::string& pod, const std::string& platform) {
  db.query("INSERT INTO sites (id) VALUES ('" + site + "') ON CONFLICT DO NOTHING");
  db.query("INSERT INTO buildings (id, site_id) VALUES ('" + building + "', '" + site + "') ON CONFLICT DO NOTHING");
  db.query("INSERT INTO pods (id, building_id, site_id, platform) VALUES ('" + pod + "', '" + building + "', '" + site +
           "', '" + platform + "')");
  db.query("INSERT INTO racks (id, pod_id, idx) VALUES ('" + pod + "-r1', '" + pod + "', 0)");
}

// A host of a pod insertPod made, in `state`.
inline void insertHost(const kiln::testing::TestDatabase& db, const std::string& host, const std::string& pod,
                       const std::string& state, int tray = 0) {
  db.query(
      "INSERT INTO hosts (id, pod_id, rack_id, building_id, site_id, tray, spare, state)"
      " SELECT '" +
      host + "', p.id, p.id || '-r1', p.building_id, p.site_id, " + std::to_string(tray) + ", false, '" + state +
      "' FROM pods p WHERE p.id = '" + pod + "'");
}

}  // namespace kiln::db::contract
