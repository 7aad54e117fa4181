#pragma once
// loadgen's HTTP client for the OpenAI-style streaming routes: one keep-alive connection
// per client, POST /v1/completions (or /v1/chat/completions) with "stream": true, the
// server-sent events read as they arrive. Runs on the level's io_context thread.
#include <boost/asio/awaitable.hpp>

#include <cstdint>

#include "tools/loadgen/level_runner.hpp"

namespace specd::loadgen {

boost::asio::awaitable<void> run_sse_client(LevelContext& ctx, int32_t client_index);

}  // namespace specd::loadgen
