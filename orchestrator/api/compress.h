#pragma once
// gzip for large answers (a 62 KB hosts page, the ~1 MB heatmap of a million-GPU fleet):
// what a client that sent Accept-Encoding: gzip gets, and the rule for when it is worth it.

#include <optional>
#include <string>
#include <string_view>

namespace kiln::api {

// Whether an Accept-Encoding header value accepts gzip (a "gzip" or "*" coding whose q is not 0).
bool acceptsGzip(std::string_view accept_encoding);

// Whether an answer of this type and size is worth compressing: text and JSON of 1,400 bytes
// or more (less fits one packet anyway).
bool worthCompressing(std::string_view content_type, std::size_t size);

// `data` in the gzip format (RFC 1952), at zlib's fastest level; nullopt if zlib fails.
std::optional<std::string> gzip(std::string_view data);

// The inverse, for tests and clients; nullopt on a corrupt stream or past `max_size` bytes.
std::optional<std::string> gunzip(std::string_view data, std::size_t max_size = 256 << 20);

}  // namespace kiln::api
