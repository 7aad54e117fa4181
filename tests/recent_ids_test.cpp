// The bounded memory of a WebSocket session's finished request ids (net/recent_ids).
#include <doctest/doctest.h>

#include "net/recent_ids.hpp"

using specd::net::RecentIds;

TEST_CASE("recent ids forget the least recently added beyond their capacity") {
  RecentIds ids(2);
  ids.add("a");
  ids.add("b");
  CHECK(ids.contains("a"));
  CHECK(ids.contains("b"));
  ids.add("c");
  CHECK_FALSE(ids.contains("a"));
  CHECK(ids.contains("b"));
  CHECK(ids.contains("c"));
  CHECK(ids.size() == 2);
}

TEST_CASE("adding an id again makes it the most recent without holding it twice") {
  RecentIds ids(2);
  ids.add("a");
  ids.add("b");
  ids.add("a");  // "b" is now the least recent
  CHECK(ids.size() == 2);
  ids.add("c");
  CHECK(ids.contains("a"));
  CHECK_FALSE(ids.contains("b"));
  CHECK(ids.contains("c"));
}

TEST_CASE("a million ids through a memory of 256 keep exactly the last 256") {
  RecentIds ids(256);
  for (int i = 0; i < 1'000'000; ++i) ids.add("r" + std::to_string(i));
  CHECK(ids.size() == 256);
  CHECK(ids.contains("r999999"));
  CHECK(ids.contains("r999744"));
  CHECK_FALSE(ids.contains("r999743"));
  CHECK_FALSE(ids.contains("r0"));
}

TEST_CASE("a capacity of zero remembers nothing") {
  RecentIds ids(0);
  ids.add("a");
  CHECK_FALSE(ids.contains("a"));
  CHECK(ids.size() == 0);
}
