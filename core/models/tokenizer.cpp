#include "core/models/tokenizer.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace vlcache {
namespace {

/// The sentencepiece module's entry points (see sentencepiece_shim/spm_shim.cpp).
struct spm_api {
  void* (*load)(const char*, char*, std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  int (*info)(void*, int) = nullptr;
  long (*encode)(void*, const char*, std::size_t, int*, std::size_t, char*, std::size_t) = nullptr;
  long (*decode)(void*, const int*, std::size_t, char*, std::size_t) = nullptr;
  std::string error;
};

const spm_api& api() {
  static const spm_api a = [] {
    spm_api out;
    const char* env = std::getenv("VLCACHE_SPM_MODULE");
    const std::string path = env != nullptr && *env != '\0' ? env : VLCACHE_SPM_MODULE;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (h == nullptr) {
      const char* why = dlerror();
      out.error = "the sentencepiece module '" + path + "' did not load: " + (why ? why : "?") +
                  " (set VLCACHE_SPM_MODULE to libvlcache_spm.so)";
      return out;
    }
    out.load = reinterpret_cast<decltype(out.load)>(dlsym(h, "vlcache_spm_load"));
    out.free = reinterpret_cast<decltype(out.free)>(dlsym(h, "vlcache_spm_free"));
    out.info = reinterpret_cast<decltype(out.info)>(dlsym(h, "vlcache_spm_info"));
    out.encode = reinterpret_cast<decltype(out.encode)>(dlsym(h, "vlcache_spm_encode"));
    out.decode = reinterpret_cast<decltype(out.decode)>(dlsym(h, "vlcache_spm_decode"));
    if (!out.load || !out.free || !out.info || !out.encode || !out.decode)
      out.error = "the sentencepiece module '" + path + "' lacks an entry point";
    return out;
  }();
  return a;
}

}  // namespace

struct tokenizer::impl {
  void* sp = nullptr;
  int pieces = 0, bos = -1, eos = -1;
  ~impl() {
    if (sp != nullptr) api().free(sp);
  }
};

tokenizer::tokenizer(std::unique_ptr<impl> p, std::string path) : impl_(std::move(p)), path_(std::move(path)) {}
tokenizer::~tokenizer() = default;

expected<std::unique_ptr<tokenizer>> tokenizer::load(const std::string& path) {
  const auto& a = api();
  if (!a.error.empty()) return error{errc::io_error, "tokenizer '" + path + "': " + a.error};
  char why[512] = {0};
  auto p = std::make_unique<impl>();
  p->sp = a.load(path.c_str(), why, sizeof why);
  if (p->sp == nullptr) return error{errc::not_found, "tokenizer '" + path + "': " + why};
  p->pieces = a.info(p->sp, 0);
  p->bos = a.info(p->sp, 1);
  p->eos = a.info(p->sp, 2);
  return std::unique_ptr<tokenizer>(new tokenizer(std::move(p), path));
}

int tokenizer::vocab_size() const noexcept { return impl_->pieces; }
int tokenizer::bos_id() const noexcept { return impl_->bos; }
int tokenizer::eos_id() const noexcept { return impl_->eos; }

expected<std::vector<int>> tokenizer::encode(const std::string& text) const {
  std::vector<int> ids(text.size() * 4 + 8);  // byte fallback: at most one id per byte, plus the prefix
  char why[512] = {0};
  const long n = api().encode(impl_->sp, text.data(), text.size(), ids.data(), ids.size(), why, sizeof why);
  if (n < 0) return error{errc::invalid_argument, "tokenizer '" + path_ + "': " + why};
  if (static_cast<std::size_t>(n) > ids.size()) {
    ids.resize(static_cast<std::size_t>(n));
    api().encode(impl_->sp, text.data(), text.size(), ids.data(), ids.size(), why, sizeof why);
  }
  ids.resize(static_cast<std::size_t>(n));
  return ids;
}

std::string tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<int> known;
  known.reserve(ids.size());
  for (int id : ids)
    if (id >= 0 && id < vocab_size()) known.push_back(id);
  std::string text(known.size() * 16 + 16, '\0');
  long n = api().decode(impl_->sp, known.data(), known.size(), text.data(), text.size());
  if (n < 0) return {};
  if (static_cast<std::size_t>(n) > text.size()) {
    text.resize(static_cast<std::size_t>(n));
    n = api().decode(impl_->sp, known.data(), known.size(), text.data(), text.size());
  }
  text.resize(static_cast<std::size_t>(std::max(0L, n)));
  return text;
}

expected<prompt_layout> tokenizer::build_prompt(const std::string& prompt_template, const std::string& question,
                                                int image_token, int image_tokens) const {
  static const std::string marker = "<image>", slot = "{question}";
  std::string text = prompt_template;
  const auto q = text.find(slot);
  if (q == std::string::npos)
    return error{errc::invalid_config, "prompt template '" + prompt_template + "' has no {question}"};
  text.replace(q, slot.size(), question);
  const auto first = text.find(marker);
  if (first != std::string::npos && text.find(marker, first + 1) != std::string::npos)
    return error{errc::invalid_config, "prompt has more than one <image> (the question may not contain one)"};
  if (first == std::string::npos && image_tokens > 0)
    return error{errc::invalid_config, "prompt template '" + prompt_template + "' has no <image> for the frame"};
  prompt_layout out;
  if (bos_id() >= 0) out.ids.push_back(bos_id());
  auto append = [&](const std::string& segment) -> status {
    if (segment.empty()) return {};
    auto ids = encode(segment);
    if (!ids) return ids.err();
    out.ids.insert(out.ids.end(), ids->begin(), ids->end());
    return {};
  };
  if (auto st = append(text.substr(0, first)); !st) return st.err();
  out.image_begin = static_cast<int>(out.ids.size());
  if (first != std::string::npos) {
    out.ids.insert(out.ids.end(), static_cast<std::size_t>(image_tokens), image_token);
    out.image_count = image_tokens;
    if (auto st = append(text.substr(first + marker.size())); !st) return st.err();
  }
  return out;
}

}  // namespace vlcache
