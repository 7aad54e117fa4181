#pragma once
// co_spawn for fire-and-forget coroutines whose exceptions must not vanish (STYLE.md):
// an escaped exception is logged to stderr with what the coroutine was for.
#include <boost/asio/co_spawn.hpp>

#include <cstdio>
#include <exception>

#include "actors/asio_aliases.hpp"

namespace specd::actors {

template <class Executor, class Function>
void spawn_logged(const Executor& executor, Function&& function, const char* what) {
  asio::co_spawn(executor, std::forward<Function>(function), [what](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "specd: %s failed: %s\n", what, e.what());
    }
  });
}

}  // namespace specd::actors
