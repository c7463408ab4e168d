// A C interface to sentencepiece, built as a module that tokenizer.cpp loads
// with dlopen(RTLD_LOCAL | RTLD_DEEPBIND).
//
// Why: Debian's libsentencepiece.so.0 carries its own protobuf-lite and
// exports its symbols; linked into a program that also loads LibTorch's
// libprotobuf.so.32, the two copies interpose and libprotobuf's static
// initialisers crash before main(). Loaded locally, sentencepiece binds to
// its own copy and nothing of it enters the global symbol scope.

#include <sentencepiece_processor.h>

#include <cstring>
#include <string>
#include <vector>

namespace {
void set_error(char* err, std::size_t cap, const std::string& what) {
  if (err == nullptr || cap == 0) return;
  std::strncpy(err, what.c_str(), cap - 1);
  err[cap - 1] = '\0';
}
}  // namespace

extern "C" {

void* vlcache_spm_load(const char* path, char* err, std::size_t cap) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  if (auto st = sp->Load(path); !st.ok()) {
    set_error(err, cap, st.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

void vlcache_spm_free(void* sp) { delete static_cast<sentencepiece::SentencePieceProcessor*>(sp); }

int vlcache_spm_info(void* sp, int what) {
  auto* p = static_cast<sentencepiece::SentencePieceProcessor*>(sp);
  switch (what) {
    case 0: return p->GetPieceSize();
    case 1: return p->bos_id();
    case 2: return p->eos_id();
    default: return -1;
  }
}

/// Encodes `text`; returns the id count (at most `cap` written to `ids`), or -1 with `err` set.
long vlcache_spm_encode(void* sp, const char* text, std::size_t len, int* ids, std::size_t cap, char* err,
                        std::size_t err_cap) {
  std::vector<int> out;
  auto st = static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Encode(std::string(text, len), &out);
  if (!st.ok()) {
    set_error(err, err_cap, st.ToString());
    return -1;
  }
  for (std::size_t i = 0; i < out.size() && i < cap; ++i) ids[i] = out[i];
  return static_cast<long>(out.size());
}

/// Decodes ids; returns the text length (at most `cap` bytes written), or -1.
long vlcache_spm_decode(void* sp, const int* ids, std::size_t n, char* text, std::size_t cap) {
  std::string out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Decode(std::vector<int>(ids, ids + n), &out).ok())
    return -1;
  std::memcpy(text, out.data(), std::min(cap, out.size()));
  return static_cast<long>(out.size());
}

}  // extern "C"
