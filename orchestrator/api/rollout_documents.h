#pragma once
// The REST documents of bundles and rollouts: a bundle (POST /bundles), a rollout's selector and
// policy (POST /rollouts, and as answered by GET /rollouts/{id}). Strict decoders: kInvalidContent
// naming every bad field, never an exception. Pure and thread-safe; the fuzz targets call the same
// functions. (The PostgreSQL store keeps the same documents with its own codec, db/rollout_codecs.h.)

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/policy.h"

namespace kiln::api {

// A bundle document (bundle.h's header shows one); its `id` is the store's, not read here.
Result<rollouts::Bundle> parseBundle(const nlohmann::json& doc);

// Defaults for absent fields (null: every default); field paths "policy.<field>".
Result<rollouts::Policy> parsePolicy(const nlohmann::json& doc);
nlohmann::json toJson(const rollouts::Policy& p);

// {sites, buildings, platforms, pods, labels} (null: every pod); field paths "selector.<field>".
Result<rollouts::Selector> parseSelector(const nlohmann::json& doc);
nlohmann::json toJson(const rollouts::Selector& s);

}  // namespace kiln::api
