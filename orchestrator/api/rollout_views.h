#pragma once
// The REST representation of bundles, compliance and rollouts (json_views.h's convention: one
// place for the shapes api/openapi.yaml describes).

#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::api {

// POST /bundles: the bundle, used, etag and outcome (created | updated | unchanged).
nlohmann::json toJson(const rollouts::PutBundleResult& r);
// GET /bundles/{id}: the bundle, used, etag and created_at.
nlohmann::json bundleJson(const rollouts::BundleRow& row);
// GET /bundles: {items: [bundle, used, created_at, created_by], next_cursor: null}.
nlohmann::json bundleListJson(const std::vector<rollouts::BundleRow>& rows);
nlohmann::json toJson(const rollouts::ComplianceReport& r);

nlohmann::json toJson(const rollouts::RolloutView& v);
// The rollout's view, or a dry run's {bundle, selector, policy, plan, warnings?, dry_run: true}.
nlohmann::json toJson(const rollouts::CreateOutcome& o);
// GET /rollouts/{id}/pods: {items, next_cursor: null}.
nlohmann::json rolloutPodsJson(const std::vector<rollouts::RolloutPodRow>& rows);
// GET /rollouts: one page of rollout summaries.
nlohmann::json rolloutListJson(const core::Page<rollouts::RolloutRow>& page);
// GET /rollouts/{id}/events: {items: [id, at, pod, kind, message], next_cursor: null}.
nlohmann::json rolloutEventsJson(const std::vector<rollouts::RolloutEventRow>& events);

}  // namespace kiln::api
