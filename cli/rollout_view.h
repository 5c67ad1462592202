#pragma once
// Bundles and rollouts for people: pure functions over the API's JSON (the documents of
// GET /bundles, /bundles/{id}, /bundles/{id}/compliance, the POST /rollouts dry run,
// GET /rollouts, /rollouts/{id} and /rollouts/{id}/pods); missing fields render as "-".

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

// ---- bundles ----

std::string renderBundleList(const nlohmann::json& page);
// Id, name, version, platforms, workflow, then the components and prerequisites tables.
std::string renderBundle(const nlohmann::json& bundle);
// Pod and host counts by state, then a row per pod: building, platform, state, host counts,
// reasons.
std::string renderCompliance(const nlohmann::json& report);

// ---- rollouts ----

// A policy object (as the server resolves it) on one line: "canary 1, waves 10%,50%,100%, ...".
std::string policyText(const nlohmann::json& policy);
// A selector object on one line: "sites prn; buildings b01,b02" or "every pod".
std::string selectorText(const nlohmann::json& selector);

// The dry run: bundle, selector, policy, the waves with their pods, every excluded pod with its
// reason.
std::string renderPlan(const nlohmann::json& dry_run);

// GET /rollouts page as a table.
std::string renderRolloutList(const nlohmann::json& page);

// The rollout show page: state (and why it halted), bundle, policy, pods by phase, P50/P90 pod
// time, ETA, a progress row per wave, why pods wait, recent events.
std::string renderRollout(const nlohmann::json& rollout);

// GET /rollouts/{id}/pods as a table: wave, phase, attempt, duration, runs, why it waits or
// what happened.
std::string renderRolloutPods(const nlohmann::json& page);

// "ro-5 running: wave 2 7/35, 12/40 done (10 succeeded, 1 failed, 1 skipped), 2 in flight,
// 26 pending; waiting: concurrency 2; P50 1h42m, P90 2h05m; ETA 3h10m": changes exactly when
// the rollout's state, counts, current wave, waiting classes (other than later waves),
// durations or ETA change.
std::string rolloutProgressLine(const nlohmann::json& rollout);

// "[######--------------] 3/10" for one entry of a rollout's `waves`, `width` cells of bar.
std::string waveBar(const nlohmann::json& wave, int width = 20);

// The lines a terminal redraws while watching: one per wave ("canary  [###...] 1/1 done"),
// then the progress line without the id.
std::vector<std::string> rolloutBars(const nlohmann::json& rollout);

// The end of a watch: "ro-5 completed: 40 pods, 38 succeeded, 2 skipped" or why it did not
// complete ("halted: 2 pods failed; the failure budget allows 1").
std::string rolloutVerdict(const nlohmann::json& rollout);

// Pods that reached the `failed` phase: 0 when `counts` lacks it.
long long failedPods(const nlohmann::json& rollout);

}  // namespace kiln::cli
