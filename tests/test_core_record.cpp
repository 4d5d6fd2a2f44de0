// core/record.hpp: result records and their JSON text (summary.json's "ifmm" object is one).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "elliptica/core/record.hpp"

namespace {

using elliptica::json_quote;
using elliptica::Record;
using elliptica::to_json;

TEST(Record, JsonOfNestedRecordsAndLists) {
  std::vector<Record> levels{Record().set("level", 4).set("parallel", true),
                             Record().set("level", 3).set("parallel", false)};
  const Record r = Record()
                       .set("name", "nIFMMs3t3b4")
                       .set("epsilon", 1e-3)
                       .set("bytes", std::size_t{123456789012})
                       .set("inner", Record().set("x", -2))
                       .set("levels", levels)
                       .set("none", std::vector<Record>{});
  EXPECT_EQ(to_json(r),
            "{\n  \"name\": \"nIFMMs3t3b4\",\n  \"epsilon\": 0.001,\n  \"bytes\": 123456789012,\n"
            "  \"inner\": {\n    \"x\": -2\n  },\n  \"levels\": [\n    {\n      \"level\": 4,\n"
            "      \"parallel\": true\n    },\n    {\n      \"level\": 3,\n      \"parallel\": false\n    }\n  ],\n"
            "  \"none\": []\n}");
  EXPECT_EQ(to_json(Record()), "{}");
}

TEST(Record, EscapesStringsAndWritesNonFiniteAsNull) {
  EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
  const Record r = Record().set("nan", std::nan("")).set("inf", std::numeric_limits<double>::infinity()).set("s", "x");
  EXPECT_EQ(to_json(r), "{\n  \"nan\": null,\n  \"inf\": null,\n  \"s\": \"x\"\n}");
}

TEST(Record, MergeAppendsInOrder) {
  Record a = Record().set("a", 1);
  a.merge(Record().set("b", 2.5).set("c", "z"));
  ASSERT_EQ(a.fields().size(), 3u);
  EXPECT_EQ(a.fields()[1].key, "b");
  EXPECT_EQ(a.fields()[1].kind, Record::Kind::Real);
  EXPECT_EQ(a.fields()[2].kind, Record::Kind::String);
}

}  // namespace
