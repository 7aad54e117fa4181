#pragma once
// loadgen's WebSocket client: one /v1/ws connection per client (net::WsClient), its
// requests sent one after another, each read to its done or error frame. Runs on the
// level's io_context thread.
#include <boost/asio/awaitable.hpp>

#include <cstdint>

#include "tools/loadgen/level_runner.hpp"

namespace specd::loadgen {

boost::asio::awaitable<void> run_ws_client(LevelContext& ctx, int32_t client_index);

}  // namespace specd::loadgen
