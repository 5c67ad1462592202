#include "orchestrator/core/preconditions.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(Preconditions, IfMatchTakesStarOrStrongTags) {
  auto star = parseIfMatch(" * ");
  ASSERT_TRUE(star.ok() && star->has_value());
  EXPECT_TRUE((*star)->matches(std::string("\"a\"")));
  EXPECT_FALSE((*star)->matches(std::nullopt)) << "* needs a current version";

  auto list = parseIfMatch("\"a1\", \"b2\"");
  ASSERT_TRUE(list.ok() && list->has_value());
  EXPECT_EQ((*list)->etags, (std::vector<std::string>{"\"a1\"", "\"b2\""}));
  EXPECT_TRUE((*list)->matches(std::string("\"b2\"")));
  EXPECT_FALSE((*list)->matches(std::string("\"c3\"")));
  EXPECT_FALSE((*list)->matches(std::nullopt));

  auto none = parseIfMatch("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  for (const char* bad : {"a1", "W/\"a1\"", "\"a1", "\"a\"b\"", ",", "\"a\", b"})
    EXPECT_EQ(parseIfMatch(bad).error().code, ErrorCode::kInvalidArgument) << bad;
}

TEST(Preconditions, IdempotencyKeysAreShortVisibleAscii) {
  EXPECT_EQ(**parseIdempotencyKey("0b6f1e9c-5d2a-4c1e-9a51-3e0c5f1d2a7b"), "0b6f1e9c-5d2a-4c1e-9a51-3e0c5f1d2a7b");
  EXPECT_FALSE(parseIdempotencyKey("")->has_value());
  EXPECT_EQ(**parseIdempotencyKey(std::string(200, 'k')), std::string(200, 'k'));
  EXPECT_FALSE(parseIdempotencyKey(std::string(201, 'k')).ok());
  EXPECT_FALSE(parseIdempotencyKey("two words").ok());
  EXPECT_FALSE(parseIdempotencyKey("caf\xc3\xa9").ok());
}

TEST(Preconditions, A412SaysWhatChangedAndTheCurrentTag) {
  const Error changed = preconditionFailed("workflow 'w'", std::string("\"new\""));
  EXPECT_EQ(changed.code, ErrorCode::kPreconditionFailed);
  EXPECT_EQ(httpStatus(changed.code), 412);
  EXPECT_STREQ(errorCodeName(changed.code), "precondition_failed");
  EXPECT_EQ(changed.details.at("etag"), "\"new\"");
  EXPECT_EQ(preconditionFailed("bundle b@1", std::nullopt).details.count("etag"), 0u);
}

}  // namespace
}  // namespace kiln::core
