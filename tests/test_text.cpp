// Tests of the shared text-parsing helpers (core/text.hpp) and of core/constants.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "elliptica/core/constants.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"

namespace text = elliptica::text;

TEST(Text, TrimAndSplit) {
  EXPECT_EQ(text::trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(text::trim(" \t "), "");
  EXPECT_EQ(text::split_ws(" 1  2\t3 \r"), (std::vector<std::string_view>{"1", "2", "3"}));
  EXPECT_TRUE(text::split_ws("   ").empty());
  std::vector<std::string_view> buf{"x"};
  text::split_ws("a b", buf);  // appends
  EXPECT_EQ(buf, (std::vector<std::string_view>{"x", "a", "b"}));
  EXPECT_EQ(text::split(" a , b,c ", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(text::split("a,,b,", ','), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_TRUE(text::split("", ',').empty());
  EXPECT_EQ(text::split_lines("a\r\nb\n\nc"), (std::vector<std::string_view>{"a", "b", "", "c"}));
  EXPECT_TRUE(text::split_lines("").empty());
  EXPECT_EQ(text::printable("a\x01\xff"), "a\\x01\\xff");
  EXPECT_EQ(text::printable(std::string(50, 'x'), 4), "xxxx...");
}

TEST(Text, Numbers) {
  double v = 0;
  EXPECT_EQ(text::parse_number("+1.5e3", v), text::NumberStatus::Ok);
  EXPECT_EQ(v, 1500.0);
  EXPECT_EQ(text::parse_number("+-1", v), text::NumberStatus::NotANumber);
  EXPECT_EQ(text::parse_number("1.0D+00", v), text::NumberStatus::NotANumber);
  EXPECT_EQ(text::parse_number(" 1", v), text::NumberStatus::NotANumber);
  EXPECT_EQ(text::parse_number("", v), text::NumberStatus::NotANumber);
  EXPECT_EQ(text::parse_number("1e999", v), text::NumberStatus::Overflow);
  EXPECT_EQ(text::parse_number("-1e-999", v), text::NumberStatus::Ok);  // underflow: signed zero
  EXPECT_TRUE(v == 0.0 && std::signbit(v));
  std::int64_t i = 7;
  EXPECT_TRUE(text::parse_int("+42", i));
  EXPECT_EQ(i, 42);
  EXPECT_TRUE(text::parse_int("-9223372036854775808", i));
  EXPECT_EQ(i, std::numeric_limits<std::int64_t>::min());
  EXPECT_FALSE(text::parse_int("9223372036854775808", i));
  EXPECT_FALSE(text::parse_int("1.0", i));
  EXPECT_FALSE(text::parse_int("+", i));
}

TEST(Text, OptionValuesNameTheOption) {
  EXPECT_EQ(text::to_double("2.5", "--tol"), 2.5);
  EXPECT_EQ(text::to_int("12", "--grid"), 12);
  try {
    text::to_double("abc", "--box");
    FAIL();
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "--box: 'abc' is not a number");
  }
  try {
    text::to_int("3000000000", "--grid");
    FAIL();
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "--grid: '3000000000' is not an integer");
  }
}

TEST(Constants, Pi) {
  EXPECT_EQ(elliptica::kPi, std::acos(-1.0));
  EXPECT_DOUBLE_EQ(elliptica::kSqrtPi * elliptica::kSqrtPi, elliptica::kPi);
}
