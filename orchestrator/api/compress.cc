#include "orchestrator/api/compress.h"

#include <zlib.h>

#include <cctype>
#include <cstdlib>

#include "common/http_text.h"

namespace kiln::api {
namespace {

bool equalsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

bool acceptsGzip(std::string_view header) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const auto semi = item.find(';');
    const std::string_view coding = trimOws(item.substr(0, semi));
    if (!equalsNoCase(coding, "gzip") && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view param = trimOws(item.substr(semi + 1));
    if (param.size() < 2 || std::tolower(static_cast<unsigned char>(param[0])) != 'q' || param[1] != '=') return true;
    const std::string q(trimOws(param.substr(2)));
    return std::strtod(q.c_str(), nullptr) > 0;
  }
  return false;
}

bool worthCompressing(std::string_view type, std::size_t size) {
  if (size < 1400) return false;
  return type.rfind("application/json", 0) == 0 || type.rfind("text/", 0) == 0 ||
         type.rfind("application/javascript", 0) == 0 || type.rfind("image/svg+xml", 0) == 0 ||
         type.rfind("application/yaml", 0) == 0;
}

std::optional<std::string> gzip(std::string_view data) {
  z_stream z{};
  // 15 window bits + 16: the gzip wrapper rather than zlib's.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const auto written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

std::optional<std::string> gunzip(std::string_view data, std::size_t max_size) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_size) rc = Z_BUF_ERROR;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

}  // namespace kiln::api
