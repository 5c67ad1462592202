#pragma once
// The REST representation of core types (one place, so the console, kilnctl and the OpenAPI
// document see the same shapes).

#include <nlohmann/json.hpp>

#include "orchestrator/core/capacity.h"
#include "orchestrator/core/store.h"

namespace kiln::api {

std::string isoTime(core::TimePoint t);

nlohmann::json toJson(const Error& e);
nlohmann::json toJson(const core::SiteSummary& s);
nlohmann::json toJson(const core::PodSummary& p);
nlohmann::json toJson(const core::PodDetail& p);
nlohmann::json toJson(const core::HostSummary& h);
nlohmann::json toJson(const core::HostDetail& h);
nlohmann::json toJson(const core::HostEvent& e);
nlohmann::json toJson(const core::ImportSummary& s);
nlohmann::json toJson(const core::TokenInfo& t);
nlohmann::json toJson(const core::CapacityPlan& p);

template <typename T>
nlohmann::json pageJson(const core::Page<T>& page) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& i : page.items) items.push_back(toJson(i));
  return {{"items", std::move(items)},
          {"next_cursor", page.next_cursor ? nlohmann::json(*page.next_cursor) : nlohmann::json()}};
}

}  // namespace kiln::api
