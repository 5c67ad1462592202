// The SRE console: static files from web/ (ApiOptions::web_root), served by kilnd itself.
// No authentication for the files; the console signs in with a token for every API call.

#include <fstream>
#include <sstream>

#include "orchestrator/api/api.h"

namespace kiln::api {
namespace {

const char* contentType(const std::string& path) {
  auto ends = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  if (ends(".woff2")) return "font/woff2";
  return "application/octet-stream";
}

}  // namespace

void addConsoleRoutes(Router& router, Services& s) {
  router.add({.method = "GET", .pattern = "/*", .role = std::nullopt,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                const std::string& path = ctx.req.path;
                if (path.rfind("/api/", 0) == 0 || path == "/api")
                  return Error(ErrorCode::kNotFound, "no route for GET " + path);
                if (s.options.web_root.empty()) return notFound("the console is not served by this kilnd");
                if (path.find("..") != std::string::npos || path.find('\0') != std::string::npos)
                  return notFound("no such file");
                std::string rel = path == "/" ? "/index.html" : path;
                std::ifstream in(s.options.web_root + rel, std::ios::binary);
                if (!in) {
                  // Client-side routes (#/pods/...) never reach here; unknown paths are 404.
                  return notFound("no such file: " + rel);
                }
                std::ostringstream buf;
                buf << in.rdbuf();
                http::Response r;
                r.content_type = contentType(rel);
                r.body = buf.str();
                r.headers.emplace_back("Cache-Control", "no-cache");
                r.headers.emplace_back("X-Content-Type-Options", "nosniff");
                return r;
              }});
}

}  // namespace kiln::api
