#include "orchestrator/api/compress.h"

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

TEST(Compress, AcceptEncodingIsReadAsRfc9110Says) {
  EXPECT_TRUE(acceptsGzip("gzip"));
  EXPECT_TRUE(acceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(acceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(acceptsGzip("*"));
  EXPECT_FALSE(acceptsGzip(""));
  EXPECT_FALSE(acceptsGzip("identity"));
  EXPECT_FALSE(acceptsGzip("deflate, br"));
  EXPECT_FALSE(acceptsGzip("gzip;q=0"));
  EXPECT_FALSE(acceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(acceptsGzip("x-gzip2"));
}

TEST(Compress, OnlyLargeTextIsWorthIt) {
  EXPECT_TRUE(worthCompressing("application/json", 62000));
  EXPECT_TRUE(worthCompressing("text/plain; version=0.0.4", 5000));
  EXPECT_FALSE(worthCompressing("application/json", 1399));
  EXPECT_FALSE(worthCompressing("image/png", 100000));
  EXPECT_FALSE(worthCompressing("application/octet-stream", 100000));
}

TEST(Compress, RoundTripsAndShrinksJson) {
  std::string json = "{\"items\": [";
  for (int i = 0; i < 2000; ++i) json += "{\"id\": \"prn-b01-p" + std::to_string(i) + "-h01\", \"state\": \"available\"},";
  json += "{}]}";
  auto packed = gzip(json);
  ASSERT_TRUE(packed.has_value());
  EXPECT_LT(packed->size() * 5, json.size());
  ASSERT_EQ(static_cast<unsigned char>((*packed)[0]), 0x1f);  // the gzip magic
  ASSERT_EQ(static_cast<unsigned char>((*packed)[1]), 0x8b);
  auto back = gunzip(*packed);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, json);
  EXPECT_FALSE(gunzip("not gzip at all").has_value());
  EXPECT_FALSE(gunzip(*packed, 100).has_value());  // past max_size
  EXPECT_FALSE(gunzip(packed->substr(0, packed->size() / 2)).has_value());  // truncated
}

}  // namespace
}  // namespace kiln::api
