#pragma once
// A small streaming JSON writer for the gateway's frames and bodies: objects, arrays,
// strings (escaped; invalid UTF-8 never reaches it, the engine emits whole characters
// only), numbers and literals, appended to one std::string. Not thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace specd::net {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // Inside an object: the next member's name.
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(int64_t number);
  JsonWriter& value(int32_t number) { return value(static_cast<int64_t>(number)); }
  JsonWriter& value(uint64_t number);
  JsonWriter& value(double number);  // as append_json_number: plain decimals, non-finite as null
  JsonWriter& value(bool flag);
  JsonWriter& null();

  // key(name).value(v) in one call.
  template <class T>
  JsonWriter& member(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

}  // namespace specd::net
