#pragma once
/// \file
/// A duration as people write it: "250 ms", "2 s", "2.5 s", "2 min",
/// "1 h 5 min" (not "2.000000 s").

#include <string>

namespace vlcache {

[[nodiscard]] std::string duration_text(double seconds);

}  // namespace vlcache
